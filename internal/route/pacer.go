package route

import (
	"sync"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// Pacer paces one coordinator's asynchronous writes (the read-optimized replica's, under
// engine-aware and load-aware routing) with one Pace per replica: a replica whose pace is
// not ready is Backlogged, and its writes are deferred to hints, replayed as its pace
// allows. A synchronous replica answering later than hostTarget slows the pace of every
// asynchronous replica on its host, whose writes take the disk and cores it needs.
type Pacer struct {
	target     time.Duration            // an asynchronous replica's own answers later than this slow its pace
	hostTarget time.Duration            // a synchronous replica's answers later than this slow its host's; 0 only failures
	hostOf     func(ring.NodeID) string // "" when unknown: no host is congested through it

	mu sync.Mutex
	p  map[ring.NodeID]*Pace
}

// NewPacer returns a pacer whose paces slow down on asynchronous answers later than
// target and on synchronous ones later than hostTarget (0: only on failures); hostOf
// tells which host a replica is on.
func NewPacer(target, hostTarget time.Duration, hostOf func(ring.NodeID) string) *Pacer {
	return &Pacer{target: target, hostTarget: hostTarget, hostOf: hostOf, p: map[ring.NodeID]*Pace{}}
}

// pace returns id's pace; a.mu must be held.
func (a *Pacer) pace(id ring.NodeID) *Pace {
	p := a.p[id]
	if p == nil {
		// Halvings may come as often as a synchronous replica can be late.
		p = &Pace{Target: a.target, Span: min(a.target, max(a.hostTarget, 10*time.Millisecond))}
		a.p[id] = p
	}
	return p
}

// Annotate returns replicas with Backlogged set on those whose pace is not ready at now:
// replicas itself when none is, a copy otherwise. Only replicas sent asynchronous writes
// before have a pace.
func (a *Pacer) Annotate(replicas []coord.Replica, now time.Time) []coord.Replica {
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

// Room returns how many asynchronous writes id's pace takes at now.
func (a *Pacer) Room(id ring.NodeID, now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pace(id).Room(now)
}

// Sent counts n asynchronous writes sent to id at now.
func (a *Pacer) Sent(id ring.NodeID, n int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pace(id).Sent(n, now)
}

// Answered takes the one answer to n asynchronous writes counted by Sent: they took took,
// failed or not, answered at now.
func (a *Pacer) Answered(id ring.NodeID, n int, took time.Duration, failed bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pace(id)
	for range n {
		p.Answered(took, failed, now)
	}
}

// Synchronous takes the answer to a synchronous write to id: one later than hostTarget,
// or a failure, congests every other replica on id's host.
func (a *Pacer) Synchronous(id ring.NodeID, took time.Duration, failed bool, now time.Time) {
	if !failed && (a.hostTarget == 0 || took <= a.hostTarget) {
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

// Rate is one replica's pace (Pacer.Rates).
type Rate struct {
	ID    ring.NodeID
	Rate  float64 // writes per second
	Ahead int     // writes sent and not answered
}

// Rates returns every pace, for metrics.
func (a *Pacer) Rates() []Rate {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Rate, 0, len(a.p))
	for id, p := range a.p {
		out = append(out, Rate{ID: id, Rate: p.Rate(), Ahead: p.InFlight()})
	}
	return out
}
