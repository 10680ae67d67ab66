package machine

import (
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// ReadOp is one coordinated read: a coord.Read with its timers (the deadline, and the read
// fallback) and the decision, when the fallback fires, whether a spare may be asked. Not
// safe for concurrent use. It is over once it has replied: later answers need not be fed
// to it (read repairs it sent carry on without it).
type ReadOp struct {
	n        *Node
	rd       *coord.Read
	replicas []coord.Replica
	start    time.Time
	deadline time.Time
	slowAt   time.Time // zero: no (more) read fallback
	replied  bool
}

// StartRead begins coordinating a read of key at level, at now, in op, which the caller
// owns (see StartWrite) and must not touch until the op has replied. op's previous
// state, if any, is discarded.
func (n *Node) StartRead(op *ReadOp, now time.Time, key []byte, level coord.Level) Ready {
	replicas := n.Replicas(key)
	if n.load != nil {
		replicas = n.load.Annotate(key, replicas, now)
	}
	*op = ReadOp{n: n, replicas: replicas, start: now, deadline: now.Add(n.cfg.Timeout)}
	rd, fx := coord.StartRead(key, level, replicas, n.cfg.Policy, n.cfg.Repair)
	op.rd = rd
	r := op.ready(now, fx)
	if n.cfg.ReadSlowAfter > 0 {
		n.retries.Earn()
		if !r.Replied {
			after := n.cfg.ReadSlowAfter
			if n.latencies != nil {
				after = n.latencies.Threshold()
			}
			op.slowAt = now.Add(after)
		}
	}
	return r
}

// Answer takes replica from's answer to a read, which came at at.
func (op *ReadOp) Answer(at time.Time, from ring.NodeID, resp coord.ReadResponse) Ready {
	return op.ready(at, op.rd.OnResponse(from, resp))
}

// RepairAnswer takes replica from's answer to a read repair write (nil: applied).
func (op *ReadOp) RepairAnswer(at time.Time, from ring.NodeID, err error) Ready {
	return op.ready(at, op.rd.OnRepairResponse(from, err))
}

// Next returns when the op's next timer is due (call Timer then), or the zero time when
// it has none left.
func (op *ReadOp) Next() time.Time {
	switch {
	case op.replied:
		return time.Time{}
	case !op.slowAt.IsZero() && op.slowAt.Before(op.deadline):
		return op.slowAt
	}
	return op.deadline
}

// Timer fires the timers due at now: the read fallback, then the deadline.
//
// At the fallback, once per read, a spare is asked in place of each late replica while
// the retry budget lasts (route.RetryBudget); past the budget only when every spare to
// ask has lately answered this coordinator in under half the fallback's threshold
// (load-aware routing): the budget keeps retries off disks that every read is late on,
// and spares that answer quickly are not among them (a saturated B+tree's reads go to the
// lsm nodes, whose disks are idle); once they slow down they stop being quick.
func (op *ReadOp) Timer(now time.Time) Ready {
	var r Ready
	n := op.n
	if !op.slowAt.IsZero() && !now.Before(op.slowAt) && !op.replied {
		op.slowAt = time.Time{}
		switch {
		case !op.rd.CanSlow(): // nothing left to ask: the budget is not spent
		case n.retries.Spend():
			r = op.ready(now, op.rd.OnSlow())
		case n.load != nil && n.load.Quick(op.rd.SlowSpares(), n.cfg.ReadSlowAfter/2, now):
			n.metrics.RetryToQuickSpares()
			r = op.ready(now, op.rd.OnSlow())
		default:
			n.metrics.RetryDenied()
		}
	}
	if !op.replied && !now.Before(op.deadline) {
		more := op.ready(now, op.rd.OnTimeout())
		r.Effects = append(r.Effects, more.Effects...)
		r.Reply, r.Replied = more.Reply, more.Replied
	}
	return r
}

// Deadline is when the op times out: the driver bounds what it sends for the op by it.
func (op *ReadOp) Deadline() time.Time { return op.deadline }

// MaxAnswers is how many answers the op can take: a digest read, a data read and a repair
// per replica.
func (op *ReadOp) MaxAnswers() int { return 3 * len(op.replicas) }

// LocalInline reports whether the driver may run the local replica's reads in the
// request's own goroutine. Not with a read fallback unless the local replica is in
// memory: a read that may wait on a disk must leave the fallback's timer free to fire.
func (op *ReadOp) LocalInline() bool {
	return op.n.cfg.ReadSlowAfter == 0 || roleOf(op.replicas, op.n.cfg.Self) == ring.InMemory
}

// ready does the bookkeeping of fx, emitted at now, and turns it into a Ready.
func (op *ReadOp) ready(now time.Time, fx []coord.Effect) Ready {
	var r Ready
	r.take(fx)
	n := op.n
	for _, e := range r.Effects {
		switch e := e.(type) {
		case coord.SendRead:
			n.metrics.SentTo(roleOf(op.replicas, e.To), false)
		case coord.SendWrite:
			n.metrics.Repair()
			n.metrics.SentTo(roleOf(op.replicas, e.To), true)
		}
	}
	if r.Replied && !op.replied {
		op.replied = true
		n.metrics.ReadDone(op.rd.Failures(), op.rd.Disagreed(), op.rd.Slowed())
		took := now.Sub(op.start)
		if n.latencies != nil {
			n.latencies.Observe(now, took)
		}
		n.metrics.Request("read", took, r.Reply.Err)
	}
	return r
}
