package route

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// Load is what a coordinator knows for load-aware routing (coord.LoadAware): the keys it
// wrote moments ago, the replicas that some member holds hints for, and each replica's
// recent read latency. Only the hints are heard from others (gossiped as
// cluster.Member.Behind); the rest is this coordinator's own.
//
// Only reads are timed. A write's answer says little about how fast the replica reads:
// a write-optimized replica's write waits for its log's fsync, which a read does not, and
// a read-optimized replica's asynchronous write waits for the commits queued before it,
// while its reads wait for neither (bbolt's readers do not wait for its writer).
type Load struct {
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

// LatencyStale is how long a latency sample counts: older ones are forgotten, so that a
// replica asked less because it was slow gets asked again and measured afresh.
const LatencyStale = time.Second

type peerLatency struct {
	ewma    atomic.Int64 // ns; moves an eighth of the way to each sample
	updated atomic.Int64 // unix ns of the last sample
}

// NewLoad returns a tracker; hinted (nil: none) reports the replicas that hints are held
// for.
func NewLoad(hinted func(ring.NodeID) bool) *Load {
	return &Load{recent: recentWrites{window: RecentWriteWindow, max: recentWriteMax}, hinted: hinted}
}

func (t *Load) peer(id ring.NodeID) *peerLatency {
	if p, ok := t.peers.Load(id); ok {
		return p.(*peerLatency)
	}
	p, _ := t.peers.LoadOrStore(id, &peerLatency{})
	return p.(*peerLatency)
}

// Observe records one read answered by replica id (a peer, or this node's own) that took
// d, answered at now.
func (t *Load) Observe(id ring.NodeID, d time.Duration, now time.Time) {
	p := t.peer(id)
	if old := p.ewma.Load(); old == 0 || now.UnixNano()-p.updated.Load() > int64(LatencyStale) {
		p.ewma.Store(int64(d))
	} else {
		p.ewma.Store(old + (int64(d)-old)/8)
	}
	p.updated.Store(now.UnixNano())
}

// Latency returns replica id's recent read latency, or 0 when it has no recent sample.
func (t *Load) Latency(id ring.NodeID, now time.Time) time.Duration {
	p := t.peer(id)
	if now.UnixNano()-p.updated.Load() > int64(LatencyStale) {
		return 0
	}
	return time.Duration(p.ewma.Load())
}

// Quick reports whether every replica of ids (at least one) has a recent read latency
// and it is under limit.
func (t *Load) Quick(ids []ring.NodeID, limit time.Duration, now time.Time) bool {
	for _, id := range ids {
		if l := t.Latency(id, now); l == 0 || l >= limit {
			return false
		}
	}
	return len(ids) > 0
}

// Latencies returns every replica's recent read latency that has a sample, by replica in
// ID order, for metrics.
func (t *Load) Latencies(now time.Time) []ReplicaLatency {
	var ids []string
	t.peers.Range(func(k, _ any) bool { ids = append(ids, string(k.(ring.NodeID))); return true })
	sort.Strings(ids)
	var out []ReplicaLatency
	for _, id := range ids {
		if l := t.Latency(ring.NodeID(id), now); l > 0 {
			out = append(out, ReplicaLatency{ID: ring.NodeID(id), Latency: l})
		}
	}
	return out
}

// ReplicaLatency is one replica's recent read latency (Load.Latencies).
type ReplicaLatency struct {
	ID      ring.NodeID
	Latency time.Duration
}

// Wrote notes a write of key by this coordinator at now.
func (t *Load) Wrote(key []byte, now time.Time) { t.recent.add(xxhash.Sum64(key), now) }

// Annotate returns a copy of key's replica set with what LoadAware reads need: replicas
// whose copy of a write this coordinator made moments ago was not waited for, and
// replicas some member holds hints for, are Lagging, and every replica carries its
// recent read latency: a peer's as its answers took, this node's own as its local reads
// took (a B+tree whose reads wait on its disk is asked last like a slow peer, though it
// is the coordinator).
func (t *Load) Annotate(key []byte, replicas []coord.Replica, now time.Time) []coord.Replica {
	out := make([]coord.Replica, len(replicas))
	copy(out, replicas)
	recent := t.recent.has(xxhash.Sum64(key), now)
	for i := range out {
		if recent && !coord.Synchronous(out[i].Role) || t.hinted != nil && t.hinted(out[i].ID) {
			out[i].Lagging = true
		}
		out[i].Latency = t.Latency(out[i].ID, now)
	}
	return out
}
