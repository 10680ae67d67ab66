package machine

import (
	"slices"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// Hint replay limits: a round (every second in the real node) replays to each replica
// up to ReplayBatches batches of ReplayBatch hints, so that a returning replica is not
// flooded; under paced asynchronous writes, fewer (see Replay).
const (
	ReplayBatch   = 64
	ReplayBatches = 4
)

// RefillSkew is how far a rebuilt replica's clock may be ahead of this node's: a hint is
// stamped with this node's clock and the refill's start with the replica's, so hints
// created up to this long before the start are still replayed, in case they came after
// it.
const RefillSkew = 5 * time.Second

// HintsCovered returns the time before which the hints held for replica target are
// redundant, because target was since rebuilt from its peers (cluster.Member.Refilled),
// which gave it those writes: replaying them would cost target a random write each, at
// its pace (after a bulk load, hundreds of thousands, for many minutes). False when
// target was never rebuilt.
func (n *Node) HintsCovered(target ring.NodeID) (time.Time, bool) {
	m := n.view.Load().members[target]
	if m.Refilled.IsZero() {
		return time.Time{}, false
	}
	return m.Refilled.Add(-RefillSkew), true
}

// ReplayTo reports whether hints held for target may be replayed: it is up.
func (n *Node) ReplayTo(target ring.NodeID) bool { return n.view.Load().members[target].Up }

// Replay is one round of hint replay to one replica. Under paced asynchronous writes
// (Config.AsyncTarget) replayed hints take the replica's pace, as deferred writes would
// have: batches no larger than its room, and none after one answered late, so that a
// backlogged replica catches up at the pace it and its host allow.
type Replay struct {
	n       *Node
	to      ring.NodeID
	batches int
	late    bool
}

// StartReplay begins a round of replay to target.
func (n *Node) StartReplay(target ring.NodeID) *Replay { return &Replay{n: n, to: target} }

// Next returns how many hints the next batch may carry at now; 0 ends the round.
func (r *Replay) Next(now time.Time) int {
	if r.late || r.batches >= ReplayBatches {
		return 0
	}
	size := ReplayBatch
	if r.n.pacer != nil {
		size = min(size, r.n.pacer.Room(r.to, now))
	}
	if size > 0 {
		r.batches++
	}
	return size
}

// Sent counts a batch of count hints sent at now.
func (r *Replay) Sent(count int, now time.Time) {
	if r.n.pacer != nil {
		r.n.pacer.Sent(r.to, count, now)
	}
}

// Answered takes the answer to the batch of count hints sent last: it took took and
// failed or not, at now. A batch answered later than the pace's target ends the round.
func (r *Replay) Answered(count int, took time.Duration, failed bool, now time.Time) {
	if r.n.pacer == nil {
		return
	}
	r.n.pacer.Answered(r.to, count, took, failed, now)
	r.late = took > r.n.cfg.AsyncTarget
}

// announcement remembers what the node last announced about itself through gossip.
type announcement struct {
	mu     sync.Mutex
	load   int64
	loaded bool
	behind []ring.NodeID
}

// AnnounceLoad reports whether the node's load (the bytes of data it holds) is worth
// announcing: the first time, and then when it has moved by 1% or 1 MiB since the last
// announcement, so that gossip is not flooded by small changes. A true answer counts as
// announced.
func (n *Node) AnnounceLoad(load int64) bool {
	a := &n.announcement
	a.mu.Lock()
	defer a.mu.Unlock()
	if d := load - a.load; a.loaded && max(d, -d) < max(a.load/100, 1<<20) {
		return false
	}
	a.load, a.loaded = load, true
	return true
}

// AnnounceBehind reports whether the replicas this node holds hints for (sorted) changed
// since it last announced them (cluster.Member.Behind). A true answer counts as
// announced.
func (n *Node) AnnounceBehind(holding []ring.NodeID) bool {
	a := &n.announcement
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.Equal(holding, a.behind) {
		return false
	}
	a.behind = slices.Clone(holding)
	return true
}
