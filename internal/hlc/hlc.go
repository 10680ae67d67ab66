// Package hlc issues write timestamps: microseconds close to wall-clock time that never go
// backwards and never repeat, even when the wall clock steps back. It is a hybrid logical
// clock reduced to one integer, the form Cassandra-style last-write-wins timestamps need;
// Observe folds in timestamps seen from other nodes so that causally later writes get
// larger timestamps whatever the clock skew between nodes.
//
// The clock is pure apart from its injected physical source, which tests replace.
package hlc

import (
	"sync"
	"time"
)

// Clock issues strictly increasing timestamps in microseconds. It is safe for concurrent
// use.
type Clock struct {
	physical func() int64
	mu       sync.Mutex
	last     int64
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last+1, p)
	return c.last
}

// Observe records a timestamp seen elsewhere so that later Now calls exceed it.
func (c *Clock) Observe(ts int64) {
	c.mu.Lock()
	c.last = max(c.last, ts)
	c.mu.Unlock()
}

// Physical returns the physical clock's reading, for expiry computations that must not
// drift with logical increments.
func (c *Clock) Physical() int64 { return c.physical() }
