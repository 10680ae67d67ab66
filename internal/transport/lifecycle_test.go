package transport

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gate is a handler that blocks every request until released; arrived receives one token
// per request that reached it.
type gate struct {
	arrived chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{arrived: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (g *gate) Handle(ctx context.Context, _ uint16, p []byte) ([]byte, error) {
	g.arrived <- struct{}{}
	select {
	case <-g.release:
		return []byte("done"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestOverloadWhenInFlightLimitReached: with MaxInFlight calls outstanding, the next call
// waits QueueWait and fails with ErrOverloaded; the outstanding ones still complete.
func TestOverloadWhenInFlightLimitReached(t *testing.T) {
	g := newGate()
	ts := startServer(t, g, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{MaxInFlight: 2, QueueWait: 10 * time.Millisecond})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Call(context.Background(), 1, nil)
			errs <- err
		}()
	}
	<-g.arrived
	<-g.arrived
	if _, err := c.Call(context.Background(), 1, nil); !errors.Is(err, ErrOverloaded) {
		t.Errorf("third call = %v, want ErrOverloaded", err)
	}
	close(g.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("outstanding call = %v", err)
		}
	}
}

// TestOverloadWhenPeerStopsReading: a server at its in-flight bound stops reading, TCP
// fills up, the client's writer blocks and its tiny send queue fills. Every call ends,
// with a response, ErrOverloaded or its context's error; none hangs.
func TestOverloadWhenPeerStopsReading(t *testing.T) {
	g := newGate()
	ts := startServer(t, g, ServerConfig{MaxInFlight: 1})
	c := newClient(t, ts.addr, ClientConfig{SendQueueDepth: 1, QueueWait: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// 128 × 256 KiB is far more than loopback socket buffers hold.
	payload := make([]byte, 256<<10)
	var overloaded, ok, other atomic.Int32
	var wg sync.WaitGroup
	for range 128 {
		wg.Go(func() {
			_, err := c.Call(ctx, 1, payload)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrOverloaded):
				overloaded.Add(1)
			default:
				other.Add(1)
				t.Errorf("Call = %v, want success or ErrOverloaded", err)
			}
		})
	}
	<-g.arrived
	// Wait for the send queue to overflow.
	for overloaded.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("no call was rejected while the server held back")
		}
		time.Sleep(time.Millisecond)
	}
	close(g.release)
	wg.Wait()
	t.Logf("%d answered, %d overloaded", ok.Load(), overloaded.Load())
	if ok.Load() == 0 {
		t.Error("no call was answered once the server resumed")
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	g := newGate()
	ts := startServer(t, g, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	type res struct {
		resp []byte
		err  error
	}
	done := make(chan res, 1)
	go func() {
		resp, err := c.Call(context.Background(), 1, nil)
		done <- res{resp, err}
	}()
	<-g.arrived
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	// Serve returns once the listener is closed; new connections are then refused.
	if err := <-ts.served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve = %v, want ErrClosed", err)
	}
	ts.served <- ErrClosed // for the cleanup
	if nc, err := net.Dial("tcp", ts.addr); err == nil {
		nc.Close()
		t.Error("a shutting-down server accepted a connection")
	}
	close(g.release)
	if r := <-done; r.err != nil || string(r.resp) != "done" {
		t.Errorf("in-flight call = %q, %v; want it answered", r.resp, r.err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

func TestShutdownPastItsContextCancelsHandlers(t *testing.T) {
	g := newGate()
	ts := startServer(t, g, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), 1, nil)
		done <- err
	}()
	<-g.arrived
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if err := <-done; !errors.Is(err, ErrConnectionLost) {
		t.Errorf("in-flight call = %v, want ErrConnectionLost", err)
	}
}

func TestClientCloseFailsOutstandingCalls(t *testing.T) {
	g := newGate()
	ts := startServer(t, g, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), 1, nil)
		done <- err
	}()
	<-g.arrived
	c.Close()
	if err := <-done; !errors.Is(err, ErrConnectionLost) || !errors.Is(err, ErrClosed) {
		t.Errorf("outstanding call = %v, want ErrConnectionLost wrapping ErrClosed", err)
	}
	if _, err := c.Call(context.Background(), 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close = %v, want ErrClosed", err)
	}
}

// TestUnreachablePeerFailsFastDuringBackoff: after a failed dial, calls fail at once
// without dialing until the backoff has passed.
func TestUnreachablePeerFailsFastDuringBackoff(t *testing.T) {
	var dials atomic.Int32
	refuse := func(context.Context, string, string) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("connection refused")
	}
	c := newClient(t, "127.0.0.1:1", ClientConfig{Dial: refuse, BackoffBase: time.Hour, BackoffMax: time.Hour})
	for range 3 {
		if _, err := c.Call(context.Background(), 1, nil); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Call = %v, want ErrUnreachable", err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialed %d times during one backoff, want 1", n)
	}
}

// TestBackoffDoublesWithJitterUpToTheCap checks the pause after n consecutive failures:
// uniform in [d/2, d] for d = base·2^(n-1) capped at max, drawn from the injected rand.
func TestBackoffDoublesWithJitterUpToTheCap(t *testing.T) {
	base, maxB := 10*time.Millisecond, time.Second
	c, err := NewClient("127.0.0.1:1", ClientConfig{BackoffBase: base, BackoffMax: maxB,
		Rand: rand.New(rand.NewPCG(testSeed(t), 0))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for n := 1; n <= 70; n++ {
		before := time.Now()
		c.backOff(errors.New("x"))
		got := c.nextDial.Sub(before)
		d := maxB
		if n < 20 {
			d = min(base<<(n-1), maxB)
		}
		// got also includes the few instructions between before and the draw.
		if got < d/2 || got > d+time.Second/10 {
			t.Fatalf("failure %d: pause %v, want in [%v, %v]", n, got, d/2, d)
		}
	}
}

// TestBrokenNewConnectionBacksOff: a peer that accepts and at once drops connections is
// not redialed in a tight loop, since the connection never carried a response.
func TestBrokenNewConnectionBacksOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			nc.Close()
		}
	})
	var dials atomic.Int32
	c := newClient(t, ln.Addr().String(), ClientConfig{Dial: countingDial(&dials), BackoffBase: time.Hour, BackoffMax: time.Hour})
	if _, err := c.Call(context.Background(), 1, nil); !errors.Is(err, ErrConnectionLost) && !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Call = %v", err)
	}
	// Wait for the client to notice the close, then check it does not redial.
	for c.cur.Load() != nil {
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		if _, err := c.Call(context.Background(), 1, nil); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Call = %v, want ErrUnreachable during the backoff", err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialed %d times, want 1", n)
	}
	c.Close()
}

func TestConfigRejectsNonsense(t *testing.T) {
	for _, cfg := range []ClientConfig{
		{MaxPayloadBytes: MaxPayloadLimit + 1},
		{MaxInFlight: -1},
		{BackoffBase: time.Second, BackoffMax: time.Millisecond},
	} {
		if _, err := NewClient("x", cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("NewClient(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if _, err := NewServer(echo, ServerConfig{MaxPayloadBytes: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewServer with a negative limit = %v, want ErrConfig", err)
	}
}
