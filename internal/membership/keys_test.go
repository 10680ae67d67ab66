package membership

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/ring"
)

func startKeyed(t *testing.T, id string, keys [][]byte) *Gossip {
	t.Helper()
	g, err := Start(Config{Self: cluster.Member{ID: ring.NodeID(id), Host: "h-" + id, Rack: "r1",
		Status: cluster.Normal, Tokens: []ring.Token{ring.Token(len(id) * 10)}}, BindAddr: "127.0.0.1:0", Fast: true, Keys: keys}, cluster.NewView())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Shutdown() })
	return g
}

func key(t *testing.T) []byte {
	t.Helper()
	k, err := base64.StdEncoding.DecodeString(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestGossipWithoutTheKeyIsIgnored(t *testing.T) {
	k := key(t)
	a := startKeyed(t, "a", [][]byte{k})
	b := startKeyed(t, "b", [][]byte{k})
	if _, err := b.Join([]string{a.Addr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a sees b", func() bool { return sees(a, "b", cluster.Normal, true) })

	plain := startKeyed(t, "c", nil)
	if _, err := plain.Join([]string{a.Addr()}); err == nil {
		t.Fatal("a node without gossip encryption joined an encrypted cluster")
	}
	other := startKeyed(t, "dd", [][]byte{key(t)})
	if _, err := other.Join([]string{a.Addr()}); err == nil {
		t.Fatal("a node with another key joined")
	}
	for _, id := range []string{"c", "dd"} {
		for _, g := range []*Gossip{a, b} {
			for _, m := range g.Members() {
				if m.ID == ring.NodeID(id) {
					t.Fatalf("%s learned of %s, which lacks the key", g.self.ID, id)
				}
			}
		}
	}
}

// TestGossipKeyRollsOnARunningCluster follows the three steps of keys.go: add, use, drop.
// After the roll, a node holding only the new key joins, and one holding only the old
// key is refused.
func TestGossipKeyRollsOnARunningCluster(t *testing.T) {
	oldKey, newKey := key(t), key(t)
	nodes := []*Gossip{startKeyed(t, "a", [][]byte{oldKey}), startKeyed(t, "b", [][]byte{oldKey}), startKeyed(t, "c", [][]byte{oldKey})}
	for _, g := range nodes[1:] {
		if _, err := g.Join([]string{nodes[0].Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	allUp := func(what string) {
		for _, g := range nodes {
			for _, id := range []string{"a", "b", "c"} {
				eventually(t, what+": "+string(g.self.ID)+" sees "+id+" up", func() bool { return sees(g, id, cluster.Normal, true) })
			}
		}
	}
	allUp("before")
	for _, step := range [][][]byte{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		for _, g := range nodes {
			if err := g.SetKeys(step); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A node marked down for a moment would come back: wait for a few probe rounds.
	nodes[0].Update(func(m *cluster.Member) { m.Rack = "r2" })
	for _, g := range nodes {
		eventually(t, "an update after the roll spreads", func() bool {
			for _, m := range g.Members() {
				if m.ID == "a" {
					return m.Rack == "r2"
				}
			}
			return false
		})
	}
	allUp("after the roll")

	if _, err := startKeyed(t, "old", [][]byte{oldKey}).Join([]string{nodes[1].Addr()}); err == nil {
		t.Fatal("a node with only the dropped key joined")
	}
	late := startKeyed(t, "late", [][]byte{newKey})
	if _, err := late.Join([]string{nodes[2].Addr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a sees the late node", func() bool { return sees(nodes[0], "late", cluster.Normal, true) })
}

func TestParseKeyring(t *testing.T) {
	k1, k2 := NewKey(), NewKey()
	keys, err := ParseKeyring([]byte("# primary first\n" + k1 + "\n\n  " + k2 + "  \n"))
	if err != nil || len(keys) != 2 || base64.StdEncoding.EncodeToString(keys[0]) != k1 {
		t.Fatalf("keys %d, %v", len(keys), err)
	}
	for _, bad := range []string{"", "# only a comment\n", "not*base64\n", base64.StdEncoding.EncodeToString([]byte("short")) + "\n", k1 + "\n" + k1 + "\n"} {
		if _, err := ParseKeyring([]byte(bad)); !errors.Is(err, ErrKeyring) {
			t.Errorf("%q: %v, want ErrKeyring", strings.TrimSpace(bad), err)
		}
	}
	if err := (&Gossip{}).SetKeys([][]byte{keys[0]}); !errors.Is(err, ErrKeyring) {
		t.Errorf("SetKeys on a node without a keyring: %v", err)
	}
}
