package listener

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/accept"
)

// RaftByte is the first byte of a connection for the metadata log's Raft transport on the
// internode listener ('R', 0x52). Internode transport frames begin with their version, 1
// or 2 (package transport), so no transport connection starts with it, and the Raft
// transport's connections need no port of their own. A frame version must never be 0x52.
const RaftByte byte = 'R'

// Limits of a Mux.
const (
	// PeekTimeout bounds how long an accepted connection may take to send its first byte;
	// one that sends nothing is closed then. Each connection waits in its own goroutine,
	// so a silent one delays no other.
	PeekTimeout = 10 * time.Second
	// MaxPendingConns bounds the connections accepted but not yet taken by a
	// sub-listener's Accept (waiting for their first byte or for Accept); a connection
	// past it is closed at once.
	MaxPendingConns = 1024
)

// Mux splits one listener's connections by their first byte: those that start with
// RaftByte go to Raft() with the byte consumed, all others to Default() with their first
// byte still to be read. Both sub-listeners are net.Listeners with the underlying
// listener's address.
//
// Closing a sub-listener makes its Accept fail and drops the connections meant for it;
// the other keeps working. Closing the Mux closes the underlying listener and both
// sub-listeners. If the underlying listener's Accept fails for good (a temporary error is
// retried, as accept.Loop does), both sub-listeners' Accept return that error.
type Mux struct {
	ln   net.Listener
	raft *subListener
	def  *subListener

	done    chan struct{} // closed by Close or when the accept loop ends
	endOnce sync.Once
	err     error // why the accept loop ended; read after done is closed
	closing atomic.Bool

	mu      sync.Mutex
	pending map[net.Conn]struct{} // accepted, not yet handed over
	wg      sync.WaitGroup        // the accept loop and the per-connection goroutines
}

// NewMux starts accepting connections from ln and routing them; the Mux owns ln.
func NewMux(ln net.Listener) *Mux {
	m := &Mux{ln: ln, done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	m.raft = &subListener{m: m, name: "raft", conns: make(chan net.Conn), closed: make(chan struct{})}
	m.def = &subListener{m: m, name: "default", conns: make(chan net.Conn), closed: make(chan struct{})}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

// Raft returns the listener of the connections that began with RaftByte (consumed).
func (m *Mux) Raft() net.Listener { return m.raft }

// Default returns the listener of every other connection; its first byte is read again.
func (m *Mux) Default() net.Listener { return m.def }

// Addr returns the underlying listener's address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Close closes the underlying listener, both sub-listeners and the connections not yet
// accepted through them, and waits for the Mux's goroutines. Connections already
// accepted are their owners'.
func (m *Mux) Close() error {
	m.closing.Store(true)
	err := m.ln.Close()
	m.end(fmt.Errorf("listener: mux closed: %w", net.ErrClosed))
	m.mu.Lock()
	for c := range m.pending {
		c.Close() // wakes its peek
	}
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

// end records why the Mux stopped, once, and wakes every waiter.
func (m *Mux) end(err error) {
	m.endOnce.Do(func() {
		m.err = err
		close(m.done)
	})
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	err := accept.Loop(m.ln, m.closing.Load, m.done, m.admit)
	if err != nil {
		m.end(fmt.Errorf("listener: accept: %w", err))
	}
}

// admit starts routing nc in its own goroutine, unless MaxPendingConns are waiting.
func (m *Mux) admit(nc net.Conn) {
	m.mu.Lock()
	if len(m.pending) >= MaxPendingConns || m.isDone() {
		m.mu.Unlock()
		nc.Close()
		return
	}
	m.pending[nc] = struct{}{}
	m.wg.Add(1)
	m.mu.Unlock()
	go m.route(nc)
}

func (m *Mux) isDone() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// route reads nc's first byte and hands nc to the sub-listener it names.
func (m *Mux) route(nc net.Conn) {
	defer m.wg.Done()
	var b [1]byte
	nc.SetReadDeadline(time.Now().Add(PeekTimeout))
	_, err := nc.Read(b[:])
	m.mu.Lock()
	delete(m.pending, nc) // from here offer closes it if the Mux closes
	m.mu.Unlock()
	if err != nil {
		nc.Close()
		return
	}
	nc.SetReadDeadline(time.Time{})
	to, c := m.def, net.Conn(&replayConn{Conn: nc, first: b[0]})
	if b[0] == RaftByte {
		to, c = m.raft, nc
	}
	to.offer(c)
}

// subListener is one side of a Mux.
type subListener struct {
	m         *Mux
	name      string
	conns     chan net.Conn // unbuffered: a connection is either taken by Accept or closed
	closed    chan struct{}
	closeOnce sync.Once
}

// offer hands c to Accept, or closes it when the sub-listener or the Mux closes first.
func (l *subListener) offer(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	case <-l.m.done:
		c.Close()
	}
}

// Accept waits for the next connection routed here. After Close, or once the Mux
// stopped, it returns an error (wrapping net.ErrClosed when closed on purpose).
func (l *subListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, fmt.Errorf("listener: %s listener closed: %w", l.name, net.ErrClosed)
	case <-l.m.done:
		return nil, l.m.err
	default:
	}
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, fmt.Errorf("listener: %s listener closed: %w", l.name, net.ErrClosed)
	case <-l.m.done:
		return nil, l.m.err
	}
}

// Close stops this sub-listener: Accept fails and connections routed here are closed.
// It leaves the Mux and the other sub-listener running.
func (l *subListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the underlying listener's address.
func (l *subListener) Addr() net.Addr { return l.m.ln.Addr() }

// replayConn is a connection whose first byte, already read by the Mux, is read again.
type replayConn struct {
	net.Conn
	first   byte
	drained atomic.Bool
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(p) > 0 && c.drained.CompareAndSwap(false, true) {
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

// DialRaft opens a connection to the Raft transport behind the Mux listening at addr: it
// connects within timeout (0: no limit) and sends RaftByte.
func DialRaft(addr string, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return sendRaftByte(nc, addr, timeout)
}

// RaftDialer returns DialRaft's TLS twin, for a Mux behind ListenTLS: it connects,
// completes the TLS handshake with cfg within the same timeout, and sends RaftByte
// inside TLS. A nil cfg returns DialRaft.
func RaftDialer(cfg *tls.Config) func(addr string, timeout time.Duration) (net.Conn, error) {
	if cfg == nil {
		return DialRaft
	}
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		nc, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listener: dial raft at %s: %w", addr, err)
		}
		return sendRaftByte(nc, addr, timeout)
	}
}

func sendRaftByte(nc net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	if timeout > 0 {
		nc.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := nc.Write([]byte{RaftByte}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("listener: dial raft at %s: %w", addr, err)
	}
	nc.SetWriteDeadline(time.Time{})
	return nc, nil
}
