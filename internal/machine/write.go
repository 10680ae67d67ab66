package machine

import (
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// WriteOp is one coordinated write: a coord.Write with its timers (the deadline, and the
// write fallback when the policy waits for some replicas only) and its bookkeeping. Not
// safe for concurrent use.
type WriteOp struct {
	n        *Node
	w        *coord.Write
	replicas []coord.Replica
	start    time.Time
	deadline time.Time
	slowAt   time.Time // zero: no write fallback
	timedOut bool
	replied  bool
	counted  bool        // WriteDone reported
	trace    *writeTrace // nil unless slow writes are logged
}

// StartWrite begins coordinating m at level, at now, in op, which the caller owns (so that
// a driver can reuse ops) and must not touch until the op is Done. op's previous state,
// if any, is discarded.
//
// A key whose range is moving (SetPlacement) is written to its current and its pending
// replica sets and acknowledged once the level is met in each (coord.StartWriteGroups);
// either set's down replicas get hints.
func (n *Node) StartWrite(op *WriteOp, now time.Time, m row.Mutation, level coord.Level) Ready {
	var (
		w        *coord.Write
		fx       []coord.Effect
		replicas []coord.Replica
	)
	s := n.rangeSetsOf(n.view.Load(), ring.TokenOf(m.Key))
	if s != nil && s.groups != nil {
		replicas = s.all
		w, fx = coord.StartWriteGroups(m, level, n.annotateGroups(s.groups, now), n.cfg.Policy)
	} else {
		if s != nil {
			replicas = s.read
		}
		if n.pacer != nil {
			replicas = n.pacer.Annotate(replicas, now)
		}
		w, fx = coord.StartWrite(m, level, replicas, n.cfg.Policy)
	}
	if n.load != nil {
		n.load.Wrote(m.Key, now)
	}
	*op = WriteOp{n: n, w: w, replicas: replicas, start: now, deadline: now.Add(n.cfg.Timeout)}
	if n.cfg.SlowWriteAfter > 0 {
		op.trace = &writeTrace{start: now}
	}
	r := op.ready(now, fx)
	if !r.Replied && n.cfg.WriteSlowAfter > 0 && w.WaitsForCounted() {
		op.slowAt = now.Add(n.cfg.WriteSlowAfter)
	}
	return r
}

// annotateGroups returns groups with the pacer's Backlogged marks (a copy when it marks
// any).
func (n *Node) annotateGroups(groups [][]coord.Replica, now time.Time) [][]coord.Replica {
	if n.pacer == nil {
		return groups
	}
	out := make([][]coord.Replica, len(groups))
	for i, g := range groups {
		out[i] = n.pacer.Annotate(g, now)
	}
	return out
}

// Answer takes replica from's answer (nil: applied), which came at at.
func (op *WriteOp) Answer(at time.Time, from ring.NodeID, err error) Ready {
	if op.trace != nil && !op.replied {
		op.trace.answers = append(op.trace.answers, answer{from: from, err: err, at: at})
	}
	return op.ready(at, op.w.OnResponse(from, err))
}

// Next returns when the op's next timer is due (call Timer then), or the zero time when
// it has none left.
func (op *WriteOp) Next() time.Time {
	switch {
	case op.timedOut || op.w.Done():
		return time.Time{}
	case !op.slowAt.IsZero() && !op.replied && op.slowAt.Before(op.deadline):
		return op.slowAt
	}
	return op.deadline
}

// Timer fires the timers due at now: the write fallback (every acknowledgement counts
// from then on), then the deadline (replicas that have not answered get hints, and the
// client ErrTimeout unless the write had succeeded).
func (op *WriteOp) Timer(now time.Time) Ready {
	var r Ready
	if !op.slowAt.IsZero() && !now.Before(op.slowAt) {
		op.slowAt = time.Time{}
		r = op.ready(now, op.w.OnSlow())
	}
	if !op.timedOut && !now.Before(op.deadline) {
		op.timedOut = true
		more := op.ready(now, op.w.OnTimeout())
		r.Effects = append(r.Effects, more.Effects...)
		if more.Replied {
			r.Reply, r.Replied, r.SlowWrite = more.Reply, true, more.SlowWrite
		}
	}
	return r
}

// Done reports whether every replica sent the write has answered or timed out: the driver
// may forget the op.
func (op *WriteOp) Done() bool { return op.w.Done() }

// Deadline is when the op times out: the driver bounds what it sends for the op by it.
func (op *WriteOp) Deadline() time.Time { return op.deadline }

// MaxAnswers is how many answers the op can take: one per replica.
func (op *WriteOp) MaxAnswers() int { return len(op.replicas) }

// Own adds d to the time the coordinator spent on its own part of the write (dispatching
// the local write, storing hints), which a slow write's log line shows.
func (op *WriteOp) Own(d time.Duration) {
	if op.trace != nil {
		op.trace.own += d
	}
}

// Traced reports whether the op records its answers for the slow write log, so that the
// driver measures its own time (Own) only then.
func (op *WriteOp) Traced() bool { return op.trace != nil }

// ready does the bookkeeping of fx, emitted at now, and turns it into a Ready.
func (op *WriteOp) ready(now time.Time, fx []coord.Effect) Ready {
	var r Ready
	r.take(fx)
	n := op.n
	for _, e := range r.Effects {
		switch e := e.(type) {
		case coord.SendWrite:
			n.metrics.SentTo(roleOf(op.replicas, e.To), true)
			if n.pacer != nil && e.Async {
				n.pacer.Sent(e.To, 1, now)
			}
		case coord.StoreHint:
			if e.Deferred {
				n.metrics.Deferred()
			}
		}
	}
	if r.Replied {
		op.replied = true
		took := now.Sub(op.start)
		n.metrics.Request("write", took, r.Reply.Err)
		if op.trace != nil {
			r.SlowWrite = n.slowLog.check(n.cfg.SlowWriteAfter, took, now, op.trace, op.replicas, r.Reply.Err)
		}
	}
	if !op.counted && op.w.Done() {
		op.counted = true
		n.metrics.WriteDone(op.w.FellBack(), op.w.Slowed())
	}
	return r
}
