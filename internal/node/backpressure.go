package node

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// asyncPacer paces this coordinator's asynchronous writes (the read-optimized replica's,
// under engine-aware and load-aware routing) with one coord.AsyncPace per replica: a
// replica whose pace is not ready is Backlogged, and its writes are deferred to hints,
// replayed as its pace allows (clusterNode.replayTo). A synchronous replica answering
// later than hostTarget slows the pace of every asynchronous replica on its host, whose
// writes take the disk and cores it needs. Safe for concurrent use.
type asyncPacer struct {
	target     time.Duration            // an asynchronous replica's own answers later than this slow its pace
	hostTarget time.Duration            // a synchronous replica's answers later than this slow its host's; 0 only failures
	hostOf     func(ring.NodeID) string // "" when unknown: no host is congested through it

	mu sync.Mutex
	p  map[ring.NodeID]*coord.AsyncPace
}

func newAsyncPacer(target, hostTarget time.Duration, hostOf func(ring.NodeID) string) *asyncPacer {
	return &asyncPacer{target: target, hostTarget: hostTarget, hostOf: hostOf, p: map[ring.NodeID]*coord.AsyncPace{}}
}

// pace returns id's pace; a.mu must be held.
func (a *asyncPacer) pace(id ring.NodeID) *coord.AsyncPace {
	p := a.p[id]
	if p == nil {
		// Halvings may come as often as a synchronous replica can be late.
		p = &coord.AsyncPace{Target: a.target, Span: min(a.target, max(a.hostTarget, 10*time.Millisecond))}
		a.p[id] = p
	}
	return p
}

// annotate returns replicas with Backlogged set on those whose pace is not ready: replicas
// itself when none is, a copy otherwise. Only replicas sent asynchronous writes before
// have a pace.
func (a *asyncPacer) annotate(replicas []coord.Replica) []coord.Replica {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []coord.Replica
	for i, r := range replicas {
		p := a.p[r.ID]
		if p == nil || p.Ready(now) {
			continue
		}
		if out == nil {
			out = append([]coord.Replica(nil), replicas...)
		}
		out[i].Backlogged = true
	}
	if out == nil {
		return replicas
	}
	return out
}

// room returns how many asynchronous writes id's pace takes now.
func (a *asyncPacer) room(id ring.NodeID) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pace(id).Room(time.Now())
}

// sent counts n asynchronous writes sent to id, and returns what to call with the
// answer, which answers all n; it returns how long they took.
func (a *asyncPacer) sent(id ring.NodeID, n int) func(failed bool) time.Duration {
	start := time.Now()
	a.mu.Lock()
	p := a.pace(id)
	p.Sent(n, start)
	a.mu.Unlock()
	return func(failed bool) time.Duration {
		now := time.Now()
		took := now.Sub(start)
		a.mu.Lock()
		for range n {
			p.Answered(took, failed, now)
		}
		a.mu.Unlock()
		return took
	}
}

// synchronous returns what to call with the answer to a synchronous write sent to id now:
// an answer later than hostTarget, or a failure, congests every other replica on id's
// host.
func (a *asyncPacer) synchronous(id ring.NodeID) func(failed bool) {
	start := time.Now()
	return func(failed bool) {
		now := time.Now()
		if !failed && (a.hostTarget == 0 || now.Sub(start) <= a.hostTarget) {
			return
		}
		host := a.hostOf(id)
		if host == "" {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for other, p := range a.p {
			if other != id && a.hostOf(other) == host {
				p.Congested(now)
			}
		}
	}
}

// asyncRateDesc exports every pace at scrape time.
var asyncRateDesc = prometheus.NewDesc("kura_coordinator_async_write_rate",
	"This coordinator's pace of asynchronous writes per replica (engine-aware routing), writes per second: "+
		"writes beyond it are deferred to hints. Halved when the replica answers later than --async-write-target, "+
		"or a synchronous replica on its host later than --write-fallback-after.",
	[]string{"replica"}, nil)

func (a *asyncPacer) Describe(ch chan<- *prometheus.Desc) { ch <- asyncRateDesc }

func (a *asyncPacer) Collect(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, p := range a.p {
		ch <- prometheus.MustNewConstMetric(asyncRateDesc, prometheus.GaugeValue, p.Rate(), string(id))
	}
}
