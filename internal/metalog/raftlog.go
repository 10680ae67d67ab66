package metalog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// streamLayer is the Raft transport's connections: accepted from the internode listener's
// Raft side (listener.Mux.Raft), dialed to a peer's internode address with RaftByte.
//
// It keeps every connection it handed out and closes them all when the transport closes
// it: hashicorp/raft's NetworkTransport.Close closes the listener but neither the
// connections it accepted, whose goroutines stay blocked reading until the peer hangs
// up, nor its pooled outgoing ones. A node closes its Log and goes on (tests do, a node
// that shuts down its log on an error would), so they must not linger.
type streamLayer struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newStreamLayer(ln net.Listener, dial func(string, time.Duration) (net.Conn, error)) *streamLayer {
	return &streamLayer{Listener: ln, dial: dial, conns: map[*trackedConn]struct{}{}}
}

func (s *streamLayer) Accept() (net.Conn, error) {
	nc, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(nc)
}

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	nc, err := s.dial(string(addr), timeout)
	if err != nil {
		return nil, err
	}
	return s.track(nc)
}

func (s *streamLayer) track(nc net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return nil, fmt.Errorf("metalog: raft stream layer closed: %w", net.ErrClosed)
	}
	c := &trackedConn{Conn: nc, s: s}
	s.conns[c] = struct{}{}
	return c, nil
}

// Close closes the listener and every connection still open.
func (s *streamLayer) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
	return s.Listener.Close()
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	s *streamLayer
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// raftLogger routes hashicorp/raft's logging (an hclog.Logger) to a *slog.Logger. Raft
// logs every state change and replication stream at INFO and the normal course of an
// election or of a new voter catching up at WARN; those go to Debug, so that the node's
// log shows what an operator acts on: a new leader, a configuration change, a voter out
// of contact, errors.
type raftLogger struct {
	log  *slog.Logger
	name string
	args []any
}

// infoMessages are raft's INFO messages kept at Info.
var infoMessages = map[string]bool{
	"entering leader state":                      true,
	"updating configuration":                     true,
	"removed ourself, transitioning to follower": true,
	"Installed remote snapshot":                  true,
}

// quietWarnings are raft's WARN messages that are the normal course of things here: a node
// outside the configuration (every non-voter) not campaigning, votes refused during an
// election, a follower's log being brought up to date.
var quietWarnings = map[string]bool{
	"no known peers, aborting election":                   true,
	"not part of stable configuration, aborting election": true,
	"heartbeat timeout reached, not part of a stable configuration or a non-voter, not triggering a leader election": true,
	"rejecting vote request since we have a leader":                                                                  true,
	"rejecting pre-vote request since we have a leader":                                                              true,
	"rejecting vote request since node is not in configuration":                                                      true,
	"rejecting pre-vote request since node is not in configuration":                                                  true,
	"rejecting vote request since our last term is greater":                                                          true,
	"rejecting pre-vote request since our last term is greater":                                                      true,
	"rejecting vote request since our last index is greater":                                                         true,
	"rejecting pre-vote request since our last index is greater":                                                     true,
	"duplicate requestVote from":                                                                                     true,
	"appendEntries rejected, sending older logs":                                                                     true,
	"failed to get previous log":                                                                                     true,
	"previous log term mis-match":                                                                                    true,
}

// quietErrors are raft's ERROR messages that repeat, twice a second, while a voter is
// down, or come from a transport being shut down; the leader's "failed to contact"
// warning, logged a few times and then at DEBUG, already says a voter is out of reach.
var quietErrors = map[string]bool{
	"failed to appendEntries to":        true,
	"failed to heartbeat to":            true,
	"failed to decode incoming command": true,
}

// levelOf maps a raft message's level to slog's.
func levelOf(level hclog.Level, msg string) slog.Level {
	switch {
	case level <= hclog.Debug:
		return slog.LevelDebug
	case level == hclog.Info && !infoMessages[msg]:
		return slog.LevelDebug
	case level == hclog.Info:
		return slog.LevelInfo
	case level == hclog.Warn && quietWarnings[msg]:
		return slog.LevelDebug
	case level == hclog.Warn:
		return slog.LevelWarn
	case quietErrors[msg]:
		return slog.LevelDebug
	}
	return slog.LevelError
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	lvl := levelOf(level, msg)
	if !l.log.Enabled(context.Background(), lvl) {
		return
	}
	all := append(append([]any{}, l.args...), args...)
	if l.name != "" {
		all = append(all, "raft", l.name)
	}
	l.log.Log(context.Background(), lvl, msg, all...)
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) IsTrace() bool { return false }
func (l *raftLogger) IsDebug() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }
func (l *raftLogger) IsInfo() bool  { return l.IsDebug() } // raft's INFO is slog's Debug, mostly
func (l *raftLogger) IsWarn() bool  { return true }
func (l *raftLogger) IsError() bool { return true }

func (l *raftLogger) ImpliedArgs() []any { return l.args }

func (l *raftLogger) With(args ...any) hclog.Logger {
	return &raftLogger{log: l.log, name: l.name, args: append(append([]any{}, l.args...), args...)}
}

func (l *raftLogger) Name() string { return l.name }

func (l *raftLogger) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return &raftLogger{log: l.log, name: name, args: l.args}
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	return &raftLogger{log: l.log, name: name, args: l.args}
}

// SetLevel does nothing: the slog.Logger's handler decides.
func (l *raftLogger) SetLevel(hclog.Level) {}

func (l *raftLogger) GetLevel() hclog.Level {
	if l.IsDebug() {
		return hclog.Debug
	}
	return hclog.Warn
}

func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter logs each line written to it at raft's INFO.
func (l *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		l.Info(string(bytes.TrimSpace(p)))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
