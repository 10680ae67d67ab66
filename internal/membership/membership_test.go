package membership

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/ring"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, id string, view *cluster.View, tokens ...ring.Token) *Gossip {
	t.Helper()
	g, err := Start(Config{Self: cluster.Member{ID: ring.NodeID(id), Host: "h-" + id, Rack: "r1",
		Status: cluster.Normal, Tokens: tokens}, BindAddr: "127.0.0.1:0", Fast: true}, view)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// eventually polls cond until it holds or a generous deadline passes; it waits for
// gossip to converge, it does not time it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sees reports whether g's view holds id with the given status and liveness.
func sees(g *Gossip, id string, status cluster.Status, up bool) bool {
	for _, m := range g.Members() {
		if m.ID == ring.NodeID(id) {
			return m.Status == status && m.Up == up
		}
	}
	return false
}

func TestMembersJoinSpreadChangesAndDetectFailures(t *testing.T) {
	a := start(t, "a", cluster.NewView(), 10)
	b := start(t, "b", cluster.NewView(), 20)
	c := start(t, "c", cluster.NewView(), 30)
	defer a.Shutdown()
	defer b.Shutdown()
	for _, g := range []*Gossip{b, c} {
		if _, err := g.Join([]string{a.Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	all := []*Gossip{a, b, c}
	for _, g := range all {
		for _, id := range []string{"a", "b", "c"} {
			eventually(t, fmt.Sprintf("%s sees %s", g.self.ID, id), func() bool { return sees(g, id, cluster.Normal, true) })
		}
	}
	r, err := a.Ring()
	if err != nil || len(r.Ownership()) != 3 {
		t.Fatalf("ring from gossip: %v", err)
	}

	c.Update(func(m *cluster.Member) { m.Status = cluster.Leaving })
	for _, g := range []*Gossip{a, b} {
		eventually(t, "the leaving status spreads", func() bool { return sees(g, "c", cluster.Leaving, true) })
	}

	// c dies without a word: the failure detectors mark it down, its entry stays.
	saved := c.Snapshot()
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Gossip{a, b} {
		eventually(t, "c is marked down", func() bool { return sees(g, "c", cluster.Leaving, false) })
	}

	// c restarts from its saved view on a new port and rejoins: it is back up, and its
	// fresh entry wins over the old one everywhere.
	view := cluster.NewView()
	if _, err := view.MergeEncoded(saved); err != nil {
		t.Fatal(err)
	}
	c2 := start(t, "c", view, 30)
	defer c2.Shutdown()
	if _, err := c2.Join([]string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Gossip{a, b} {
		eventually(t, "restarted c is up and normal", func() bool { return sees(g, "c", cluster.Normal, true) })
	}
}
