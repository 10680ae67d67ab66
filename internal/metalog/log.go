package metalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/datadir"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// Files in the Log's directory.
const (
	// StateFile holds the newest state this node applied or pulled, with its log index
	// (written atomically after each), so that a restarted node knows the ring before it
	// hears from anyone.
	StateFile = "meta.state"
	// raftFile is the Raft log and stable store (raft-boltdb); snapshots go in snapshots/.
	raftFile = "raft.db"
	// retainSnapshots is how many Raft snapshots are kept.
	retainSnapshots = 2
)

// Config configures a Log. Zero durations take their defaults.
type Config struct {
	// ID is this node's ID, its Raft server ID. Required.
	ID ring.NodeID
	// Addr is this node's internode address: other nodes reach its Raft transport there
	// (through the listener's Mux) and send it MethodMeta requests; it is its Raft server
	// address. Required.
	Addr string
	// Listener accepts the Raft transport's connections: the internode listener's
	// listener.Mux.Raft(). Required; the Log closes it.
	Listener net.Listener
	// Dial opens a Raft transport connection to a node's internode address. Default
	// listener.DialRaft.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// Call sends a wire.MethodMeta request to the node at internode address addr and
	// returns its response payload (the node implements it with its transport pool).
	// Required.
	Call func(ctx context.Context, addr string, method uint16, payload []byte) ([]byte, error)
	// OnState, if set, receives a copy of every newer state this node learns (through
	// Raft, a pull, or a proposal's answer), after it was saved, in order and never
	// concurrently with itself. It runs on Raft's goroutine for entries Raft applies: it
	// must not block for long nor call Propose or Bootstrap. Not called for the state Open
	// loads from disk: read State.
	OnState func(*meta.State)
	// Logger receives the Log's and Raft's logging. Default slog.Default().
	Logger *slog.Logger

	// HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout and CommitTimeout are Raft's
	// (hashicorp/raft Config); defaults 1 s, 1 s, 500 ms and 50 ms, Raft's own, which suit
	// a LAN. Tests shorten them.
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	// IOTimeout bounds one Raft RPC's network I/O. Default 10 s.
	IOTimeout time.Duration
	// CallTimeout bounds one MethodMeta request to one node (a forwarded proposal, a pull,
	// a probe of a new voter). Default 2 s.
	CallTimeout time.Duration
	// PullInterval is how often a node outside the Raft configuration pulls the state
	// from a voter. Default 2 s.
	PullInterval time.Duration
	// VoterInterval is how often the leader checks the voters besides after each entry
	// and when it becomes leader. Default 10 s.
	VoterInterval time.Duration
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.ID == "" || cfg.Addr == "" || cfg.Listener == nil || cfg.Call == nil {
		return cfg, errors.New("metalog: Config needs ID, Addr, Listener and Call")
	}
	if cfg.Dial == nil {
		cfg.Dial = listener.DialRaft
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.HeartbeatTimeout, time.Second)
	def(&cfg.ElectionTimeout, time.Second)
	def(&cfg.LeaderLeaseTimeout, 500*time.Millisecond)
	def(&cfg.CommitTimeout, 50*time.Millisecond)
	def(&cfg.IOTimeout, 10*time.Second)
	def(&cfg.CallTimeout, 2*time.Second)
	def(&cfg.PullInterval, 2*time.Second)
	def(&cfg.VoterInterval, 10*time.Second)
	return cfg, nil
}

// Log is this node's replica of the metadata log: a Raft instance (idle unless the node
// is a voter), the state machine it drives, and the newest state the node knows. Safe for
// concurrent use.
type Log struct {
	cfg   Config
	dir   string
	log   *slog.Logger
	raft  *raft.Raft
	trans *raft.NetworkTransport
	store *raftboltdb.BoltStore
	fsm   *fsm

	installMu sync.Mutex // serializes install: save, then OnState, in order
	mu        sync.RWMutex
	cur       *meta.State // the newest state known; never changed in place
	enc       []byte      // meta.EncodeState(cur), what a fetch answers
	pos       position
	hint      peer      // the leader as the last pull's answer named it
	lastPull  time.Time // when a pull last got an answer

	poke    chan struct{}   // Poke: pull now
	kick    chan struct{}   // a newer state: the leader checks the voters
	ctx     context.Context // canceled by Close: every wait of the Log's own ends
	cancel  context.CancelFunc
	closing chan struct{}
	close   sync.Once
	wg      sync.WaitGroup
}

// peer is a node of the log as the Log addresses it.
type peer struct {
	ID   ring.NodeID
	Addr string
}

// Open opens the metadata log kept in dir (created if needed) and starts its Raft
// instance. The state saved in dir is State's at once, before any peer answers. A node
// that is not a voter stays out of elections until a leader adds it.
func Open(dir string, cfg Config) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg, dir: dir, log: cfg.Logger.With("component", "metalog"), cur: &meta.State{},
		enc: meta.EncodeState(&meta.State{}), poke: make(chan struct{}, 1), kick: make(chan struct{}, 1), closing: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	if err := l.open(); err != nil {
		l.cancel()
		cfg.Listener.Close()
		return nil, err
	}
	l.wg.Add(2)
	go l.pullLoop()
	go l.voterLoop()
	return l, nil
}

