package transport

import "testing"

// A pool keeps one client per peer, replaces it when the peer's address changes, and
// keeps its counts when it does.
func TestPoolReplacesAPeersClientWhenItMoves(t *testing.T) {
	p := NewPool(ClientConfig{})
	defer p.Close()
	a, err := p.Get("n1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Get("n1", "127.0.0.1:1"); again != a {
		t.Fatal("a second Get made a second client for the same peer and address")
	}
	a.counts.frames.Add(3)
	moved, err := p.Get("n1", "127.0.0.1:2")
	if err != nil || moved == a || moved.Addr() != "127.0.0.1:2" {
		t.Fatalf("after the peer moved: %v %v", moved, err)
	}
	if s := p.Stats(); s.FramesWritten != 3 {
		t.Fatalf("frames %d after the client was replaced, want the old client's 3", s.FramesWritten)
	}
}
