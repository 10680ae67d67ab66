package coord

import (
	"slices"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Write is one client write in progress. Its timestamp was assigned before it started
// (by the coordinator's hybrid logical clock), so retries and hints carry the same cells.
// Not safe for concurrent use: the driver feeds it one input at a time.
type Write struct {
	m        row.Mutation
	need     int
	plan     WritePlan
	pending  map[ring.NodeID]bool // targets that have not answered
	acks     int                  // acknowledgements that count
	spare    int                  // acknowledgements from targets outside Counted, not yet counted
	fallback bool                 // a counted target failed or was slow: every ack counts
	slowed   bool                 // the fallback came from OnSlow
	replied  bool
}

// StartWrite begins writing m at level to replicas under p, and returns the request and
// its first effects. With fewer live replicas than the level needs it replies
// ErrUnavailable at once and sends nothing.
func StartWrite(m row.Mutation, level Level, replicas []Replica, p Policy) (*Write, []Effect) {
	w := &Write{m: m, need: level.Required(len(replicas)), pending: map[ring.NodeID]bool{}}
	if live(replicas) < w.need || w.need == 0 {
		w.replied = true
		return w, []Effect{Reply{Err: unavailable(w.need, replicas, false)}}
	}
	w.plan = p.PlanWrite(replicas, w.need)
	var fx []Effect
	for _, id := range w.plan.Targets {
		w.pending[id] = true
		fx = append(fx, SendWrite{To: id, Mutation: m, Async: !w.counts(id)})
	}
	for _, id := range w.plan.Hinted {
		fx = append(fx, StoreHint{For: id, Mutation: m})
	}
	for _, id := range w.plan.Deferred {
		fx = append(fx, StoreHint{For: id, Mutation: m, Deferred: true})
	}
	return w, fx
}

// counts reports whether id's acknowledgement counts now.
func (w *Write) counts(id ring.NodeID) bool {
	return w.fallback || w.plan.Counted == nil || slices.Contains(w.plan.Counted, id)
}

// OnResponse takes replica from's answer: nil for applied, an error for failed. A failed
// replica gets a hint. Answers from replicas not asked, or asked and already answered,
// are ignored.
func (w *Write) OnResponse(from ring.NodeID, err error) []Effect {
	if !w.pending[from] {
		return nil
	}
	delete(w.pending, from)
	if err != nil {
		return w.failed([]ring.NodeID{from})
	}
	if w.counts(from) {
		w.acks++
	} else {
		w.spare++
	}
	return w.check()
}

// OnTimeout takes the request's deadline passing: every replica that has not answered
// gets a hint, and the client gets ErrTimeout unless the write already succeeded.
func (w *Write) OnTimeout() []Effect {
	var late []ring.NodeID
	for _, id := range slices.Concat(w.plan.Targets, w.plan.Deferred) {
		if w.pending[id] {
			late = append(late, id)
			delete(w.pending, id)
		}
	}
	fx := w.failed(late)
	if !w.replied {
		w.replied = true
		fx = append(fx, Reply{Err: ErrTimeout})
	}
	return fx
}

// failed hints the failed replicas and, when a counted one failed, lets every ack count.
func (w *Write) failed(ids []ring.NodeID) []Effect {
	var fx []Effect
	for _, id := range ids {
		if !slices.Contains(w.plan.Deferred, id) { // those were hinted from the start
			fx = append(fx, StoreHint{For: id, Mutation: w.m})
		}
		if !w.fallback && w.plan.Counted != nil && slices.Contains(w.plan.Counted, id) {
			fx = append(fx, w.fallBack()...)
		}
	}
	return append(fx, w.check()...)
}

// fallBack lets every acknowledgement count from now on, held-back ones included, and
// sends the write to the deferred replicas (already hinted: the hint's replay will find
// the write applied, which is harmless).
func (w *Write) fallBack() []Effect {
	w.fallback = true
	w.acks += w.spare
	w.spare = 0
	if w.replied {
		return nil
	}
	var fx []Effect
	for _, id := range w.plan.Deferred {
		w.pending[id] = true
		fx = append(fx, SendWrite{To: id, Mutation: w.m})
	}
	return fx
}

// check replies once the write has enough acknowledgements, or can no longer get them.
func (w *Write) check() []Effect {
	if w.replied {
		return nil
	}
	// Any pending target may still count: directly, or after a counted one fails and the
	// write falls back to every acknowledgement (spare ones included).
	possible := w.acks + w.spare + len(w.pending)
	switch {
	case w.acks >= w.need:
		w.replied = true
		return []Effect{Reply{}}
	case possible < w.need:
		w.replied = true
		return []Effect{Reply{Err: ErrTimeout}}
	}
	return nil
}

// FellBack reports whether a counted target failed or was slow (OnSlow), so that every
// acknowledgement counted from then on (the engine-aware write waiting for the
// read-optimized replica).
func (w *Write) FellBack() bool { return w.fallback }

// WaitsForCounted reports whether only some targets count toward the level (the plan has
// Counted), so that the driver should call OnSlow if they take too long.
func (w *Write) WaitsForCounted() bool { return !w.replied && w.plan.Counted != nil && !w.fallback }

// OnSlow takes the driver's decision that the counted targets are too slow (the paper's
// timeout on a synchronous write): from then on every acknowledgement counts, as when a
// counted target fails. Targets that have not answered stay pending and get no hint
// unless they fail or time out.
func (w *Write) OnSlow() []Effect {
	if !w.WaitsForCounted() {
		return nil
	}
	w.slowed = true
	return append(w.fallBack(), w.check()...)
}

// Slowed reports whether the write fell back because of OnSlow rather than a failure.
func (w *Write) Slowed() bool { return w.slowed }

// Done reports whether every target has answered or timed out: the driver may forget
// the request.
func (w *Write) Done() bool { return w.replied && len(w.pending) == 0 }