func (l *Log) open() error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("metalog: %w", err)
	}
	if err := l.load(); err != nil {
		return err
	}
	rlog := &raftLogger{log: l.log}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(l.dir, raftFile),
		BoltOptions: &bbolt.Options{Timeout: time.Second}})
	if err != nil {
		return fmt.Errorf("metalog: open %s: %w", filepath.Join(l.dir, raftFile), err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(l.dir, retainSnapshots, rlog)
	if err != nil {
		store.Close()
		return fmt.Errorf("metalog: %w", err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: newStreamLayer(l.cfg.Listener, l.cfg.Dial), MaxPool: 3,
		Timeout: l.cfg.IOTimeout, Logger: rlog})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(l.cfg.ID)
	rc.Logger = rlog
	rc.HeartbeatTimeout, rc.ElectionTimeout = l.cfg.HeartbeatTimeout, l.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout, rc.CommitTimeout = l.cfg.LeaderLeaseTimeout, l.cfg.CommitTimeout
	// A voter removed from the configuration stays up: it goes on serving pulls and may be
	// added again. Without a configuration (every non-voter) Raft never campaigns.
	rc.ShutdownOnRemove = false
	// Entries are few and small: snapshot and truncate the log after a thousand.
	rc.SnapshotThreshold, rc.TrailingLogs = 1024, 1024
	l.fsm = newFSM(l.applied)
	r, err := raft.NewRaft(rc, l.fsm, store, store, snaps, trans)
	if err != nil {
		trans.Close()
		store.Close()
		return fmt.Errorf("metalog: start raft: %w", err)
	}
	l.raft, l.trans, l.store = r, trans, store
	return nil
}

// load reads the saved state, if any.
func (l *Log) load() error {
	path := filepath.Join(l.dir, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metalog: %w", err)
	}
	st, index, err := decodeSaved(b)
	if err != nil {
		return fmt.Errorf("metalog: %s: %w (remove it to learn the state from the other nodes again)", path, err)
	}
	l.cur, l.enc, l.pos = st, meta.EncodeState(st), position{Epoch: st.Epoch, Index: index}
	return nil
}

// applied takes a state the state machine reached.
func (l *Log) applied(st *meta.State, index uint64) {
	if l.install(st, index) {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// install makes st, at log index index, the newest state if it is newer than the one
// known, saves it and hands it to OnState. It reports whether st was newer. It takes
// ownership of st.
func (l *Log) install(st *meta.State, index uint64) bool {
	l.installMu.Lock()
	defer l.installMu.Unlock()
	p := position{Epoch: st.Epoch, Index: index}
	if !p.after(l.position()) { // only install changes pos, and it holds installMu
		return false
	}
	enc := meta.EncodeState(st)
	l.mu.Lock()
	l.cur, l.enc, l.pos = st, enc, p
	l.mu.Unlock()
	if err := datadir.WriteFileAtomic(filepath.Join(l.dir, StateFile), savedBytes(enc, index)); err != nil {
		// The state is still in memory and, on a voter, in the Raft log; a restart before
		// the next successful save starts from an older state and catches up.
		l.log.Error("metalog: cannot save the metadata state", "err", err)
	}
	if l.cfg.OnState != nil {
		l.cfg.OnState(st.Clone())
	}
	return true
}

// State returns a copy of the newest state this node knows: the empty State before the
// cluster was bootstrapped or before the node heard of it. It answers after Close too.
func (l *Log) State() *meta.State {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cur.Clone()
}

// Epoch returns the newest state's epoch.
func (l *Log) Epoch() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pos.Epoch
}

func (l *Log) position() position {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pos
}

// Leader returns the log's leader as this node knows it: from Raft on a voter, from the
// last pull's answer otherwise; empty when unknown.
func (l *Log) Leader() (ring.NodeID, string) {
	addr, id := l.raft.LeaderWithID()
	if id != "" {
		return ring.NodeID(id), string(addr)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.hint.ID, l.hint.Addr
}

// Voters returns the voters as the newest state records them (SetVoters), sorted by ID.
func (l *Log) Voters() []ring.NodeID {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]ring.NodeID(nil), l.cur.Voters...)
}

// Close stops the Log: its loops, Raft, the Raft transport (and Listener) and the store.
// State still answers. Proposals in flight fail.
func (l *Log) Close() error {
	var err error
	l.close.Do(func() {
		close(l.closing)
		l.cancel()
		l.wg.Wait()
		err = l.raft.Shutdown().Error()
		err = errors.Join(err, l.trans.Close(), l.store.Close())
	})
	return err
}

func (l *Log) closed() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}
