package node

import (
	"errors"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/stream"
)

// An in-memory node that restarts holds less than it acknowledged: nothing, or its last
// snapshot. Until it has pulled its rows back from its peers it announces itself as
// refilling: coordinators still send it writes but ask it no reads and count it toward
// no read level (coord.Replica.Refilling), so that it cannot make an acknowledged write
// invisible by answering "not found" for it.
//
// The refill pulls every range the node replicates from every other replica of that
// range (move.Refill plans it). Rows are merged in as writes are (row.Merge), so rows
// pulled while new writes arrive lose nothing. A source that fails is retried, from the
// page it was on, until it answers or leaves the ring.

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
	r := c.machine.Ring()
	if r == nil { // nothing to pull, and nothing pulled: no Refilled
		c.finishRefill(time.Time{}, 0)
		return
	}
	// A node not in its own ring yet (joining again, its saved view without its tokens)
	// replicates no range by its view: a refill now would pull nothing and announce
	// Refilled, and its coordinators would discard the hints they hold for it.
	inRing := func() bool { _, ok := r.Node(c.self); return ok }
	for !inRing() {
		select {
		case <-c.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if r = c.machine.Ring(); r == nil {
			c.finishRefill(time.Time{}, 0)
			return
		}
	}
	start := time.Now()
	rows := 0
	tasks := move.Refill(r, c.strategy, c.cfg.ReplicationFactor, c.self)
	c.log.Info("refill: pulling", "ranges", len(tasks), "ring_nodes", len(r.Nodes()))
	puller := &stream.Puller{Source: func(id ring.NodeID) (stream.Caller, error) { return c.peer(id) },
		Gone: func(id ring.NodeID) bool { return !c.ownsTokens(id) }, Sink: c.handler,
		PageRows: refillPageRows, PageBytes: refillPageBytes, Timeout: c.cfg.RequestTimeout, Retry: refillRetry,
		Logger: c.log}
	for _, t := range tasks {
		for _, src := range t.Sources {
			for _, kr := range t.Keys {
				n, ok := puller.Pull(src, kr, c.stop)
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

// ownsTokens reports whether id is a member that still owns tokens.
func (c *clusterNode) ownsTokens(id ring.NodeID) bool {
	m, ok := c.machine.Member(id)
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
