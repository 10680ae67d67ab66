package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/transport"
)

// Clocks that travel (docs/design/clocks.md). Every internode frame carries the sender's
// hybrid logical clock, which the receiver observes, and its wall clock, from which each
// node estimates its peers' clock offsets (package transport); a coordinator also observes
// the newest timestamp of every row it reads. So a write that follows, through any node,
// a read or a message that saw an earlier write gets a larger timestamp, whatever the
// skew.
//
// The policy for a clock too far off is to refuse: a node whose clock is further than
// max_clock_offset from most of its live peers' (hlc.OutOfSync) timestamps nothing. It
// refuses client writes with UNAVAILABLE, hands the read-modify-write commands it would
// lead to the key's next replica, refuses to lead them for others, and sends no clock
// stamp (its wall stamp still goes, so that it notices when its clock is back). A FLUSHALL
// waits until every member's clock is within the maximum. Its peers meanwhile do not
// observe a stamp whose wall stamp proves it that far ahead (transport's MaxClockAhead),
// so a clock far ahead drags no other, even before it finds itself out of sync.

// clockCheckInterval is how often a node compares its clock with its peers'; a variable
// for tests.
var clockCheckInterval = time.Second

// codeOutOfSync is the transport error code of a leader request refused by a node whose
// clock is out of sync: the coordinator then asks the key's next replica.
const codeOutOfSync = transport.FirstApplicationCode

// errClockOutOfSync is wrapped by the refusals of a node whose clock is out of sync, and by
// a FLUSHALL's while a member's is. Nothing was written: clients get UNAVAILABLE and may
// retry through another node.
var errClockOutOfSync = errors.New("node: clocks out of sync")

// nodeClock is the node's clock with what the node knows of its peers' clocks: the
// transport.Clock of its internode connections, whose Last is withheld (0) while the
// node's own clock is out of sync, so that a clock known to be wrong does not travel.
type nodeClock struct {
	*hlc.Clock
	maxOffset time.Duration
	view      atomic.Pointer[clockView] // the last check's; nil before the first
}

// clockView is one check of the node's clock against its live peers'.
type clockView struct {
	offsets   map[ring.NodeID]time.Duration // live peers' offsets (theirs minus ours)
	outOfSync bool
	refusal   error // why writes are refused, when outOfSync
}

// Last implements transport.Clock.
func (c *nodeClock) Last() int64 {
	if c.outOfSync() {
		return 0
	}
	return c.Clock.Last()
}

func (c *nodeClock) outOfSync() bool {
	v := c.view.Load()
	return v != nil && v.outOfSync
}

// writable returns nil, or why this node refuses to timestamp writes now (wrapping
// errClockOutOfSync). A nil clock (tests that build a store alone) always writes.
func (c *nodeClock) writable() error {
	if c == nil {
		return nil
	}
	if v := c.view.Load(); v != nil && v.outOfSync {
		return v.refusal
	}
	return nil
}

// observe makes the clock issue only timestamps above ts, the newest of a row read.
func (c *nodeClock) observe(ts int64) {
	if c != nil && ts > 0 {
		c.Observe(ts)
	}
}

// beyond returns, in ID order, the members of ids whose clock this node knows to be
// further off than the maximum.
func (c *nodeClock) beyond(ids []ring.NodeID) []ring.NodeID {
	if c == nil || c.maxOffset <= 0 {
		return nil
	}
	v := c.view.Load()
	if v == nil {
		return nil
	}
	var out []ring.NodeID
	for _, id := range ids {
		if o, ok := v.offsets[id]; ok && (o > c.maxOffset || o < -c.maxOffset) {
			out = append(out, id)
		}
	}
	return out
}

// check judges the node's clock against the offsets of its live peers and returns the new
// view and whether the node went out of sync or back.
func (c *nodeClock) check(offsets map[ring.NodeID]time.Duration) (*clockView, bool) {
	list := make([]time.Duration, 0, len(offsets))
	for _, o := range offsets {
		list = append(list, o)
	}
	v := &clockView{offsets: offsets, outOfSync: hlc.OutOfSync(list, c.maxOffset)}
	if v.outOfSync {
		v.refusal = fmt.Errorf("%w: this node's clock is further than max_clock_offset %v from most of its peers' (theirs minus ours: %s); it timestamps no writes until it is back within it",
			errClockOutOfSync, c.maxOffset, formatOffsets(offsets))
	}
	old := c.view.Swap(v)
	return v, (old != nil && old.outOfSync) != v.outOfSync
}

// snapshot is what the admin endpoints show of clocks.
func (c *nodeClock) snapshot() admin.Clocks {
	out := admin.Clocks{MaxOffset: c.maxOffset}
	if v := c.view.Load(); v != nil {
		out.Offsets, out.OutOfSync = v.offsets, v.outOfSync
	}
	return out
}

func formatOffsets(offsets map[ring.NodeID]time.Duration) string {
	ids := make([]ring.NodeID, 0, len(offsets))
	for id := range offsets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %s", id, admin.FormatOffset(offsets[id]))
	}
	return strings.Join(parts, ", ")
}

// clockLoop checks the node's clock against its peers' every clockCheckInterval.
func (c *clusterNode) clockLoop() {
	defer c.wg.Done()
	c.every(clockCheckInterval, c.checkClock)
}

// checkClock takes the offsets of the live peers this node has estimates for (from the
// stamps of their responses) and lets the clock decide; it logs a change either way.
func (c *clusterNode) checkClock() {
	offsets := liveOffsets(c.self, c.machine.Members(), c.peers.Offsets())
	v, changed := c.clock.check(offsets)
	switch {
	case !changed:
	case v.outOfSync:
		c.log.Error("this node's clock is out of sync with its peers': refusing writes until it is back", "max_clock_offset", c.clock.maxOffset,
			"offsets", formatOffsets(offsets))
	default:
		c.log.Info("this node's clock is back in sync with its peers': writing again", "offsets", formatOffsets(offsets))
	}
}

// liveOffsets keeps the offsets of the members other than self that are up and not
// removed: a peer that is down says nothing of the clocks of those that serve.
func liveOffsets(self ring.NodeID, members []cluster.Member, est map[string]transport.Offset) map[ring.NodeID]time.Duration {
	out := map[ring.NodeID]time.Duration{}
	for _, m := range members {
		if m.ID == self || !m.Up || m.Status == cluster.Removed {
			continue
		}
		if o, ok := est[string(m.ID)]; ok {
			out[m.ID] = o.Offset
		}
	}
	return out
}
