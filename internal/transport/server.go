package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/accept"
)

// Handler answers requests. Handle is called concurrently, in one goroutine per request
// in flight, with ctx carrying the caller's deadline (if it sent one) and canceled when the
// connection breaks or the server is closed.
//
// payload is valid only until Handle returns: the server may reuse its memory, so a handler
// that keeps any of it must copy it. The returned slice is handed to the transport, which
// writes it after Handle returns; the handler must not modify it afterwards. A returned
// error reaches the caller as a *RemoteError: the error itself if it is one (the handler
// picks the code), else CodeHandlerError with the error's text. A panic reaches the caller
// as CodePanic and is logged; the server keeps serving.
type Handler interface {
	Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, method uint16, payload []byte) ([]byte, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	return f(ctx, method, payload)
}

// ServerConfig configures a Server. Zero fields take their defaults.
type ServerConfig struct {
	// MaxPayloadBytes is the largest request the server reads and the largest response it
	// sends; a handler's larger response becomes a CodeTooLarge error, and a larger request
	// is answered with CodeTooLarge before its connection is closed (the stream cannot be
	// resynchronized). Default DefaultMaxPayloadBytes (16 MiB), at most MaxPayloadLimit.
	MaxPayloadBytes int
	// MaxInFlight bounds the requests of one connection being handled or waiting for their
	// response to be written. At the bound the server stops reading that connection, so
	// TCP pushes back on the client, whose send queue fills. Default 256.
	MaxInFlight int
	// MaxConnections bounds open connections; connections past it are closed at once.
	// Default 1024.
	MaxConnections int
	// Logger receives handler panics and protocol violations. Default slog.Default().
	Logger *slog.Logger
	// Clock stamps the responses (frame version 2) and observes the stamps of the
	// requests, before their handler runs. Nil: the server sends no stamps and observes
	// none.
	Clock Clock
	// MaxClockAhead is ClientConfig.MaxClockAhead for the requests' stamps.
	MaxClockAhead time.Duration
	// Epoch returns the node's ring epoch, which every response carries (frame version
	// 2) and against which RefuseStaleEpoch compares the requests'. Its contract is
	// ClientConfig.Epoch's: fast, safe for concurrent use, never decreasing; 0 says the
	// node knows none. Nil: responses carry epoch 0 and no request is stale.
	Epoch func() uint64
	// ObserveEpoch is given the epoch of every request above Epoch's, before the request
	// is handled; the request is then served. Its contract is ClientConfig.ObserveEpoch's:
	// cheap, never blocking (it runs on the connection's reader), never given 0. Nil:
	// epochs received are ignored.
	ObserveEpoch func(epoch uint64)
	// RefuseStaleEpoch says which methods the server refuses when their request was
	// planned at an older epoch than Epoch's: such a request (with a nonzero epoch: 0 is
	// a peer that predates epochs or knows no ring, served as before) is answered with a
	// CodeStaleEpoch error, which the caller's Call returns as a *StaleEpochError, and its
	// handler is not called. A write planned on a stale ring must not be acknowledged by a
	// replica that knows better; the caller catches up and retries. Methods that must be
	// served whatever the caller's epoch answer false: the metadata log's own (a node
	// behind asks for the entries it lacks at the epoch it has), and any whose answer
	// does not depend on the ring. It is called on the connection's reader, only for
	// stale requests, and must be fast and safe for concurrent use. Nil: nothing is
	// refused.
	RefuseStaleEpoch func(method uint16) bool
	// MaxVersion is the newest frame version the server reads and speaks: 0 means Version;
	// 1 makes it a server that predates version 2 (it hands a client's hello to the
	// handler and closes a connection that sends a version 2 frame), which tests of
	// mixed-version clusters use.
	MaxVersion int
}

func (cfg ServerConfig) withDefaults() (ServerConfig, error) {
	if cfg.MaxPayloadBytes == 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 256
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxPayloadBytes < 0 || cfg.MaxPayloadBytes > MaxPayloadLimit {
		return cfg, fmt.Errorf("%w: MaxPayloadBytes %d not in [0, %d]", ErrConfig, cfg.MaxPayloadBytes, MaxPayloadLimit)
	}
	if cfg.MaxInFlight < 0 || cfg.MaxConnections < 0 {
		return cfg, fmt.Errorf("%w: negative MaxInFlight or MaxConnections", ErrConfig)
	}
	if cfg.MaxVersion < 0 || cfg.MaxVersion > Version {
		return cfg, fmt.Errorf("%w: MaxVersion %d not in [0, %d]", ErrConfig, cfg.MaxVersion, Version)
	}
	return cfg, nil
}

