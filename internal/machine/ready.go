package machine

import (
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// Ready is what the driver must do after one input to an op: carry out Effects in order
// (coord.SendWrite, coord.SendRead and coord.StoreHint; never coord.Reply), then, when
// Replied, answer the client with Reply, and log SlowWrite when it is set.
type Ready struct {
	Effects []coord.Effect
	Reply   coord.Reply
	Replied bool
	// SlowWrite, when not nil, is a write slower than Config.SlowWriteAfter to log.
	SlowWrite *SlowWrite
}

// take moves fx's reply, if any, into r, and keeps the other effects in fx's own array
// (coord returns a new slice with every input, so the request path allocates no other).
func (r *Ready) take(fx []coord.Effect) {
	r.Effects = fx[:0]
	for _, e := range fx {
		if reply, ok := e.(coord.Reply); ok {
			r.Reply, r.Replied = reply, true
			continue
		}
		r.Effects = append(r.Effects, e)
	}
}

// roleOf returns the engine role of replica id in replicas.
func roleOf(replicas []coord.Replica, id ring.NodeID) ring.Role {
	for _, r := range replicas {
		if r.ID == id {
			return r.Role
		}
	}
	return ring.RoleUnknown
}

// WriteAnswered takes the answer to a write sent to replica to (asynchronously when the
// coord.SendWrite said Async) that took took, came at now and failed or not. The driver
// calls it once for every coord.SendWrite an op emitted that was not a read repair,
// whether or not the op still takes answers, so that the replicas' paces count every
// write they were sent.
func (n *Node) WriteAnswered(to ring.NodeID, async bool, took time.Duration, failed bool, now time.Time) {
	switch {
	case n.pacer == nil:
	case async:
		n.pacer.Answered(to, 1, took, failed, now)
	default: // a late synchronous replica slows the asynchronous ones on its host
		n.pacer.Synchronous(to, took, failed, now)
	}
}

// ReadAnswered takes the answer to a read (coord.SendRead) sent to replica to that took
// took and came at now: load-aware routing ranks replicas by these. The driver calls it
// once for every coord.SendRead an op emitted.
func (n *Node) ReadAnswered(to ring.NodeID, took time.Duration, now time.Time) {
	if n.load != nil {
		n.load.Observe(to, took, now)
	}
}
