package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// call is one outstanding request. Whoever removes it from clientConn.pending (the reader
// with the response, fail with the connection's error, the sweeper at the deadline)
// delivers exactly one result: on ch, which has room for it so the send never blocks, or,
// for a call made with Go, to done after giving back the call's in-flight slot.
type call struct {
	ch       chan result
	done     func([]byte, error) // set for Go
	deadline time.Time           // Go's calls only: when the sweeper gives up on it
}

// deliver hands r to whoever waits for cl, which the caller has removed from pending.
func (cn *clientConn) deliver(cl *call, r result) {
	if cl.done == nil {
		cl.ch <- r
		return
	}
	<-cn.inflight
	cl.done(r.payload, r.err)
}

type result struct {
	payload []byte
	err     error
}

var callPool = sync.Pool{New: func() any { return &call{ch: make(chan result, 1)} }}

// clientConn is one connection of a Client: a writer goroutine (frameWriter) and a reader
// goroutine that matches responses to calls by request ID.
type clientConn struct {
	c        *Client
	nc       net.Conn
	version  byte      // the frame version the connection speaks, agreed by the hello
	dec      *Decoder  // the reader's, which read the hello's answer
	rcv      *receiver // the reader's, for the stamps of the responses
	w        *frameWriter
	inflight chan struct{} // one token per outstanding call (MaxInFlight)
	dead     chan struct{} // closed by fail
	healthy  atomic.Bool   // a response has arrived: the peer speaks the protocol

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call // nil once the connection failed
	goCalls int              // how many of pending were made with Go
	// armSweep wakes the sweeper when a Go call is registered; it sleeps while none is
	// pending, so an idle connection costs no timer wake-ups (a node has one per peer).
	armSweep chan struct{}
}

func newClientConn(c *Client, nc net.Conn, version byte, dec *Decoder, rcv *receiver) *clientConn {
	cn := &clientConn{
		c:        c,
		nc:       nc,
		version:  version,
		dec:      dec,
		rcv:      rcv,
		inflight: make(chan struct{}, c.cfg.MaxInFlight),
		dead:     make(chan struct{}),
		pending:  make(map[uint64]*call),
		armSweep: make(chan struct{}, 1),
	}
	cn.w = newFrameWriter(nc, c.cfg.SendQueueDepth, cn.dead, nil, &c.counts, c.cfg.Clock, c.cfg.Epoch, cn.fail)
	return cn
}

// overloadTimer is the QueueWait budget of one call, started at the first wait.
type overloadTimer struct {
	d time.Duration
	t *time.Timer
}

func (o *overloadTimer) C() <-chan time.Time {
	if o.t == nil {
		o.t = time.NewTimer(o.d)
	}
	return o.t.C
}

func (o *overloadTimer) stop() {
	if o.t != nil {
		o.t.Stop()
	}
}

func (cn *clientConn) call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	wait := overloadTimer{d: cn.c.cfg.QueueWait}
	defer wait.stop()
	if err := cn.acquire(ctx, method, &wait); err != nil {
		return nil, err
	}
	r := cn.roundTrip(ctx, method, payload, &wait)
	<-cn.inflight
	return r.payload, r.err
}

// roundTrip registers the call, queues the request and waits for its result. The caller
// holds an in-flight slot.
func (cn *clientConn) roundTrip(ctx context.Context, method uint16, payload []byte, wait *overloadTimer) result {
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return result{err: cn.ctxErr(ctx, method)}
		}
	}
	cl := callPool.Get().(*call)
	id, err := cn.register(cl, method)
	if err != nil {
		callPool.Put(cl)
		return result{err: err}
	}
	if err := cn.enqueue(ctx, method, id, timeout, payload, wait); err != nil {
		cn.abandon(id, cl)
		return result{err: err}
	}
	select {
	case r := <-cl.ch:
		callPool.Put(cl)
		return r
	case <-ctx.Done():
		cn.abandon(id, cl)
		return result{err: cn.ctxErr(ctx, method)}
	}
}

// acquire takes an in-flight slot, waiting within the QueueWait budget.
func (cn *clientConn) acquire(ctx context.Context, method uint16, wait *overloadTimer) error {
	select {
	case cn.inflight <- struct{}{}:
		return nil
	default:
	}
	select {
	case cn.inflight <- struct{}{}:
		return nil
	case <-ctx.Done():
		return cn.ctxErr(ctx, method)
	case <-wait.C():
		return fmt.Errorf("transport: call %d to %s: %w: %d calls in flight", method, cn.c.addr, ErrOverloaded, cap(cn.inflight))
	case <-cn.dead:
		return fmt.Errorf("transport: call %d to %s: %w: connection closed", method, cn.c.addr, ErrUnreachable)
	}
}

// register makes cl pending under a new request ID.
func (cn *clientConn) register(cl *call, method uint16) (uint64, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.pending == nil {
		return 0, fmt.Errorf("transport: call %d to %s: %w: connection closed", method, cn.c.addr, ErrUnreachable)
	}
	cn.nextID++
	cn.pending[cn.nextID] = cl
	if cl.done != nil {
		cn.goCalls++
		select {
		case cn.armSweep <- struct{}{}:
		default: // already armed
		}
	}
	return cn.nextID, nil
}

