package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// quiet keeps expected warnings (malformed frames, panics) out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// testServer is a Server on a loopback port, closed when the test ends.
type testServer struct {
	*Server
	addr   string
	served chan error // Serve's result
}

func startServer(t *testing.T, h Handler, cfg ServerConfig) *testServer {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0", h, cfg)
}

func startServerAt(t *testing.T, addr string, h Handler, cfg ServerConfig) *testServer {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := NewServer(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-ts.served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return ts
}

func newClient(t *testing.T, addr string, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 20*time.Millisecond
	}
	c, err := NewClient(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo answers with the method number followed by the request payload.
var echo = HandlerFunc(func(_ context.Context, method uint16, p []byte) ([]byte, error) {
	return append(binary.BigEndian.AppendUint16(nil, method), p...), nil
})

func wantEcho(t *testing.T, method uint16, req, resp []byte, err error) {
	t.Helper()
	want := append(binary.BigEndian.AppendUint16(nil, method), req...)
	if err != nil || !bytes.Equal(resp, want) {
		t.Fatalf("call %d %.40q: got %.40q, %v; want %.40q", method, req, resp, err, want)
	}
}

// countingDial counts the connections a client opens.
func countingDial(n *atomic.Int32) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func TestConcurrentCallsShareOneConnectionAndGetTheirOwnResponses(t *testing.T) {
	ts := startServer(t, echo, ServerConfig{})
	var dials atomic.Int32
	c := newClient(t, ts.addr, ClientConfig{Dial: countingDial(&dials)})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				req := fmt.Appendf(nil, "goroutine %d call %d", g, i)
				resp, err := c.Call(context.Background(), uint16(g*1000+i), req)
				wantEcho(t, uint16(g*1000+i), req, resp, err)
			}
		})
	}
	wg.Wait()
	if n := dials.Load(); n != 1 {
		t.Errorf("the client dialed %d times, want 1", n)
	}
	// Every request and every response was written once, and the connection's hello and
	// its answer; flushes never exceed frames.
	cs, ss := c.Stats(), ts.Stats()
	if cs.FramesWritten != 32*200+1 || ss.FramesWritten != 32*200+1 {
		t.Errorf("frames written: client %d, server %d, want %d each", cs.FramesWritten, ss.FramesWritten, 32*200+1)
	}
	if cs.Flushes == 0 || cs.Flushes > cs.FramesWritten || ss.Flushes == 0 || ss.Flushes > ss.FramesWritten {
		t.Errorf("flushes: client %+v, server %+v", cs, ss)
	}
	t.Logf("frames per flush: client %.1f, server %.1f",
		float64(cs.FramesWritten)/float64(cs.Flushes), float64(ss.FramesWritten)/float64(ss.Flushes))
}

