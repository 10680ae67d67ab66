// Package lazyctx provides a context with a deadline whose timer starts only if someone
// waits for it.
//
// context.WithDeadline starts a timer at once, and a cluster node creates one or two such
// contexts per request (the coordinator's, and each replica's handler's) while almost
// none of them is ever waited on: the work finishes long before the deadline, and most
// callees only read Deadline to pass it on. On a busy node the timers' allocation and
// heap operations showed up in profiles. A lazy context is a few words until Done is
// called; then it becomes a real context.WithDeadline.
package lazyctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Context is a child of a parent context with a deadline. The zero value is not usable;
// use WithDeadline.
type Context struct {
	parent   context.Context
	deadline time.Time

	once    sync.Once
	started atomic.Bool
	real    context.Context
	cancel  context.CancelFunc
}

var _ context.Context = (*Context)(nil)

// WithDeadline returns a context that is done when parent is or at deadline (the earlier
// of deadline and parent's), like context.WithDeadline, but without a timer until Done is
// called. Release must be called once the context is no longer used.
func WithDeadline(parent context.Context, deadline time.Time) *Context {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &Context{parent: parent, deadline: deadline}
}

// realCtx returns the context.WithDeadline this context becomes once waited on.
func (c *Context) realCtx() context.Context {
	c.once.Do(func() {
		c.real, c.cancel = context.WithDeadline(c.parent, c.deadline)
		c.started.Store(true)
	})
	return c.real
}

// Deadline implements context.Context.
func (c *Context) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context; it starts the timer.
func (c *Context) Done() <-chan struct{} { return c.realCtx().Done() }

// Err implements context.Context. Before the deadline, with the parent not done and
// nobody waiting, it is nil without starting anything; otherwise it is the real
// context's (which, created after the deadline, is done at once).
func (c *Context) Err() error {
	if !c.started.Load() && c.parent.Err() == nil && time.Now().Before(c.deadline) {
		return nil
	}
	return c.realCtx().Err()
}

// Value implements context.Context.
func (c *Context) Value(key any) any { return c.parent.Value(key) }

// Release frees the timer, if one was started. The context then reports itself canceled
// (if it was waited on) and must not be used.
func (c *Context) Release() {
	if c.started.Load() {
		c.cancel()
	}
}