// enqueue queues request id for the writer (with a copy of payload), waiting within the
// QueueWait budget for room. When it fails nothing was queued; the call is still pending.
func (cn *clientConn) enqueue(ctx context.Context, method uint16, id uint64, timeout time.Duration, payload []byte, wait *overloadTimer) error {
	var f outFrame
	putHeader(f.hdr[:], cn.version, TypeRequest, method, id, timeout, len(payload))
	f.payload, f.pooled = copyPayload(payload)
	select {
	case cn.w.q <- f:
		return nil
	default:
	}
	var err error
	select {
	case cn.w.q <- f:
		return nil
	case <-ctx.Done():
		err = cn.ctxErr(ctx, method)
	case <-wait.C():
		err = fmt.Errorf("transport: call %d to %s: %w: send queue of %d frames full", method, cn.c.addr, ErrOverloaded, cap(cn.w.q))
	case <-cn.dead:
		err = fmt.Errorf("transport: call %d to %s: %w: connection closed", method, cn.c.addr, ErrUnreachable)
	}
	if f.pooled != nil {
		payloadPool.Put(f.pooled)
	}
	return err
}

func (cn *clientConn) ctxErr(ctx context.Context, method uint16) error {
	return fmt.Errorf("transport: call %d to %s: %w", method, cn.c.addr, ctx.Err())
}

// abandon withdraws a call its caller no longer waits for. If the reader or fail already
// took it, their result is on its way and is drained, so the call can be reused.
func (cn *clientConn) abandon(id uint64, cl *call) {
	cn.mu.Lock()
	if cn.take(id, cl) != nil {
		cn.mu.Unlock()
	} else {
		cn.mu.Unlock()
		<-cl.ch
	}
	callPool.Put(cl)
}

func (cn *clientConn) readLoop() {
	for {
		f, err := cn.dec.Next()
		if err != nil {
			cn.fail(err)
			return
		}
		cn.rcv.received(&f)
		var r result
		switch f.Type {
		case TypeResponse:
			r.payload = f.Payload
		case TypeError:
			r.err = responseError(&f)
		default:
			cn.fail(fmt.Errorf("%w: a client received a %s frame", ErrMalformedFrame, f.Type))
			return
		}
		if !cn.healthy.Load() {
			cn.healthy.Store(true)
		}
		cn.mu.Lock()
		cl := cn.take(f.ID, nil)
		cn.mu.Unlock()
		if cl != nil { // else the caller gave up: the late response is dropped
			cn.deliver(cl, r)
		}
	}
}

// responseError is the error a call answered by error frame f returns.
func responseError(f *Frame) error {
	re := parseErrorPayload(f.Payload)
	if re.Code == CodeStaleEpoch {
		return &StaleEpochError{Epoch: f.Epoch}
	}
	return re
}

// fail tears the connection down once: outstanding calls get ErrConnectionLost wrapping
// cause, the socket is closed (which ends the reader), the writer exits, and the client
// forgets the connection.
func (cn *clientConn) fail(cause error) {
	cn.mu.Lock()
	pending := cn.pending
	cn.pending = nil
	cn.mu.Unlock()
	if pending == nil {
		return
	}
	close(cn.dead)
	cn.nc.Close()
	cn.c.connLost(cn, cause)
	err := fmt.Errorf("transport: %s: %w: %w", cn.c.addr, ErrConnectionLost, cause)
	for _, cl := range pending {
		cn.deliver(cl, result{err: err})
	}
}

// sweepInterval is how often a connection looks for Go calls past their deadline.
const sweepInterval = 50 * time.Millisecond

// sweep fails the Go calls whose deadline has passed, every sweepInterval until the
// connection dies; Call's callers watch their own deadline. A peer normally answers a
// late request with a deadline error itself, so this matters when it cannot answer (it
// hangs while the connection stays up).
func (cn *clientConn) sweep() {
	var expired []*call
	for {
		select { // asleep until a Go call is pending
		case <-cn.dead:
			return
		case <-cn.armSweep:
		}
		t := time.NewTicker(sweepInterval)
		for active := true; active; {
			select {
			case <-cn.dead:
				t.Stop()
				return
			case now := <-t.C:
				cn.mu.Lock()
				for id, cl := range cn.pending {
					if cl.done != nil && now.After(cl.deadline) {
						cn.take(id, cl)
						expired = append(expired, cl)
					}
				}
				active = cn.goCalls > 0
				cn.mu.Unlock()
				for i, cl := range expired {
					cn.deliver(cl, result{err: fmt.Errorf("transport: call to %s: %w", cn.c.addr, context.DeadlineExceeded)})
					expired[i] = nil
				}
				expired = expired[:0]
			}
		}
		t.Stop()
	}
}

// take removes call id from pending and returns it, or nil if it is not pending (or, when
// want is not nil, if another call is pending under id). cn.mu is held.
func (cn *clientConn) take(id uint64, want *call) *call {
	cl := cn.pending[id]
	if cl == nil || want != nil && cl != want {
		return nil
	}
	delete(cn.pending, id)
	if cl.done != nil {
		cn.goCalls--
	}
	return cl
}

// goCall is Client.Go on this connection.
func (cn *clientConn) goCall(ctx context.Context, method uint16, payload []byte, done func([]byte, error)) {
	dl, ok := ctx.Deadline()
	if !ok {
		done(nil, fmt.Errorf("transport: call %d to %s: Go needs a context with a deadline", method, cn.c.addr))
		return
	}
	wait := overloadTimer{d: cn.c.cfg.QueueWait}
	defer wait.stop()
	if err := cn.acquire(ctx, method, &wait); err != nil {
		done(nil, err)
		return
	}
	timeout := time.Until(dl)
	if timeout <= 0 {
		<-cn.inflight
		done(nil, cn.ctxErr(ctx, method))
		return
	}
	cl := &call{done: done, deadline: dl}
	id, err := cn.register(cl, method)
	if err == nil {
		if err = cn.enqueue(ctx, method, id, timeout, payload, &wait); err == nil {
			return
		}
		cn.mu.Lock()
		mine := cn.take(id, cl) != nil
		cn.mu.Unlock()
		if !mine { // the reader, fail or the sweeper took it and delivers
			return
		}
	}
	<-cn.inflight
	done(nil, err)
}
