package node

import (
	"context"
	"strings"
	"testing"
)

// A node whose data directory holds a ring it joined by gossip (--ring-source=gossip)
// refuses to start following the metadata log: alone, it would bootstrap a cluster of its
// own, or register as a new node, while its data belongs to its old cluster's ring.
func TestGossipRingDataRefusesTheLog(t *testing.T) {
	c := clusterConfig(t, "h1", "")
	c.RingSource = "gossip"
	n, err := Start(c, quiet())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a one-node gossip ring", func() bool { return ready(n, 1) })
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.RingSource = "log"
	if n, err := Start(c, quiet()); err == nil {
		n.Shutdown(context.Background())
		t.Fatal("a gossip node's data directory started under the metadata log")
	} else if !strings.Contains(err.Error(), "--ring-source=gossip") {
		t.Fatalf("the refusal does not say how to start it: %v", err)
	}
	c.RingSource = "gossip"
	n, err = Start(c, quiet())
	if err != nil {
		t.Fatalf("it no longer starts with --ring-source=gossip: %v", err)
	}
	n.Shutdown(context.Background())
}
