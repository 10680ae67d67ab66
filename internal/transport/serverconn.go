package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/lazyctx"
)

// maxIdleWorkers bounds the handler goroutines a connection keeps waiting for requests.
const maxIdleWorkers = 16

// serverConn serves one connection: serve reads requests and hands each to a handler
// goroutine (holding one of slots); the frameWriter writes the responses and gives the
// slots back once they are written.
//
// Handler goroutines are reused: one that finished waits on work for the next request,
// unless maxIdleWorkers already wait. A fresh goroutine per request would start on a small
// stack and copy it as the handler's calls deepen, which cost a tenth of a replica's CPU
// in profiles (pebble's Get alone is deep).
type serverConn struct {
	s        *Server
	nc       net.Conn
	ctx      context.Context // parent of this connection's handler contexts
	cancel   context.CancelFunc
	w        *frameWriter
	slots    chan struct{}
	dead     chan struct{}  // closed by abort
	draining chan struct{}  // closed by drain
	handlers sync.WaitGroup // one per request being handled
	work     chan request   // unbuffered: a send succeeds only if an idle worker waits
	idle     atomic.Int32   // workers waiting on work
	ctxs     requestCtxs    // the reader's: contexts of the requests that carry an epoch

	abortOnce, drainOnce sync.Once
	isDraining           atomic.Bool
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	ctx, cancel := context.WithCancel(s.ctx)
	sc := &serverConn{
		s: s, nc: nc, ctx: ctx, cancel: cancel,
		slots:    make(chan struct{}, s.cfg.MaxInFlight),
		dead:     make(chan struct{}),
		draining: make(chan struct{}),
		work:     make(chan request),
	}
	// The queue has room for one response per slot, so a handler never waits to queue its
	// response, even when the writer has died.
	sc.w = newFrameWriter(nc, s.cfg.MaxInFlight, sc.dead, sc.slots, &s.counts, s.cfg.Clock, s.cfg.Epoch, func(err error) {
		sc.s.log.Debug("transport: write failed", "remote", sc.nc.RemoteAddr().String(), "err", err)
		sc.abort()
	})
	return sc
}

// serve runs the connection to its end. If reading stopped gracefully (Shutdown, or a
// request over the size limit that has been answered) the requests already read finish and
// their responses are written before the socket closes; otherwise (the client left or sent
// garbage) handlers are canceled and the socket closed at once.
func (sc *serverConn) serve() {
	defer sc.s.forget(sc)
	go sc.w.run()
	graceful := sc.readLoop()
	close(sc.work) // idle workers exit; busy ones exit after their request
	if graceful {
		sc.handlers.Wait()
		close(sc.w.stop)
	} else {
		sc.abort()
		sc.handlers.Wait()
	}
	<-sc.w.done
	sc.abort()
}

// abort tears the connection down at once: handlers are canceled, the writer exits, the
// socket closes.
func (sc *serverConn) abort() {
	sc.abortOnce.Do(func() {
		close(sc.dead)
		// The socket closes before handlers are canceled, so that the error a canceled
		// handler returns cannot reach the client: its call fails as ErrConnectionLost,
		// which says the request may have been handled, not as a handler error.
		sc.nc.Close()
		sc.cancel()
	})
}

// drain makes the reader stop (as if the stream had ended) without tearing anything down.
func (sc *serverConn) drain() {
	sc.drainOnce.Do(func() {
		sc.isDraining.Store(true)
		close(sc.draining)
		sc.nc.SetReadDeadline(time.Unix(1, 0))
	})
}

// readLoop reads and dispatches requests until the stream ends, fails or is drained. It
// reports whether the connection should end gracefully.
func (sc *serverConn) readLoop() bool {
	dec := newDecoder(sc.nc, sc.s.cfg.MaxPayloadBytes, sc.s.version)
	rcv := receiver{clock: sc.s.cfg.Clock, maxAhead: sc.s.cfg.MaxClockAhead,
		epoch: sc.s.cfg.Epoch, observeEpoch: sc.s.cfg.ObserveEpoch}
	for {
		f, err := dec.Next()
		if err != nil {
			return sc.readFailed(f, err)
		}
		if f.Type != TypeRequest {
			sc.protocolError(fmt.Errorf("%w: a server received a %s frame", ErrMalformedFrame, f.Type))
			return false
		}
		epoch := rcv.received(&f)
		if !sc.acquire() {
			return sc.isDraining.Load()
		}
		switch {
		case sc.s.version != Version1 && isHello(&f):
			sc.w.q <- sc.helloAnswer(f) // holds the slot until written
			continue
		case sc.s.refuses(&f, epoch):
			sc.w.q <- staleEpochFrame(&f, epoch) // the handler is not called
			continue
		}
		r := request{Frame: f}
		if f.Epoch != 0 {
			r.ctx = sc.ctxs.next(f.Epoch)
		}
		sc.handlers.Add(1)
		select {
		case sc.work <- r:
		default:
			go sc.worker(r)
		}
	}
}