// Limits of the server that are not configuration.
const (
	// maxErrorMessageBytes truncates the message of an error frame, so that a handler's
	// long error text can neither exceed the caller's payload limit nor flood it.
	maxErrorMessageBytes = 4 << 10
)

// Server serves a Handler on a listener: one reader goroutine per connection, handler
// goroutines (one per request in flight, at most MaxInFlight per connection, reused) and
// one writer per connection that batches responses.
type Server struct {
	h       Handler
	cfg     ServerConfig
	version byte // the newest frame version it reads (cfg.MaxVersion)
	log     *slog.Logger
	ctx     context.Context // parent of every handler's context; canceled by Close
	cancel  context.CancelFunc
	closing atomic.Bool
	done    chan struct{} // closed when closing starts; wakes the accept backoff

	mu    sync.Mutex
	ln    net.Listener
	conns map[*serverConn]struct{}
	wg    sync.WaitGroup // the accept loop and every connection

	counts writeCounters
}

// Stats returns what the server's connections wrote (responses).
func (s *Server) Stats() Stats { return s.counts.stats() }

// NewServer returns a server for h; it does not listen until Serve.
func NewServer(h Handler, cfg ServerConfig) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{h: h, cfg: cfg, version: versionOf(cfg.MaxVersion), log: cfg.Logger, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), conns: map[*serverConn]struct{}{}}, nil
}

// Addr returns the address being served, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections on ln until Shutdown or Close, and then returns ErrClosed;
// other accept errors are returned as they are. Serve takes ownership of ln. A server
// serves one listener.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	switch {
	case s.closing.Load():
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	case s.ln != nil:
		s.mu.Unlock()
		return errors.New("transport: Serve called twice")
	}
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	err := accept.Loop(ln, s.closing.Load, s.done, func(nc net.Conn) {
		if sc := s.admit(nc); sc != nil {
			go sc.serve()
		}
	})
	if err != nil {
		return fmt.Errorf("transport: accept: %w", err)
	}
	return ErrClosed
}

// admit registers a new connection, or closes it when closing or at MaxConnections.
func (s *Server) admit(nc net.Conn) *serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() || len(s.conns) >= s.cfg.MaxConnections {
		if !s.closing.Load() {
			s.log.Warn("transport: refusing connection: at MaxConnections",
				"remote", nc.RemoteAddr().String(), "limit", s.cfg.MaxConnections)
		}
		nc.Close()
		return nil
	}
	sc := newServerConn(s, nc)
	s.conns[sc] = struct{}{}
	s.wg.Add(1)
	return sc
}

func (s *Server) forget(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
	s.wg.Done()
}

// stopAccepting marks the server closing, closes the listener and returns the open
// connections.
func (s *Server) stopAccepting() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing.Swap(true) {
		close(s.done)
	}
	if s.ln != nil {
		s.ln.Close()
	}
	return slices.Collect(maps.Keys(s.conns))
}

// Shutdown stops accepting connections and stops reading new requests, lets the requests
// already read finish and their responses be written, closes the connections and returns
// once every goroutine of the server has ended. Requests a client sent that the server had
// not read yet fail at the client with ErrConnectionLost. If ctx ends first, Shutdown
// does what Close does and returns ctx's error. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, sc := range s.stopAccepting() {
		sc.drain()
	}
	idle := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.Close()
		<-idle
		return ctx.Err()
	}
}

// Close stops accepting, cancels the context of every running handler, closes every
// connection at once and waits for the server's goroutines, handlers included, to end.
// Outstanding calls fail at their clients with ErrConnectionLost.
func (s *Server) Close() error {
	conns := s.stopAccepting()
	for _, sc := range conns {
		sc.abort() // sockets first: see serverConn.abort
	}
	s.cancel()
	s.wg.Wait()
	return nil
}
