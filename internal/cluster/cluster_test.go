package cluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

func member(id string, version uint64, status Status, tokens ...ring.Token) Member {
	return Member{ID: ring.NodeID(id), Host: "h-" + id, Rack: "r1", Status: status, Version: version, Tokens: tokens}
}

func TestViewsConvergeWhateverOrderGossipBrings(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 100 {
		// Each member publishes a history of entries; gossip delivers any of them, in any
		// order, possibly more than once, to each view.
		var heard []Member
		for id := range 5 {
			statuses := []Status{Joining, Normal, Leaving, Removed}
			for v := range 1 + rng.IntN(4) {
				heard = append(heard, member(fmt.Sprintf("n%d", id), uint64(v+1), statuses[v], ring.Token(id*100+v)))
			}
		}
		a, b := NewView(), NewView()
		for _, i := range rng.Perm(len(heard)) {
			a.Merge(heard[i])
		}
		for _, i := range rng.Perm(len(heard)) {
			b.Merge(heard[i])
			b.Merge(heard[rng.IntN(len(heard))]) // duplicates and stale repeats
		}
		if !reflect.DeepEqual(a.Members(), b.Members()) {
			t.Fatalf("views diverged:\n%v\n%v", a.Members(), b.Members())
		}
		for _, m := range a.Members() {
			for _, h := range heard {
				if h.ID == m.ID && h.Version > m.Version {
					t.Fatalf("%s kept version %d, a newer %d was heard", m.ID, m.Version, h.Version)
				}
			}
		}
	}
}

func TestRingHoldsNormalAndLeavingMembersOnly(t *testing.T) {
	v := NewView()
	v.Merge(member("a", 1, Normal, 10, 20))
	v.Merge(member("b", 1, Joining, 30))
	v.Merge(member("c", 1, Leaving, 40))
	v.Merge(member("d", 1, Removed, 50))
	r, err := v.Ring()
	if err != nil {
		t.Fatal(err)
	}
	own := r.Ownership()
	if _, ok := own["b"]; ok || len(own) != 2 || own["a"] == 0 || own["c"] == 0 {
		t.Errorf("ring owners %v, want a and c", own)
	}
	if _, err := NewView().Ring(); err == nil {
		t.Error("a ring from no members")
	}
	// Two members claiming one token: the lower ID keeps it on every node.
	v.Merge(member("e", 1, Normal, 10, 60))
	r, err = v.Ring()
	if err != nil {
		t.Fatalf("duplicate token: %v", err)
	}
	if got := r.Primary(10); got != "a" {
		t.Errorf("token 10 owned by %s, want a (the lower ID)", got)
	}
	// The other's token moves just past it: e stays on the ring, owning token 11.
	if got := r.Primary(11); got != "e" {
		t.Errorf("token 11 owned by %s, want e (its claimed token moved there)", got)
	}
	// A member whose every token was claimed (two nodes joining at once, computing their
	// tokens from the same ring) is still on the ring, and in replica sets.
	v.Merge(member("f", 1, Normal, 10, 60))
	if r, err = v.Ring(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Ownership()["f"]; !ok {
		t.Fatalf("f, whose tokens a and e hold, is not on the ring: %v", r.Ownership())
	}
	if got := r.Primary(12); got != "f" {
		t.Errorf("token 12 owned by %s, want f (10 taken by a, 11 by e's moved token)", got)
	}
}

func TestUpOpinionIsLocalAndSurvivesMerges(t *testing.T) {
	v := NewView()
	v.Merge(member("a", 1, Normal, 1))
	if !v.SetUp("a", true) || v.SetUp("a", true) {
		t.Fatal("SetUp does not report changes")
	}
	v.Merge(member("a", 2, Leaving, 1))
	if m, _ := v.Member("a"); !m.Up || m.Status != Leaving {
		t.Errorf("after a newer entry: %+v", m)
	}
	w := NewView()
	if changed, err := w.MergeEncoded(v.Marshal()); !changed || err != nil {
		t.Fatalf("encoded merge: %v %v", changed, err)
	}
	if m, _ := w.Member("a"); m.Up || m.Version != 2 || len(m.Tokens) != 1 {
		t.Errorf("decoded entry %+v: Up must not travel", m)
	}
	if _, err := w.MergeEncoded([]byte("{")); err == nil {
		t.Error("malformed view accepted")
	}
}
