package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/kuradb/kura/internal/accept"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Close, as net/http does.
var ErrServerClosed = errors.New("resp: server closed")

// Tuning of the connection loop; not configuration because no deployment needs another
// value.
const (
	// flushBytes is how much reply a connection buffers before writing mid-pipeline, so
	// that a pipeline of large GETs streams instead of piling up in memory.
	flushBytes = 64 << 10
	// keepOutBytes is the largest reply buffer a connection keeps between batches.
	keepOutBytes = 1 << 20
	// closeWriteGrace is how long Close lets connections write their last replies.
	closeWriteGrace = 5 * time.Second
	// rejectWriteTimeout bounds the write of "max number of clients reached".
	rejectWriteTimeout = time.Second
	// bigCommandBytes marks a command after which the connection replaces its reader:
	// redcon's reader keeps the capacity its buffer grew to, so one large SET would pin
	// twice its size for the life of the connection.
	bigCommandBytes = 256 << 10
)

// Server serves the Redis protocol on a listener: one goroutine per connection running
// pipelined commands through a Handler. It enforces the connection limits of Config and
// shuts down gracefully (see Close).
type Server struct {
	h       *Handler
	cfg     Config
	m       *metrics // nil without Config.Registerer
	closing atomic.Bool
	done    chan struct{} // closed by Close; wakes the accept backoff

	mu    sync.Mutex
	lns   []net.Listener // served, the first one's address is Addr
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // the accept loop and every connection
}

// New returns a server for cfg; it does not listen until Serve or ListenAndServe.
func New(cfg Config) (*Server, error) {
	h, err := NewHandler(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{h: h, cfg: h.cfg, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	if cfg.Registerer != nil {
		if s.m, err = newMetrics(cfg.Registerer, h.table); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Handler returns the server's command handler.
func (s *Server) Handler() *Handler { return s.h }

// ListenAndServe listens on the TCP address addr and serves it (see Serve).
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("resp: listen: %w", err)
	}
	return s.Serve(ln)
}

// Addr returns the address of the first listener served, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lns) == 0 {
		return nil
	}
	return s.lns[0].Addr()
}

// Serve accepts connections on ln until Close, and then returns ErrServerClosed; other
// accept errors are returned as they are. Serve takes ownership of ln. A server may serve
// several listeners, each with its own Serve (a node's plain and TLS ports): they share
// the connection limits.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns = append(s.lns, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	return s.acceptLoop(ln)
}

func (s *Server) acceptLoop(ln net.Listener) error {
	err := accept.Loop(ln, s.closing.Load, s.done, func(nc net.Conn) {
		if s.admit(nc) {
			go s.serveConn(nc)
		}
	})
	if err != nil {
		return fmt.Errorf("resp: accept: %w", err)
	}
	return ErrServerClosed
}

// admit registers a new connection, or refuses it when closing or at MaxConnections.
func (s *Server) admit(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		nc.Close()
		return false
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		s.h.rejected.Add(1)
		if s.m != nil {
			s.m.rejected.Inc()
		}
		// A fresh socket's send buffer takes these few bytes at once; the deadline only
		// guards against the impossible.
		nc.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
		nc.Write(appendErr(nil, errMaxClients))
		nc.Close()
		return false
	}
	s.conns[nc] = struct{}{}
	s.wg.Add(1)
	s.h.clients.Add(1)
	s.h.conns.Add(1)
	if s.m != nil {
		s.m.clients.Inc()
		s.m.accepted.Inc()
	}
	return true
}

// forget closes and unregisters a connection when its goroutine ends.
func (s *Server) forget(nc net.Conn) {
	nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	s.h.clients.Add(-1)
	if s.m != nil {
		s.m.clients.Dec()
	}
	s.wg.Done()
}

// Close is Shutdown with closeWriteGrace (5 s) for the last replies.
func (s *Server) Close() error { return s.shutdown(time.Now().Add(closeWriteGrace)) }

// Shutdown stops accepting connections, lets every connection finish the commands it has
// already read and write their replies until ctx's deadline (closeWriteGrace when ctx has
// none), closes the connections, and returns once all their goroutines have ended.
// Commands in flight in the Store are waited for, however long they take: cutting one off
// would leave its outcome unknown to the client. Shutdown does not close the Store and is
// safe to call more than once, as is Close.
func (s *Server) Shutdown(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(closeWriteGrace)
	}
	return s.shutdown(deadline)
}

