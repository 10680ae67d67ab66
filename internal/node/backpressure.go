package node

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// asyncWindows paces this coordinator's asynchronous writes (the read-optimized
// replica's, under engine-aware and load-aware routing) with one coord.AsyncWindow per
// replica: a replica whose window is full is Backlogged, and its writes are deferred to
// hints, replayed as its window has room (clusterNode.replayHints). Safe for concurrent
// use.
type asyncWindows struct {
	target time.Duration

	mu sync.Mutex
	w  map[ring.NodeID]*coord.AsyncWindow
}

func newAsyncWindows(target time.Duration) *asyncWindows {
	return &asyncWindows{target: target, w: map[ring.NodeID]*coord.AsyncWindow{}}
}

// window returns id's window; a.mu must be held.
func (a *asyncWindows) window(id ring.NodeID) *coord.AsyncWindow {
	w := a.w[id]
	if w == nil {
		w = &coord.AsyncWindow{Target: a.target}
		a.w[id] = w
	}
	return w
}

// annotate returns replicas with Backlogged set on those whose window is full: replicas
// itself when none is, a copy otherwise.
func (a *asyncWindows) annotate(replicas []coord.Replica) []coord.Replica {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []coord.Replica
	for i, r := range replicas {
		w := a.w[r.ID]
		if w == nil || !w.Full() {
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

// room returns how many more asynchronous writes id's window takes now.
func (a *asyncWindows) room(id ring.NodeID) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.window(id)
	return max(int(w.Size())-w.InFlight(), 0)
}

// sent counts n asynchronous writes sent to id, and returns what to call with the
// answer: that answers all n.
func (a *asyncWindows) sent(id ring.NodeID, n int) func(failed bool) time.Duration {
	a.mu.Lock()
	w := a.window(id)
	for range n {
		w.Sent()
	}
	a.mu.Unlock()
	start := time.Now()
	return func(failed bool) time.Duration {
		now := time.Now()
		took := now.Sub(start)
		a.mu.Lock()
		for range n {
			w.Answered(took, failed, now)
		}
		a.mu.Unlock()
		return took
	}
}

// asyncWindowDesc exports every window at scrape time.
var asyncWindowDesc = prometheus.NewDesc("kura_coordinator_async_window",
	"This coordinator's window of unanswered asynchronous writes per replica (engine-aware routing): writes "+
		"beyond it are deferred to hints. Shrinks when the replica answers later than --async-write-target.",
	[]string{"replica"}, nil)

func (a *asyncWindows) Describe(ch chan<- *prometheus.Desc) { ch <- asyncWindowDesc }

func (a *asyncWindows) Collect(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, w := range a.w {
		ch <- prometheus.MustNewConstMetric(asyncWindowDesc, prometheus.GaugeValue, w.Size(), string(id))
	}
}
