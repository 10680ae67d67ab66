// Package hlc issues write timestamps: microseconds close to wall-clock time that never go
// backwards and never repeat, even when the wall clock steps back. It is a hybrid logical
// clock reduced to one integer, the form Cassandra-style last-write-wins timestamps need;
// Observe folds in timestamps seen from other nodes so that causally later writes get
// larger timestamps whatever the clock skew between nodes. Nodes send Last with every
// internode frame and observe what they receive (see package transport and
// docs/design/clocks.md).
//
// The clock is pure apart from its injected physical source, which tests replace. OutOfSync
// is the pure rule that decides, from its peers' clock offsets, whether a node's own
// physical clock is too far off to write with.
package hlc

import (
	"sync/atomic"
	"time"
)

// Clock issues strictly increasing timestamps in microseconds. It is safe for concurrent
// use and takes no lock: last is advanced by compare-and-swap, since every internode frame
// reads it and every frame received may advance it.
type Clock struct {
	physical func() int64
	last     atomic.Int64 // the largest timestamp issued or observed
}

// New returns a clock reading physical (microseconds); nil means the system clock.
func New(physical func() int64) *Clock {
	if physical == nil {
		physical = func() int64 { return time.Now().UnixMicro() }
	}
	return &Clock{physical: physical}
}

// Now returns a timestamp larger than every one returned or observed before.
func (c *Clock) Now() int64 {
	p := c.physical()
	for {
		last := c.last.Load()
		next := max(last+1, p)
		if c.last.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Observe records a timestamp seen elsewhere so that later Now calls exceed it. It does
// not bound ts: a node whose physical clock is too far off stops writing instead (see
// OutOfSync), and a row read with a timestamp far ahead must still be overwritten by a
// later write (docs/design/clocks.md says why kura refuses rather than clamps).
func (c *Clock) Observe(ts int64) {
	for {
		last := c.last.Load()
		if ts <= last || c.last.CompareAndSwap(last, ts) {
			return
		}
	}
}

// Last returns the largest timestamp Now returned or Observe saw (0 before any), without
// issuing one or reading the physical clock: what a node stamps on a message, so that the
// receiver, observing it, issues only larger timestamps afterwards.
func (c *Clock) Last() int64 { return c.last.Load() }

// Physical returns the physical clock's reading, for expiry computations that must not
// drift with logical increments, and for estimating other nodes' clock offsets.
func (c *Clock) Physical() int64 { return c.physical() }

// OutOfSync reports whether a node's physical clock is too far off to issue timestamps
// with, given the offsets of its peers' clocks from its own (peer minus self, as
// estimated from their messages): when more than half of them are further off than
// maxOffset in either direction. A node outside a majority of agreeing clocks is then the
// odd one out; with one peer, either may be, and both refuse (as CockroachDB's nodes do).
// No peers, or maxOffset <= 0 (no limit), is never out of sync.
func OutOfSync(offsets []time.Duration, maxOffset time.Duration) bool {
	if maxOffset <= 0 || len(offsets) == 0 {
		return false
	}
	far := 0
	for _, o := range offsets {
		if o > maxOffset || o < -maxOffset {
			far++
		}
	}
	return 2*far > len(offsets)
}
