package node

import (
	"time"

	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// The hint store marks the spans of the ring in which a replica lost writes whose hints
// were dropped (hint.Store.Marked). The marks live on the coordinators that dropped the
// hints, not on the replica, so they are cleared here the way the hints themselves are
// discarded: once the replica announces a rebuild (machine.Node.HintsCovered), the marks
// of writes lost before it started are obsolete, since a rebuild pulls every range the
// replica holds from its peers; after a FLUSHALL, so are those of writes it deleted.

// clearCoveredMarks clears the repair marks of each replica rebuilt since they were made,
// and every mark of a replica the metadata log removed (its ranges were re-made from the
// replicas that stay, which is what a repair of them would have done) or that left by
// decommission (the ranges it handed over may still lack what it lost: said once, at
// warning level, as the marks go). It runs with each round of hint replay.
func (c *clusterNode) clearCoveredMarks() {
	var st *meta.State
	if c.rl != nil {
		st = c.rl.state.Load()
	}
	for _, target := range c.hints.MarkedTargets() {
		if st != nil {
			if m, ok := st.Member(ring.NodeID(target)); ok && (m.State == meta.Removed || m.State == meta.Left) {
				if m.State == meta.Left {
					c.log.Warn("a decommissioned replica had lost writes whose hints were dropped: the ranges it handed over may need a repair",
						"replica", target, "spans", len(c.hints.Marked(target)))
				}
				c.clearMarks(target, time.Now().Add(time.Hour), "the replica is "+m.State.String())
				continue
			}
		}
		if before, ok := c.machine.HintsCovered(ring.NodeID(target)); ok {
			c.clearMarks(target, before, "a rebuild covered")
		}
	}
}

// clearMarks clears target's repair marks of writes lost before before; why says what
// covered them, for the log.
func (c *clusterNode) clearMarks(target string, before time.Time, why string) {
	n, err := c.hints.ClearMarks(target, before)
	switch {
	case err != nil:
		c.log.Warn("clearing repair marks "+why, "replica", target, "err", err)
	case n > 0:
		c.log.Info("cleared repair marks "+why, "replica", target, "buckets", n, "left", len(c.hints.Marked(target)))
	}
}

// repairMarks returns the repair marks this node holds, by replica, for its status.
func (c *clusterNode) repairMarks() map[string][]hint.TokenSpan {
	out := map[string][]hint.TokenSpan{}
	for _, target := range c.hints.MarkedTargets() {
		out[target] = c.hints.Marked(target)
	}
	return out
}