// request is a request handed to a worker: its frame and, if it carries an epoch, the
// context to hand its handler (see requestCtxs).
type request struct {
	Frame
	ctx *requestCtx
}

// worker handles r, then further requests from work while it is one of at most
// maxIdleWorkers waiting, until work is closed.
func (sc *serverConn) worker(r request) {
	for {
		sc.handle(r)
		if sc.idle.Add(1) > maxIdleWorkers {
			sc.idle.Add(-1)
			return
		}
		next, ok := <-sc.work
		sc.idle.Add(-1)
		if !ok {
			return
		}
		r = next
	}
}

// helloAnswer is the answer to a client's hello (see isHello): a response in the newest
// version both read, whose payload is the newest this server reads. It holds an in-flight
// slot.
func (sc *serverConn) helloAnswer(f Frame) outFrame {
	out := outFrame{payload: []byte{sc.s.version}, slot: true}
	putHeader(out.hdr[:], min(f.Payload[0], sc.s.version), TypeResponse, helloMethod, helloID, 0, len(out.payload))
	return out
}

// readFailed decides how a connection whose reader failed ends.
func (sc *serverConn) readFailed(f Frame, err error) bool {
	switch {
	case sc.isDraining.Load():
		return true
	case errors.Is(err, ErrFrameTooLarge) && f.Type == TypeRequest:
		sc.protocolError(err)
		if sc.acquire() {
			sc.w.q <- errorFrame(f, CodeTooLarge, err.Error())
		}
		return true
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		return false
	default:
		sc.protocolError(err)
		return false
	}
}

// protocolError logs why a connection is being closed: at Warn when the peer broke the
// protocol, at Debug when the network did (a reset from a peer that went away is routine).
func (sc *serverConn) protocolError(err error) {
	level := slog.LevelDebug
	for _, e := range []error{ErrBadVersion, ErrUnknownType, ErrFrameTooLarge, ErrMalformedFrame} {
		if errors.Is(err, e) {
			level = slog.LevelWarn
		}
	}
	sc.s.log.Log(context.Background(), level, "transport: closing connection",
		"remote", sc.nc.RemoteAddr().String(), "err", err)
}

// acquire takes an in-flight slot, waiting while MaxInFlight requests are outstanding; it
// fails when the connection drains or dies.
func (sc *serverConn) acquire() bool {
	select {
	case sc.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case sc.slots <- struct{}{}:
		return true
	case <-sc.draining:
		return false
	case <-sc.dead:
		return false
	}
}

// handle runs one request and queues its response. It holds a slot, which the writer
// returns once the response is written.
func (sc *serverConn) handle(r request) {
	defer sc.handlers.Done()
	f := r.Frame
	ctx := sc.ctx
	if f.Timeout > 0 {
		// Lazy: most handlers finish long before the deadline and never wait on Done.
		lc := lazyctx.WithDeadline(ctx, time.Now().Add(f.Timeout))
		defer lc.Release()
		ctx = lc
	}
	if r.ctx != nil {
		r.ctx.Context = ctx
		ctx = r.ctx
	}
	resp, err := sc.invoke(ctx, f)
	if err == nil && len(resp) > sc.s.cfg.MaxPayloadBytes {
		err = &RemoteError{Code: CodeTooLarge, Message: fmt.Sprintf(
			"response of %d bytes to method %d exceeds the server's limit of %d", len(resp), f.Method, sc.s.cfg.MaxPayloadBytes)}
	}
	var out outFrame
	if err != nil {
		var re *RemoteError
		switch {
		case errors.As(err, &re):
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			re = &RemoteError{Code: CodeDeadlineExceeded, Message: err.Error()}
		default:
			re = &RemoteError{Code: CodeHandlerError, Message: err.Error()}
		}
		out = errorFrame(f, re.Code, re.Message)
	} else {
		putHeader(out.hdr[:], f.Version, TypeResponse, f.Method, f.ID, 0, len(resp)) // in the request's version
		out.payload = resp
		out.slot = true
	}
	sc.w.q <- out
}

// invoke calls the handler, turning a panic into a CodePanic error.
func (sc *serverConn) invoke(ctx context.Context, f Frame) (resp []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			sc.s.log.Error("transport: handler panicked", "method", f.Method, "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, &RemoteError{Code: CodePanic, Message: fmt.Sprint(p)}
		}
	}()
	return sc.s.h.Handle(ctx, f.Method, f.Payload)
}

// errorFrame is the error response to request f; it holds an in-flight slot.
func errorFrame(f Frame, code uint16, msg string) outFrame {
	if len(msg) > maxErrorMessageBytes {
		msg = msg[:maxErrorMessageBytes]
	}
	out := outFrame{payload: errorPayload(code, msg), slot: true}
	putHeader(out.hdr[:], f.Version, TypeError, f.Method, f.ID, 0, len(out.payload))
	return out
}