func (s *Server) shutdown(writeDeadline time.Time) error {
	s.mu.Lock()
	var err error
	if !s.closing.Swap(true) {
		close(s.done)
		for _, ln := range s.lns {
			if e := ln.Close(); e != nil && !errors.Is(e, net.ErrClosed) && err == nil {
				err = e
			}
		}
		// A connection blocked in Read wakes now; one executing a batch finishes it,
		// writes the replies and then sees closing (see serveConn).
		now := time.Now()
		for nc := range s.conns {
			nc.SetReadDeadline(now)
			nc.SetWriteDeadline(writeDeadline)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("resp: close listener: %w", err)
	}
	return nil
}

// serveConn runs one connection: read a pipeline of commands, execute them in order,
// write the replies, repeat.
func (s *Server) serveConn(nc net.Conn) {
	defer s.forget(nc)
	sess := s.h.NewConnSession(nc.RemoteAddr().String(), nc.LocalAddr().String(), func() { nc.Close() })
	defer s.h.EndSession(sess)
	lim := newFrameLimiter(nc, s.cfg.MaxRequestBytes, s.cfg.MaxArgs)
	rd := redcon.NewReader(lim)
	var out []byte
	var received int64 // commands read, to match against lim's frames
	for {
		if s.cfg.IdleTimeout > 0 {
			nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		}
		// Checked after arming the idle deadline: either Close's immediate deadline
		// comes later and wins, or the flag is already visible here.
		if s.closing.Load() {
			return
		}
		cmds, err := rd.ReadCommands()
		if err != nil {
			s.readFailed(nc, err)
			return
		}
		received += int64(len(cmds))
		big := slices.ContainsFunc(cmds, func(c redcon.Command) bool { return len(c.Raw) > bigCommandBytes })
		var ok bool
		if out, ok = s.runBatch(nc, out[:0], cmds, sess); !ok {
			return
		}
		if cap(out) > keepOutBytes {
			out = nil
		}
		if big && lim.atBoundary(received) {
			rd = redcon.NewReader(lim) // nothing is buffered: drop the grown buffer
		}
	}
}

// runBatch executes a pipeline and writes its replies, streaming them when they grow past
// flushBytes. It reports false when the connection must close (write error or QUIT).
func (s *Server) runBatch(nc net.Conn, out []byte, cmds []redcon.Command, sess *Session) ([]byte, bool) {
	for i := range cmds {
		args := cmds[i].Args
		c := s.h.lookup(args[0]) // redcon never yields an empty command
		if s.m != nil {
			// The handler times what it executes (Session.took, for LATENCY and the slow
			// log): the metrics take the same figure rather than reading the clock again.
			n := len(out)
			sess.took = 0
			out = s.h.exec(out, c, args, sess)
			s.m.observe(c, out[n] == '-', time.Duration(sess.took)*time.Microsecond)
		} else {
			out = s.h.exec(out, c, args, sess)
		}
		if sess.quit {
			break
		}
		if len(out) >= flushBytes {
			if _, err := nc.Write(out); err != nil {
				return out, false
			}
			out = out[:0]
		}
	}
	if len(out) > 0 {
		if _, err := nc.Write(out); err != nil {
			return out, false
		}
	}
	return out, !sess.quit
}

// readFailed answers a refused frame with a protocol error before the connection closes;
// I/O errors (EOF, idle timeout, shutdown) close it silently.
func (s *Server) readFailed(nc net.Conn, err error) {
	var pe *protocolError
	var msg string
	switch {
	case errors.As(err, &pe):
		msg = "ERR Protocol error: " + pe.Msg
	case strings.HasPrefix(err.Error(), "Protocol error: "): // redcon's own, unexported
		msg = "ERR " + err.Error()
	default:
		return
	}
	if s.m != nil {
		s.m.protoErrs.Inc()
	}
	nc.SetWriteDeadline(time.Now().Add(closeWriteGrace))
	nc.Write(appendErr(nil, msg))
}
