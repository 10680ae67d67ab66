package transport

import (
	"context"
	"errors"
	"fmt"
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

// Without a connection Go dials from a goroutine of its own, so it must copy the payload
// before returning; the call is made once the dial ends, or done gets the dial's failure.
func TestGoCallWithoutAConnectionDialsAndCopiesThePayload(t *testing.T) {
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
