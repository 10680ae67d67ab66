package node

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// TestHandOffOnlyWhenEveryLiveMemberReadsIt: a removal hands tokens off only when every
// live normal member announces a build that reads entry version 2 (a node of an older
// build would stop at an entry it cannot decode); a dead member, or one not in the ring,
// does not count. Announced free space is passed on; none announced is no limit.
func TestHandOffOnlyWhenEveryLiveMemberReadsIt(t *testing.T) {
	st := &meta.State{Members: []meta.Member{{ID: "n1", State: meta.Normal}, {ID: "n2", State: meta.Normal},
		{ID: "n3", State: meta.Normal}, {ID: "n4", State: meta.Joining}}}
	v := meta.EntryVersion
	cases := []struct {
		what    string
		members []cluster.Member
		want    bool
	}{
		{"all new", []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true, MetaVersion: v}, {ID: "n3", MetaVersion: 0}}, true},
		{"an old live member", []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true}, {ID: "n3"}}, false},
		{"an old joiner does not count", []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true, MetaVersion: v}, {ID: "n4", Up: true}}, true},
		{"a member that reads handoffs but not users", []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true, MetaVersion: meta.EntryVersionHandoffs}}, true},
	}
	for _, c := range cases {
		if got, _ := handOffConfig(st, c.members); got != c.want {
			t.Errorf("%s: hand off %v, want %v", c.what, got, c.want)
		}
	}
	_, free := handOffConfig(st, []cluster.Member{{ID: "n1", Free: 5 << 30}, {ID: "n2"}})
	if len(free) != 1 || free["n1"] != 5<<30 {
		t.Errorf("free %v, want n1's 5 GiB only", free)
	}
}

// TestMergeSourcesNeverWaitForARemovedNode: a transfer into a range none of whose old
// replicas stays in its new set (handed-off tokens can give a range new replicas only) is
// merged from every old replica but the one the change removes, which will never answer;
// where some stay, from those that stay.
func TestMergeSourcesNeverWaitForARemovedNode(t *testing.T) {
	rg := move.Range{Start: 0, End: 10}
	c := &meta.Change{Removes: []ring.NodeID{"x"}, Ranges: []meta.RangeState{{Range: rg, Old: []ring.NodeID{"x", "a", "b"}, New: []ring.NodeID{"c", "d", "e"}}}}
	if got := mergeSources(c, move.Transfer{Range: rg, Source: "a", Destination: "c"}); !slices.Equal(got, []ring.NodeID{"a", "b"}) {
		t.Errorf("none stays: merged from %v, want [a b]", got)
	}
	c.Ranges[0].New = []ring.NodeID{"c", "a", "b"}
	if got := mergeSources(c, move.Transfer{Range: rg, Source: "a", Destination: "c"}); !slices.Equal(got, []ring.NodeID{"a", "b"}) {
		t.Errorf("two stay: merged from %v, want [a b]", got)
	}
	c.Ranges[0].New = []ring.NodeID{"c", "d", "b"}
	if got := mergeSources(c, move.Transfer{Range: rg, Source: "b", Destination: "c"}); !slices.Equal(got, []ring.NodeID{"b"}) {
		t.Errorf("one stays: merged from %v, want [b]", got)
	}
}

// TestSourceWeightsCountWhatEachSourceStillSends: a done transfer counts for nobody; one
// from its leaving, live source for that source; any other for each replica it is merged
// from.
func TestSourceWeightsCountWhatEachSourceStillSends(t *testing.T) {
	r1, r2, r3 := move.Range{Start: 0, End: 10}, move.Range{Start: 10, End: 20}, move.Range{Start: 20, End: 30}
	c := &meta.Change{Removes: []ring.NodeID{"x"},
		Ranges: []meta.RangeState{
			{Range: r1, Old: []ring.NodeID{"x", "a", "b"}, New: []ring.NodeID{"c", "a", "b"}},
			{Range: r2, Old: []ring.NodeID{"a", "d", "b"}, New: []ring.NodeID{"a", "c", "b"}},
			{Range: r3, Old: []ring.NodeID{"b", "x", "a"}, New: []ring.NodeID{"b", "d", "a"}}},
		Transfers: []move.Transfer{
			{Range: r1, Source: "a", Destination: "c", Bytes: 100},
			{Range: r2, Source: "d", Destination: "c", Bytes: 30, Leaving: true},
			{Range: r3, Source: "b", Destination: "d", Bytes: 7}},
		Done: []bool{false, false, true}}
	got := sourceWeights(c, map[ring.NodeID]bool{"x": true})
	want := map[ring.NodeID]int64{"a": 100, "b": 100, "d": 30}
	if len(got) != len(want) || got["a"] != 100 || got["b"] != 100 || got["d"] != 30 {
		t.Fatalf("weights %v, want %v", got, want)
	}
}
