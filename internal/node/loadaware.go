package node

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// loadTracker is what a coordinator knows for load-aware routing (coord.LoadAware): the
// keys it wrote moments ago, the replicas that some member holds hints for, and each
// replica's recent read latency. Only the hints are heard from others (gossiped as
// cluster.Member.Behind); the rest is this coordinator's own. Safe for concurrent use.
//
// Only reads are timed. A write's answer says little about how fast the replica reads:
// a write-optimized replica's write waits for its log's fsync, which a read does not, and
// a read-optimized replica's asynchronous write waits for the commits queued before it,
// while its reads wait for neither (bbolt's readers do not wait for its writer).
type loadTracker struct {
	recent recentWrites
	peers  sync.Map // ring.NodeID -> *peerLatency; read on every request, written once per peer
	// hinted, when not nil, reports whether this coordinator, or another live member as it
	// last announced, holds hints for a replica: writes deferred (a read-optimized replica
	// behind its pace) or not delivered, that the replica has not had yet. Such a replica
	// lags for every key until they are replayed: after a write-heavy burst a
	// read-optimized replica can be hundreds of thousands of writes behind for minutes,
	// far longer than recentWrites remembers.
	hinted func(ring.NodeID) bool
}

// Latency samples older than latencyStale are forgotten, so that a replica asked less
// because it was slow gets asked again and measured afresh.
const latencyStale = time.Second

type peerLatency struct {
	ewma    atomic.Int64 // ns; moves an eighth of the way to each sample
	updated atomic.Int64 // unix ns of the last sample
}

// newLoadTracker returns a tracker; hinted (nil: none) reports the replicas that hints are
// held for.
func newLoadTracker(hinted func(ring.NodeID) bool) *loadTracker {
	return &loadTracker{recent: recentWrites{window: recentWriteWindow, max: recentWriteMax}, hinted: hinted}
}

func (t *loadTracker) peer(id ring.NodeID) *peerLatency {
	if p, ok := t.peers.Load(id); ok {
		return p.(*peerLatency)
	}
	p, _ := t.peers.LoadOrStore(id, &peerLatency{})
	return p.(*peerLatency)
}

// observe records one read answered by replica id (a peer, or this node's own) that
// took d.
func (t *loadTracker) observe(id ring.NodeID, d time.Duration, now time.Time) {
	p := t.peer(id)
	if old := p.ewma.Load(); old == 0 || now.UnixNano()-p.updated.Load() > int64(latencyStale) {
		p.ewma.Store(int64(d))
	} else {
		p.ewma.Store(old + (int64(d)-old)/8)
	}
	p.updated.Store(now.UnixNano())
}

// timed wraps done, the callback of a read sent to peer id now, to observe how long the
// answer took.
func (t *loadTracker) timed(id ring.NodeID, done func([]byte, error)) func([]byte, error) {
	sent := time.Now()
	return func(b []byte, err error) {
		now := time.Now()
		t.observe(id, now.Sub(sent), now)
		done(b, err)
	}
}

// latency returns replica id's recent read latency, or 0 when it has no recent sample.
func (t *loadTracker) latency(id ring.NodeID, now time.Time) time.Duration {
	p := t.peer(id)
	if now.UnixNano()-p.updated.Load() > int64(latencyStale) {
		return 0
	}
	return time.Duration(p.ewma.Load())
}

// quick reports whether every replica of ids (at least one) has a recent read latency and
// it is under limit.
func (t *loadTracker) quick(ids []ring.NodeID, limit time.Duration, now time.Time) bool {
	for _, id := range ids {
		if l := t.latency(id, now); l == 0 || l >= limit {
			return false
		}
	}
	return len(ids) > 0
}

var readLatencyDesc = prometheus.NewDesc("kura_coordinator_replica_read_seconds",
	"This coordinator's recent read latency of each replica (itself included) that answered a read within the "+
		"last second: the moving average load-aware routing ranks replicas by.", []string{"replica"}, nil)

// Describe implements prometheus.Collector.
func (t *loadTracker) Describe(ch chan<- *prometheus.Desc) { ch <- readLatencyDesc }

// Collect implements prometheus.Collector: one gauge per replica with a recent sample.
func (t *loadTracker) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	var ids []string
	t.peers.Range(func(k, _ any) bool { ids = append(ids, string(k.(ring.NodeID))); return true })
	sort.Strings(ids)
	for _, id := range ids {
		if l := t.latency(ring.NodeID(id), now); l > 0 {
			ch <- prometheus.MustNewConstMetric(readLatencyDesc, prometheus.GaugeValue, l.Seconds(), id)
		}
	}
}

// wrote notes a write of key by this coordinator.
func (t *loadTracker) wrote(key []byte, now time.Time) { t.recent.add(xxhash.Sum64(key), now) }

// annotate returns a copy of key's replica set with what LoadAware reads need: replicas
// whose copy of a write this coordinator made moments ago was not waited for, and
// replicas this coordinator holds hints for, are Lagging, and every replica carries its
// recent read latency: a peer's as its answers took, this node's own as its local reads
// took (a B+tree whose reads wait on its disk is asked last like a slow peer, though it
// is the coordinator).
func (t *loadTracker) annotate(key []byte, replicas []coord.Replica, now time.Time) []coord.Replica {
	out := make([]coord.Replica, len(replicas))
	copy(out, replicas)
	recent := t.recent.has(xxhash.Sum64(key), now)
	for i := range out {
		if recent && !coord.Synchronous(out[i].Role) || t.hinted != nil && t.hinted(out[i].ID) {
			out[i].Lagging = true
		}
		out[i].Latency = t.latency(out[i].ID, now)
	}
	return out
}

// A write is remembered for between recentWriteWindow and twice that; at most
// recentWriteMax keys per window are (16 bytes each), and under a heavier write load the
// rest go unmarked: their reads are planned as engine-aware ones, which stay correct (a
// stale replica shows as a disagreement and is repaired) and only cost a second round.
var recentWriteWindow = time.Second

const recentWriteMax = 1 << 17

// recentWrites is a set of key hashes seen in the current and the previous window.
type recentWrites struct {
	mu         sync.Mutex
	window     time.Duration
	max        int
	cur, prev  map[uint64]struct{}
	curStarted time.Time
}

// rotate starts a new window when the current one is over. Windows start at multiples
// of the window after the first, whenever the set is looked at, so that a key is
// remembered for at least one window and less than two.
func (r *recentWrites) rotate(now time.Time) {
	switch {
	case r.cur == nil:
		r.cur, r.curStarted = map[uint64]struct{}{}, now
	case now.Sub(r.curStarted) >= 2*r.window:
		clear(r.cur)
		clear(r.prev)
		r.curStarted = now
	case now.Sub(r.curStarted) >= r.window:
		old := r.prev
		if old == nil {
			old = map[uint64]struct{}{}
		}
		clear(old)
		r.prev, r.cur = r.cur, old
		r.curStarted = r.curStarted.Add(r.window)
	}
}

func (r *recentWrites) add(h uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(now)
	if len(r.cur) < r.max {
		r.cur[h] = struct{}{}
	}
}

func (r *recentWrites) has(h uint64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(now)
	_, inCur := r.cur[h]
	_, inPrev := r.prev[h]
	return inCur || inPrev
}
