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
