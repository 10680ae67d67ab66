package node

import (
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
)

// A coordinator's clock observes the newest timestamp of a row it reads, so that the write
// it timestamps next (a DEL, an HSET, a leader's command) lands above what it read, even
// when the row was written from a clock far ahead of its own.
func TestAReadMakesTheCoordinatorsClockPassTheRowsNewestTimestamp(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	clock := &nodeClock{Clock: hlc.New(func() int64 { return 1_000 })}
	c.store.clock = clock
	ahead := time.Now().Add(time.Hour).UnixMicro()
	for _, id := range testIDs {
		if err := c.handlers[id].Write([]row.Mutation{{Key: []byte("k"), Row: row.Row{Deleted: ahead - 1,
			Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: ahead}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.store.Get([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if got := clock.Now(); got <= ahead {
		t.Fatalf("after reading a row written at %d the coordinator's clock issues %d", ahead, got)
	}
	if _, _, err := c.store.Get([]byte("absent")); err != nil { // nothing to observe
		t.Fatal(err)
	}
}

// The clock's view: out of sync when most live peers are further off than the maximum;
// then writes are refused (errClockOutOfSync), the clock stamp is withheld from internode
// frames, and a FLUSHALL finds the far peers; back in sync, all of it undone.
func TestNodeClockRefusesWritesWhileOutOfSync(t *testing.T) {
	clock := &nodeClock{Clock: hlc.New(nil), maxOffset: 500 * time.Millisecond}
	clock.Now()
	if clock.writable() != nil || clock.Last() == 0 {
		t.Fatal("a clock never checked refuses writes or withholds its stamp")
	}
	s := time.Second
	v, changed := clock.check(map[ring.NodeID]time.Duration{"a": 3 * s, "b": 3 * s})
	if !v.outOfSync || !changed {
		t.Fatalf("both peers 3 s ahead: %+v, changed %v", v, changed)
	}
	if err := clock.writable(); !errors.Is(err, errClockOutOfSync) {
		t.Fatalf("writable = %v while out of sync", err)
	}
	if clock.Last() != 0 {
		t.Fatal("an out-of-sync clock still stamps frames")
	}
	if got := clock.beyond([]ring.NodeID{"a", "b", "c"}); len(got) != 2 {
		t.Fatalf("beyond = %v, want a and b", got)
	}
	if _, changed := clock.check(map[ring.NodeID]time.Duration{"a": 3 * s, "b": 0}); !changed || clock.writable() != nil {
		t.Fatal("one peer of two far: that peer is the odd one, and this node writes again")
	}
	if got := clock.beyond([]ring.NodeID{"a", "b"}); len(got) != 1 || got[0] != "a" {
		t.Fatalf("beyond = %v, want a", got)
	}
	var none *nodeClock // a store without a clock writes, and observes nothing
	if none.writable() != nil || none.beyond([]ring.NodeID{"a"}) != nil {
		t.Fatal("a nil clock refuses")
	}
	none.observe(5)
}

// Only live members other than the node itself count, and only those it has estimates of.
func TestLiveOffsetsKeepTheLiveMembersEstimated(t *testing.T) {
	est := map[string]transport.Offset{"self": {Offset: time.Hour}, "up": {Offset: time.Second},
		"down": {Offset: time.Hour}, "removed": {Offset: time.Hour}}
	got := liveOffsets("self", []cluster.Member{
		{ID: "self", Up: true}, {ID: "up", Up: true}, {ID: "down"}, {ID: "removed", Up: true, Status: cluster.Removed},
		{ID: "unknown", Up: true},
	}, est)
	if len(got) != 1 || got["up"] != time.Second {
		t.Fatalf("liveOffsets = %v, want only up's", got)
	}
}
