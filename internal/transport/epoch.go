package transport

import (
	"context"
	"errors"
	"fmt"
)

// Ring epochs on frames (package doc, "Epochs"). A node's epoch names the ring version it
// routes by; it only increases, and 0 means the node knows none (it has not joined, or it
// predates epochs). Every version 2 frame carries its sender's epoch, stamped by the
// connection's writer (ClientConfig.Epoch, ServerConfig.Epoch); the reader of a frame
// whose epoch is above its own tells its node (ObserveEpoch), and a server may refuse a
// request planned at an older epoch than its own (ServerConfig.RefuseStaleEpoch).

// ErrStaleEpoch is what errors.Is finds in a *StaleEpochError.
var ErrStaleEpoch = errors.New("transport: stale epoch")

// StaleEpochError is a server's refusal of a request planned at a ring epoch older than its
// own (CodeStaleEpoch): the handler did not run, so nothing was applied, and the caller
// may catch up to Epoch and retry. By the time Call returns it, the client's ObserveEpoch
// has been given Epoch.
type StaleEpochError struct {
	// Epoch is the server's epoch, newer than the request's.
	Epoch uint64
}

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("transport: stale epoch: the peer is at epoch %d", e.Epoch)
}

// Is reports whether target is ErrStaleEpoch.
func (e *StaleEpochError) Is(target error) bool { return target == ErrStaleEpoch }

// IsStaleEpoch reports whether err is, or wraps, a server's refusal of a stale request, and
// returns the server's epoch.
func IsStaleEpoch(err error) (uint64, bool) {
	var se *StaleEpochError
	if errors.As(err, &se) {
		return se.Epoch, true
	}
	return 0, false
}

// receivedEpoch is what a connection's reader does with a frame's epoch: if it is above
// the node's own (r.epoch), r.observeEpoch learns of it. It returns the node's epoch, or
// 0 when the frame carries none (then the node's is not read: a peer that sends no
// epochs costs nothing).
func (r *receiver) receivedEpoch(f *Frame) uint64 {
	if f.Epoch == 0 {
		return 0
	}
	var local uint64
	if r.epoch != nil {
		local = r.epoch()
	}
	if f.Epoch > local && r.observeEpoch != nil {
		r.observeEpoch(f.Epoch)
	}
	return local
}

// refuses reports whether the server refuses request f, whose epoch is below the node's
// (local, as receivedEpoch returned it).
func (s *Server) refuses(f *Frame, local uint64) bool {
	return f.Epoch != 0 && f.Epoch < local && s.cfg.RefuseStaleEpoch != nil && s.cfg.RefuseStaleEpoch(f.Method)
}

// staleEpochFrame is the refusal of request f (CodeStaleEpoch); it holds an in-flight
// slot. The frame's epoch stamp, which the writer puts on it like on any frame, is the
// server's epoch as it goes out: at least local, since epochs only increase. A client that
// predates epochs never gets one (it sends epoch 0, which is never refused); were it to,
// it would see a *RemoteError with the message.
func staleEpochFrame(f *Frame, local uint64) outFrame {
	return errorFrame(*f, CodeStaleEpoch, fmt.Sprintf(
		"stale epoch: method %d was planned at epoch %d, this node is at epoch %d", f.Method, f.Epoch, local))
}

// epochKey is the context key of a handler's requestCtx.
type epochKey struct{}

// requestCtx is the context of a handler whose request carries an epoch: the request's
// own context (the connection's, or its deadline's) and the epoch, which RequestEpoch
// finds through Value, wherever the handler's own contexts wrap it.
type requestCtx struct {
	context.Context
	epoch uint64
}

// Value returns c itself (not the epoch, which would be boxed) for epochKey.
func (c *requestCtx) Value(key any) any {
	if _, ok := key.(epochKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// RequestEpoch returns the ring epoch the request being handled was planned under: the
// epoch of its frame, 0 when it carries none (a version 1 frame, a client without
// ClientConfig.Epoch, or a node with no ring). ctx is the context Handle was given, or
// one derived from it; any other context gives 0.
func RequestEpoch(ctx context.Context) uint64 {
	if c, ok := ctx.Value(epochKey{}).(*requestCtx); ok {
		return c.epoch
	}
	return 0
}

// requestCtxBatch is how many requestCtx a connection's reader allocates at once: 85 of
// 24 bytes and the runtime's 8-byte header of an object with pointers fill a 2 KiB size
// class (64 took 1792 bytes for 1536).
const requestCtxBatch = 85

// requestCtxs hands out the requestCtx of one connection's requests. A requestCtx is
// never reused (a handler may keep its context after it returns, and must then still see
// its own request's epoch), so a context per request would be an allocation per request;
// they are allocated a batch at a time instead: 24 bytes per request, and an allocation
// per requestCtxBatch requests. A batch stays in memory while any of its contexts is
// referenced: 2 KiB per context a handler keeps. Only the connection's reader uses it.
type requestCtxs []requestCtx

// next returns a fresh requestCtx for epoch; the handler sets its Context.
func (s *requestCtxs) next(epoch uint64) *requestCtx {
	if len(*s) == 0 {
		*s = make([]requestCtx, requestCtxBatch)
	}
	c := &(*s)[0]
	*s = (*s)[1:]
	c.epoch = epoch
	return c
}