func TestDeadlineReachesTheHandler(t *testing.T) {
	type seen struct {
		deadline time.Time
		ok       bool
	}
	got := make(chan seen, 1)
	ts := startServer(t, HandlerFunc(func(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
		d, ok := ctx.Deadline()
		got <- seen{d, ok}
		return nil, nil
	}), ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})

	if _, err := c.Call(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.ok {
		t.Errorf("a call without deadline reached the handler with deadline %v", s.deadline)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.Call(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := ctx.Deadline()
	// The server's deadline is its arrival time plus the remaining time the client sent:
	// never earlier than the client's, later by the request's transit time.
	if s := <-got; !s.ok || s.deadline.Before(want) || s.deadline.After(want.Add(time.Minute)) {
		t.Errorf("handler deadline %v (set %v), client deadline %v", s.deadline, s.ok, want)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Hour)
	defer cancel()
	if _, err := c.Call(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !s.ok || time.Until(s.deadline) > MaxTimeout {
		t.Errorf("a 100 h deadline should arrive capped at MaxTimeout, got %v", time.Until(s.deadline))
	}
}

func TestDeadlineExpiresOnBothSides(t *testing.T) {
	handlerErr := make(chan error, 1)
	ts := startServer(t, HandlerFunc(func(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
		<-ctx.Done()
		handlerErr <- ctx.Err()
		return nil, ctx.Err()
	}), ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call = %v, want context.DeadlineExceeded", err)
	}
	if err := <-handlerErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("handler context ended with %v, want context.DeadlineExceeded", err)
	}
}

// TestCanceledCallDiscardsLateResponse: a handler that ignores its context answers after
// the caller gave up; the answer is dropped and the connection keeps matching responses.
func TestCanceledCallDiscardsLateResponse(t *testing.T) {
	release := make(chan struct{})
	ts := startServer(t, HandlerFunc(func(ctx context.Context, method uint16, p []byte) ([]byte, error) {
		if method == 1 {
			<-release
			return []byte("late"), nil
		}
		return echo(ctx, method, p)
	}), ServerConfig{})
	var dials atomic.Int32
	c := newClient(t, ts.addr, ClientConfig{Dial: countingDial(&dials)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Call(ctx, 1, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Call = %v, want context.Canceled", err)
	}
	close(release)
	for i := range 50 {
		req := []byte{byte(i)}
		resp, err := c.Call(context.Background(), 2, req)
		wantEcho(t, 2, req, resp, err)
	}
	if n := dials.Load(); n > 1 {
		t.Errorf("the client dialed %d times, want at most 1", n)
	}
}

// TestServerKilledMidStreamThenBack: outstanding calls fail with ErrConnectionLost when the
// server goes away; while it is away calls fail fast with ErrUnreachable; once it is back
// on the same address the client reconnects.
func TestServerKilledMidStreamThenBack(t *testing.T) {
	const calls = 8
	arrived := make(chan struct{}, calls)
	blocking := HandlerFunc(func(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
		arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := startServer(t, blocking, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{Rand: rand.New(rand.NewPCG(testSeed(t), 0))})
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := c.Call(context.Background(), 1, []byte("x"))
			errs <- err
		}()
	}
	for range calls {
		<-arrived
	}
	ts.Close()
	for range calls {
		if err := <-errs; !errors.Is(err, ErrConnectionLost) {
			t.Errorf("outstanding call ended with %v, want ErrConnectionLost", err)
		}
	}
	if _, err := c.Call(context.Background(), 2, nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("call while the server is down = %v, want ErrUnreachable", err)
	}

	ts2 := startServerAt(t, ts.addr, echo, ServerConfig{})
	var err error
	for range 1000 { // each failure waits out a backoff of at most 20 ms
		var resp []byte
		if resp, err = c.Call(context.Background(), 3, []byte("back")); err == nil {
			wantEcho(t, 3, []byte("back"), resp, err)
			break
		}
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("call after restart = %v, want ErrUnreachable until it succeeds", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the client never reconnected to %s: %v", ts2.addr, err)
	}
}

func TestOversizedPayloads(t *testing.T) {
	big := func(n int) HandlerFunc {
		return func(context.Context, uint16, []byte) ([]byte, error) { return make([]byte, n), nil }
	}
	t.Run("request over the client's limit is not sent", func(t *testing.T) {
		ts := startServer(t, echo, ServerConfig{})
		c := newClient(t, ts.addr, ClientConfig{MaxPayloadBytes: 1024})
		if _, err := c.Call(context.Background(), 1, make([]byte, 1025)); !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("Call = %v, want ErrFrameTooLarge", err)
		}
		resp, err := c.Call(context.Background(), 1, make([]byte, 1000))
		wantEcho(t, 1, make([]byte, 1000), resp, err)
	})
	t.Run("request over the server's limit is answered, then the connection closed", func(t *testing.T) {
		ts := startServer(t, echo, ServerConfig{MaxPayloadBytes: 1024})
		c := newClient(t, ts.addr, ClientConfig{})
		resp, err := c.Call(context.Background(), 1, []byte("a"))
		wantEcho(t, 1, []byte("a"), resp, err)
		_, err = c.Call(context.Background(), 1, make([]byte, 4096))
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != CodeTooLarge {
			t.Fatalf("Call = %v, want a CodeTooLarge RemoteError", err)
		}
		callUntilReconnected(t, c)
	})
	t.Run("response over the server's limit becomes an error", func(t *testing.T) {
		ts := startServer(t, big(2048), ServerConfig{MaxPayloadBytes: 1024})
		c := newClient(t, ts.addr, ClientConfig{})
		_, err := c.Call(context.Background(), 1, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != CodeTooLarge {
			t.Fatalf("Call = %v, want a CodeTooLarge RemoteError", err)
		}
	})
	t.Run("response over the client's limit closes the connection", func(t *testing.T) {
		ts := startServer(t, big(2048), ServerConfig{})
		c := newClient(t, ts.addr, ClientConfig{MaxPayloadBytes: 1024})
		_, err := c.Call(context.Background(), 1, nil)
		if !errors.Is(err, ErrConnectionLost) || !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("Call = %v, want ErrConnectionLost wrapping ErrFrameTooLarge", err)
		}
	})
}

// callUntilReconnected calls an echo server until a call succeeds, allowing the errors of
// a connection the server has just closed.
func callUntilReconnected(t *testing.T, c *Client) {
	t.Helper()
	var err error
	for range 1000 {
		var resp []byte
		if resp, err = c.Call(context.Background(), 2, []byte("b")); err == nil {
			wantEcho(t, 2, []byte("b"), resp, err)
			return
		}
		if !errors.Is(err, ErrConnectionLost) && !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Call = %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no successful call after the connection closed: %v", err)
}

// TestMalformedBytesCloseOnlyThatConnection sends garbage over raw TCP: the server closes
// that connection and keeps serving a well-behaved client.
func TestMalformedBytesCloseOnlyThatConnection(t *testing.T) {
	ts := startServer(t, echo, ServerConfig{MaxPayloadBytes: 1024})
	c := newClient(t, ts.addr, ClientConfig{})
	good := AppendFrame(nil, Frame{Type: TypeRequest, Method: 5, ID: 1, Payload: []byte("ok")})
	patch := func(off int, v ...byte) []byte {
		b := bytes.Clone(good)
		copy(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"bad version", patch(offVersion, 9)},
		{"unknown type", patch(offType, 77)},
		{"response sent to a server", patch(offType, byte(TypeResponse))},
		{"text", []byte("GET / HTTP/1.1\r\nHost: kura\r\n\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := dialRaw(t, ts.addr)
			// A good request first: the connection works until the garbage arrives.
			raw.Write(good)
			f, err := raw.dec.Next()
			if err != nil || f.Type != TypeResponse || f.ID != 1 {
				t.Fatalf("first response: %+v, %v", f, err)
			}
			raw.Write(tc.bytes)
			if f, err := raw.dec.Next(); err != io.EOF {
				t.Fatalf("after garbage the server sent %+v, %v; want the connection closed", f, err)
			}
			resp, err := c.Call(context.Background(), 6, []byte("still here"))
			wantEcho(t, 6, []byte("still here"), resp, err)
		})
	}
	t.Run("oversized request", func(t *testing.T) {
		raw := dialRaw(t, ts.addr)
		raw.Write(patch(offLength, 0, 1, 0, 0)) // 64 KiB, over the 1 KiB limit
		f, err := raw.dec.Next()
		if err != nil || f.Type != TypeError || f.ID != 1 || parseErrorPayload(f.Payload).Code != CodeTooLarge {
			t.Fatalf("want a CodeTooLarge error for request 1, got %+v, %v", f, err)
		}
		if f, err := raw.dec.Next(); err != io.EOF {
			t.Fatalf("then %+v, %v; want the connection closed", f, err)
		}
	})
}

type rawConn struct {
	net.Conn
	dec *Decoder
}

func dialRaw(t *testing.T, addr string) rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// Not a timing assertion: a bound so a server that never closes fails the test
	// instead of hanging it.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return rawConn{nc, NewDecoder(nc, DefaultMaxPayloadBytes)}
}

func TestHandlerErrorsAndPanicsBecomeRemoteErrors(t *testing.T) {
	ts := startServer(t, HandlerFunc(func(ctx context.Context, method uint16, p []byte) ([]byte, error) {
		switch method {
		case 1:
			panic("handler bug")
		case 2:
			return nil, errors.New("plain failure")
		case 3:
			return nil, fmt.Errorf("wrapped: %w", &RemoteError{Code: FirstApplicationCode + 1, Message: "not found"})
		}
		return echo(ctx, method, p)
	}), ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	for _, tc := range []struct {
		method uint16
		code   uint16
		msg    string
	}{
		{1, CodePanic, "handler bug"},
		{2, CodeHandlerError, "plain failure"},
		{3, FirstApplicationCode + 1, "not found"},
	} {
		_, err := c.Call(context.Background(), tc.method, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(re.Message, tc.msg) {
			t.Errorf("method %d: Call = %v, want remote error %d %q", tc.method, err, tc.code, tc.msg)
		}
	}
	resp, err := c.Call(context.Background(), 4, []byte("after"))
	wantEcho(t, 4, []byte("after"), resp, err)
	if err := error(&RemoteError{Code: CodeDeadlineExceeded}); !errors.Is(err, context.DeadlineExceeded) {
		t.Error("a CodeDeadlineExceeded remote error should be a context.DeadlineExceeded")
	}
}
