package transport

import (
	"context"
	"errors"
	"net"
	"testing"
)

// A pool keeps one client per peer, replaces it when the peer's address changes, and
// keeps its counts when it does.
func TestPoolReplacesAPeersClientWhenItMoves(t *testing.T) {
	p := NewPool(ClientConfig{})
	defer p.Close()
	a, err := p.Get("n1", "h1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Get("n1", "h1", "127.0.0.1:1"); again != a {
		t.Fatal("a second Get made a second client for the same peer and address")
	}
	a.counts.frames.Add(3)
	moved, err := p.Get("n1", "h1", "127.0.0.1:2")
	if err != nil || moved == a || moved.Addr() != "127.0.0.1:2" {
		t.Fatalf("after the peer moved: %v %v", moved, err)
	}
	if s := p.Stats(); s.FramesWritten != 3 {
		t.Fatalf("frames %d after the client was replaced, want the old client's 3", s.FramesWritten)
	}
}

// A pool dials each peer with the host label its caller gave, and makes a new client when
// the label changes, so that a TLS dialer checks each peer's certificate against the host
// the ring has for it.
func TestPoolDialsEachPeerWithItsHostLabel(t *testing.T) {
	refused := errors.New("refused by the test")
	dialed := make(chan string, 4)
	p := NewPool(ClientConfig{DialHost: func(host string) func(context.Context, string, string) (net.Conn, error) {
		return func(context.Context, string, string) (net.Conn, error) {
			dialed <- host
			return nil, refused
		}
	}})
	defer p.Close()
	for _, host := range []string{"h1", "h2"} {
		cl, err := p.Get("n1", host, "127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Call(context.Background(), 1, nil); !errors.Is(err, refused) {
			t.Fatalf("Call: %v, want the dialer's error", err)
		}
		if got := <-dialed; got != host {
			t.Fatalf("dialed with host %q, want %q", got, host)
		}
	}
}
