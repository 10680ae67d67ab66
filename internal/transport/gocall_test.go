package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type goResult struct {
	i    int
	resp []byte
	err  error
}

// Go's calls share the connection with Call's and each gets its own response, on one
// channel, without a goroutine per call.
func TestGoCallsGetTheirOwnResponses(t *testing.T) {
	ts := startServer(t, echo, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 500
	results := make(chan goResult, n)
	for i := range n {
		req := fmt.Appendf(nil, "go call %d", i)
		c.Go(ctx, uint16(i), req, func(resp []byte, err error) { results <- goResult{i, resp, err} })
	}
	resp, err := c.Call(ctx, 7, []byte("sync"))
	wantEcho(t, 7, []byte("sync"), resp, err)
	for range n {
		r := <-results
		wantEcho(t, uint16(r.i), fmt.Appendf(nil, "go call %d", r.i), r.resp, r.err)
	}
	// With nothing pending the sweeper goes back to sleep: no Go call is left counted.
	cn := c.cur.Load()
	cn.mu.Lock()
	left := cn.goCalls
	cn.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d Go calls still counted as pending after all were answered", left)
	}
}

// A peer that never answers (its handler ignores the deadline) must not keep a Go call,
// or its in-flight slot, forever: done gets a deadline error soon after the deadline,
// and the slot serves the next call.
func TestGoCallToAHungPeerFailsAtItsDeadlineAndFreesItsSlot(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := HandlerFunc(func(_ context.Context, method uint16, p []byte) ([]byte, error) {
		if method == 1 {
			<-release
		}
		return echo(context.Background(), method, p)
	})
	ts := startServer(t, hang, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{MaxInFlight: 1, QueueWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := make(chan error, 1)
	c.Go(ctx, 1, []byte("hangs"), func(_ []byte, err error) { got <- err })
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want a deadline error", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("failed after %v, before its deadline", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done was not called after the deadline")
	}
	resp, err := c.Call(context.Background(), 2, []byte("next"))
	wantEcho(t, 2, []byte("next"), resp, err)
}

func TestGoCallFailsWhenTheConnectionIsLost(t *testing.T) {
	release := make(chan struct{})
	hang := HandlerFunc(func(context.Context, uint16, []byte) ([]byte, error) { <-release; return nil, nil })
	ts := startServer(t, hang, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	c.Go(ctx, 1, nil, func(_ []byte, err error) { got <- err })
	time.Sleep(50 * time.Millisecond) // the request is out
	c.Close()
	close(release)
	select {
	case err := <-got:
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("got %v, want ErrConnectionLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done was not called when the connection went away")
	}
}

func TestGoCallNeedsADeadline(t *testing.T) {
	ts := startServer(t, echo, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	got := make(chan error, 1)
	c.Go(context.Background(), 1, nil, func(_ []byte, err error) { got <- err })
	if err := <-got; err == nil {
		t.Fatal("a Go call without a deadline was accepted")
	}
}

// Without a connection Go does not wait for the dial: the call is made once the dial
// ends, or done gets the dial's failure.
func TestGoCallDialsWithoutBlockingTheCaller(t *testing.T) {
	ts := startServer(t, echo, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make(chan goResult, 1)
	req := []byte("first")
	c.Go(ctx, 3, req, func(resp []byte, err error) { results <- goResult{3, resp, err} })
	req[0] = 'X' // Go must not keep the caller's buffer past its return
	r := <-results
	wantEcho(t, 3, []byte("first"), r.resp, r.err)

	ln := listenLoopback(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	dead := newClient(t, addr, ClientConfig{})
	got := make(chan error, 1)
	dead.Go(ctx, 1, nil, func(_ []byte, err error) { got <- err })
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("a call to a closed port succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done was not called for a peer that refuses connections")
	}
}

// fastEcho answers method 1 on the reader (TryHandle), fails method 3 there, panics on
// method 4 there, and leaves everything else to Handle.
type fastEcho struct{ fast, slow atomic.Int32 }

func (h *fastEcho) TryHandle(method uint16, p []byte) ([]byte, bool, error) {
	switch method {
	case 1:
		h.fast.Add(1)
		resp, err := echo(context.Background(), method, p)
		return resp, true, err
	case 3:
		return nil, true, errors.New("fast failure")
	case 4:
		panic("fast panic")
	}
	return nil, false, nil
}

func (h *fastEcho) Handle(ctx context.Context, method uint16, p []byte) ([]byte, error) {
	h.slow.Add(1)
	return echo(ctx, method, p)
}

func TestFastHandlerAnswersOnTheReaderAndPassesTheRestOn(t *testing.T) {
	h := &fastEcho{}
	ts := startServer(t, h, ServerConfig{})
	c := newClient(t, ts.addr, ClientConfig{})
	ctx := context.Background()
	for i := range 50 {
		req := fmt.Appendf(nil, "req %d", i)
		resp, err := c.Call(ctx, 1, req)
		wantEcho(t, 1, req, resp, err)
		resp, err = c.Call(ctx, 2, req)
		wantEcho(t, 2, req, resp, err)
	}
	if h.fast.Load() != 50 || h.slow.Load() != 50 {
		t.Fatalf("fast path took %d, Handle %d; want 50 each", h.fast.Load(), h.slow.Load())
	}
	var re *RemoteError
	if _, err := c.Call(ctx, 3, nil); !errors.As(err, &re) || re.Code != CodeHandlerError {
		t.Fatalf("a fast-path error: %v", err)
	}
	if _, err := c.Call(ctx, 4, nil); !errors.As(err, &re) || re.Code != CodePanic {
		t.Fatalf("a fast-path panic: %v", err)
	}
	resp, err := c.Call(ctx, 1, []byte("still serving"))
	wantEcho(t, 1, []byte("still serving"), resp, err)
}
