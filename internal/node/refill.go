package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// An in-memory node that restarts holds less than it acknowledged: nothing, or its last
// snapshot. Until it has pulled its rows back from its peers it announces itself as
// refilling: coordinators still send it writes but ask it no reads and count it toward
// no read level (coord.Replica.Refilling), so that it cannot make an acknowledged write
// invisible by answering "not found" for it.
//
// The refill pulls every range the node replicates from every other replica of that
// range, not just one: a write acknowledged at QUORUM is on at least one replica besides
// this one, but not necessarily on any particular one. Rows are merged in as writes are
// (row.Merge), so rows pulled while new writes arrive lose nothing. A source that fails
// is retried, from the page it was on, until it answers or leaves the ring.

// refillTask is one ring range to pull from its other replicas.
type refillTask struct {
	keys    []ring.KeyRange
	sources []ring.NodeID
}

// refillTasks lists the ranges of r whose replica sets (under strategy and rf) hold self,
// with the other replicas of each, write-optimized ones first (they took every write
// synchronously).
func refillTasks(r *ring.Ring, strategy ring.Strategy, rf int, self ring.NodeID) []refillTask {
	var tasks []refillTask
	for i := range r.RangeCount() {
		set := strategy.Replicas(r, r.RangeEnd(i), rf)
		if !slices.Contains(set, self) {
			continue
		}
		t := refillTask{keys: ring.EngineKeyRanges(r.RangeStart(i), r.RangeEnd(i))}
		for _, id := range set {
			if id != self {
				t.sources = append(t.sources, id)
			}
		}
		slices.SortStableFunc(t.sources, func(a, b ring.NodeID) int {
			return writeFirst(r, a) - writeFirst(r, b)
		})
		tasks = append(tasks, t)
	}
	return tasks
}

func writeFirst(r *ring.Ring, id ring.NodeID) int {
	if n, ok := r.Node(id); ok && n.Role == ring.WriteOptimized {
		return 0
	}
	return 1
}

// Refill pages: rows and bytes per scan request.
const (
	refillPageRows  = 1024
	refillPageBytes = 4 << 20
)

// refillRetry is how long a refill waits before asking a source that failed again.
var refillRetry = time.Second

// refillGate runs before a refill pulls anything; tests hold it to observe a node while
// it is refilling.
var refillGate = func() {}

// refill pulls this node's ranges from their other replicas, then announces that the node
// may serve reads again. It returns early, still refilling, when the node stops.
func (c *clusterNode) refill() {
	defer c.wg.Done()
	refillGate()
	st := c.state.Load()
	if st == nil || st.ring == nil { // nothing to pull, and nothing pulled: no Refilled
		c.finishRefill(time.Time{}, 0)
		return
	}
	// A node not in its own ring yet (joining again, its saved view without its tokens)
	// replicates no range by its view: a refill now would pull nothing and announce
	// Refilled, and its coordinators would discard the hints they hold for it.
	inRing := func() bool { _, ok := st.ring.Node(c.self); return ok }
	for !inRing() {
		select {
		case <-c.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if st = c.state.Load(); st.ring == nil {
			c.finishRefill(time.Time{}, 0)
			return
		}
	}
	start := time.Now()
	rows := 0
	tasks := refillTasks(st.ring, c.strategy, c.cfg.ReplicationFactor, c.self)
	c.log.Info("refill: pulling", "ranges", len(tasks), "ring_nodes", len(st.ring.Nodes()))
	for _, t := range tasks {
		for _, src := range t.sources {
			for _, kr := range t.keys {
				n, ok := c.pullRange(src, kr)
				rows += n
				if !ok {
					return // stopping
				}
			}
		}
	}
	c.finishRefill(start, rows)
}

// finishRefill announces that the node serves reads again, and, unless start is zero,
// that it holds every write acknowledged before start (cluster.Member.Refilled).
func (c *clusterNode) finishRefill(start time.Time, rows int) {
	defer c.refilling.Store(false)
	c.handler.SetRefilling(false)
	c.gossip.Update(func(m *cluster.Member) {
		m.Refilling = false
		if !start.IsZero() {
			m.Refilled = start
		}
	})
	if start.IsZero() {
		c.log.Info("refill: no ring yet, nothing to pull: serving reads")
		return
	}
	c.log.Info("refilled from peers: serving reads", "rows", rows, "took", time.Since(start).Round(time.Millisecond))
}

// pullRange copies kr from src, page by page, retrying a failed page until it succeeds,
// src leaves the ring, or the node stops (false).
func (c *clusterNode) pullRange(src ring.NodeID, kr ring.KeyRange) (rows int, ok bool) {
	lo := kr.Lo
	for {
		n, next, err := c.pullPage(src, lo, kr.Hi)
		rows += n
		switch {
		case err == nil && next == nil:
			return rows, true
		case err == nil:
			lo = next
			continue
		}
		if !c.ownsTokens(src) {
			c.log.Info("refill source left the ring; skipped", "source", src)
			return rows, true
		}
		c.log.Warn("refill page failed; retrying", "source", src, "err", err)
		select {
		case <-c.stop:
			return rows, false
		case <-time.After(refillRetry):
		}
	}
}

// pullPage asks src for the page of rows from lo and applies it here.
func (c *clusterNode) pullPage(src ring.NodeID, lo, hi []byte) (int, []byte, error) {
	p, err := c.peer(src)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	b, err := p.Call(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{
		Lo: lo, Hi: hi, Rows: refillPageRows, Bytes: refillPageBytes}))
	if err != nil {
		return 0, nil, err
	}
	resp, err := wire.DecodeScanResponse(b)
	if err != nil {
		return 0, nil, fmt.Errorf("node: scan response: %w", err)
	}
	if len(resp.Rows) > 0 {
		if err := c.handler.Write(resp.Rows); err != nil {
			return 0, nil, err
		}
	}
	return len(resp.Rows), resp.Next, nil
}

// ownsTokens reports whether id is a member that still owns tokens.
func (c *clusterNode) ownsTokens(id ring.NodeID) bool {
	m, ok := c.state.Load().members[id]
	return ok && (m.Status == cluster.Normal || m.Status == cluster.Leaving)
}

// errRefilling is rebuild's answer while a refill is under way.
var errRefilling = errors.New("node: already refilling from peers")

// rebuild makes this replica pull every range it replicates from the other replicas, as
// a restarted in-memory node does (Cassandra's nodetool rebuild): it serves no reads until
// done, and takes writes meanwhile. For a replica that lags far behind (a read-optimized
// replica whose asynchronous writes were deferred through a bulk load): a refill reads
// the peers' rows in key order and writes them in key order, where replaying the hints
// writes them in random order; the hints' replay afterwards finds the rows there.
func (c *clusterNode) rebuild() error {
	if !c.refilling.CompareAndSwap(false, true) {
		return errRefilling
	}
	c.log.Info("rebuilding from peers: serving no reads until done")
	c.handler.SetRefilling(true)
	c.gossip.Update(func(m *cluster.Member) { m.Refilling = true })
	c.wg.Add(1)
	go c.refill()
	return nil
}
