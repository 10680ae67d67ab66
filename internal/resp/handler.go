package resp

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/acl"
	"github.com/kuradb/kura/internal/row"
)

// Handler executes Redis commands against a Store. It is plain synchronous code: no
// goroutines, no sockets, no wall clock (time comes from Config.Clock), so tests drive it
// directly. It is safe for concurrent use; per-connection state lives in a Session.
type Handler struct {
	cfg      Config
	store    Store
	table    []*command
	byName   map[string]*command
	docArgs  map[string][]cmdArg // COMMAND DOCS arguments, by command name
	started  int64               // clock.Physical() at NewHandler, for INFO uptime
	maxField int                 // largest hash field name: MaxKeyBytes capped for the column prefix
	locks    keyLocks            // serializes leader commands per key (leader.go)
	acl      *acl.Registry       // users (acl.go): Config.ACL, or one of its own
	aclIDs   []int               // per command id, its entry in acl's catalog; aclContainer for containers

	clientList clientRegistry // open sessions, for CLIENT LIST and KILL (client.go)
	rng        lockedRand     // HRANDFIELD's randomness (hashcmds.go)
	slowlog    slowLog        // SLOWLOG (slowlog.go)
	latency    []cmdHistogram // per command id, for LATENCY HISTOGRAM (latency.go)
	monitor    latencyMonitor // LATENCY's spikes (latency.go)
	subNames   [][]subName    // per command id, its subcommands' names (latency.go)

	nextID   atomic.Int64 // client ids
	clients  atomic.Int64 // connected clients, maintained by the Server
	conns    atomic.Int64 // connections ever accepted, maintained by the Server
	rejected atomic.Int64 // connections refused by MaxConnections
	commands atomic.Int64 // commands executed
}

// NewHandler returns a handler for cfg (see Config for defaults).
func NewHandler(cfg Config) (*Handler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, store: cfg.Store, table: commandTable(), docArgs: commandArgs()}
	h.byName = make(map[string]*command, len(h.table))
	for i, c := range h.table {
		c.id = i
		h.byName[c.name] = c
	}
	h.locks.seed = maphash.MakeSeed()
	if h.acl = cfg.ACL; h.acl == nil {
		if h.acl, err = NewACLRegistry(cfg.Password); err != nil {
			return nil, err
		}
	}
	h.aclIDs = make([]int, len(h.table))
	for i, c := range h.table {
		id, ok := h.acl.Catalog().ID(c.name, "")
		switch {
		case h.acl.Catalog().HasSubcommands(c.name):
			h.aclIDs[i] = aclContainer
		case ok:
			h.aclIDs[i] = id
		default:
			return nil, fmt.Errorf("%w: ACL's catalog lacks %s (build it with ACLCatalog)", ErrConfig, c.name)
		}
	}
	// The subscription lasts as long as the registry: a handler lives as long as its node.
	h.acl.Subscribe(h.closeRevoked)
	h.initObservers(cfg)
	h.started = cfg.Clock.Physical()
	h.maxField = min(cfg.MaxKeyBytes, row.MaxColumnNameSize-1)
	return h, nil
}

// Session is one client connection's state: authentication, name, whether it asked to
// quit, and scratch space reused across its commands. It is not safe for concurrent use:
// one connection runs one command at a time.
type Session struct {
	id   int64
	addr string // remote address, set by the Server
	// The user it is authenticated as (acl.go): username ("" for none) is written under
	// info; user is resolved again from snap's successors when the registry changes.
	username    string
	user        *acl.User
	snap        *acl.Snapshot
	aclChanging atomic.Bool // in an ACL command that changes the registry (aclcmd.go)
	quit        bool
	proto       proto // the RESP version of its replies, RESP2 until HELLO 3
	name        string
	libName     string
	libVer      string

	// What other connections' CLIENT LIST and KILL see (client.go): name, libName, libVer
	// and proto are written under info, the last command and its start atomically.
	laddr     string // local address, set by the Server
	created   int64  // Config.Ticks at creation
	info      sync.Mutex
	lastCmd   atomic.Pointer[string]
	lastSeen  atomic.Int64
	closeConn func() // closes the connection (CLIENT KILL); nil outside a Server
	took      int64  // how long the last command executed took, in µs (latency.go)

	// consistency is the level KURA.CONSISTENCY set for this connection; "" uses the
	// store's default.
	consistency string
	// store, when set, replaces the handler's Store for this session's commands: the
	// overlay of commands running at a key's leader (leader.go).
	store Store
	// A transaction (multi.go): whether MULTI is open, the queued commands, whether one
	// of them was refused (EXEC then aborts), and the WATCHed keys.
	multi    bool
	multiErr bool
	queued   [][][]byte
	watches  []watch

	// Scratch reused by write commands to keep the hot path free of allocations. The
	// Store copies what it keeps (see Store.Apply), so reuse after Apply is safe.
	muts      []row.Mutation
	cells     []row.Cell
	buf       []byte
	usedMuts  int
	usedCells int
}

// NewSession returns the state of a new connection. It starts authenticated as the
// default user when that user is on and needs no password.
func (h *Handler) NewSession() *Session { return h.NewConnSession("", "", nil) }

// Quit reports whether the client sent QUIT: the driver sends the reply, then closes.
func (s *Session) Quit() bool { return s.quit }

// Do executes one command (args[0] is its name, in any case) and appends its reply to dst,
// in the session's protocol (RESP2 unless the client switched with HELLO 3). It writes exactly one reply for every input, errors included; args must not be
// modified while Do runs, and Do does not keep them.
func (h *Handler) Do(dst []byte, args [][]byte, s *Session) []byte {
	if len(args) == 0 {
		return appendErr(dst, "ERR empty command")
	}
	return h.exec(dst, h.lookup(args[0]), args, s)
}

// maxNameLen is longer than every command name; longer names are unknown commands.
const maxNameLen = 16

// lookup finds a command by name, case-insensitively and without allocating.
func (h *Handler) lookup(name []byte) *command {
	if len(name) > maxNameLen {
		return nil
	}
	var buf [maxNameLen]byte
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return h.byName[string(buf[:len(name)])]
}

// exec runs a looked-up command: c is nil for unknown commands. The checks come in
// Redis's order (unknown, arity, authentication, permissions) so that error replies
// match. AUTH, HELLO and QUIT (no_auth) are not checked against ACL rules, as in Redis.
func (h *Handler) exec(dst []byte, c *command, args [][]byte, s *Session) []byte {
	h.commands.Add(1)
	if s.multi && (c == nil || !txControl(c.name)) && s.username != "" {
		return h.queue(dst, c, args, s)
	}
	switch {
	case c == nil:
		return appendUnknownCommand(dst, args)
	case !arityOK(c.arity, len(args)):
		return appendArityErr(dst, c.name)
	case s.username == "" && c.flags&flagNoAuth == 0:
		return appendErr(dst, errNoAuth)
	case len(args) > h.cfg.MaxArgs:
		return appendErrf(dst, "ERR too many arguments: %d, max-args is %d", len(args), h.cfg.MaxArgs)
	}
	if c.flags&flagNoAuth == 0 {
		var ok bool
		if dst, ok = h.permit(dst, c, args, s, "toplevel"); !ok {
			return dst
		}
	}
	start := h.began(c, args, s)
	if c.flags&flagLeader != 0 {
		dst = h.atLeader(dst, c, args, s)
	} else {
		dst = c.fn(h, dst, args, s)
	}
	h.ended(c, args, s, start)
	s.release()
	return dst
}

func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// now is the physical time used for expiry decisions.
func (h *Handler) now() int64 { return h.cfg.Clock.Physical() }

// apply writes a batch and appends the store's error reply, if any, returning ok=false.
func (h *Handler) apply(s *Session, dst []byte, batch []row.Mutation) ([]byte, bool) {
	var err error
	if s.store != nil {
		err = s.store.Apply(batch)
	} else if ls, ok := h.store.(LeveledStore); ok && s.consistency != "" {
		err = ls.ApplyAt(s.consistency, batch)
	} else {
		err = h.store.Apply(batch)
	}
	if err != nil {
		return h.appendStoreErr(dst, err), false
	}
	return dst, true
}

// read returns the row under key as commands see it (counters folded, see counter.go);
// the empty key, which no row can have, reads as absent.
func (h *Handler) read(s *Session, key []byte) (row.Row, error) {
	r, err := h.readRaw(s, key)
	if err != nil || !hasShards(&r) { // most rows: no clock read for fold
		return r, err
	}
	return fold(r, h.now()), nil
}

// readRaw returns the row under key as stored: counter shards unfolded.
func (h *Handler) readRaw(s *Session, key []byte) (row.Row, error) {
	if len(key) == 0 || len(key) > row.MaxKeySize {
		return row.Row{}, nil
	}
	if s.store != nil {
		r, _, err := s.store.Get(key)
		return r, err
	}
	if ls, ok := h.store.(LeveledStore); ok && s.consistency != "" {
		r, _, err := ls.GetAt(s.consistency, key)
		return r, err
	}
	r, _, err := h.store.Get(key)
	return r, err
}

// checkWriteKey returns an error reply for a key that cannot be written, or nil.
func (h *Handler) checkWriteKey(dst []byte, key []byte) ([]byte, bool) {
	switch {
	case len(key) == 0:
		return appendErr(dst, errEmptyKey), false
	case len(key) > h.cfg.MaxKeyBytes:
		return appendErrf(dst, "ERR key of %d bytes exceeds max-key-bytes (%d)", len(key), h.cfg.MaxKeyBytes), false
	}
	return dst, true
}

// checkReadKey rejects keys over the limit; reads of other keys simply find nothing.
func (h *Handler) checkReadKey(dst []byte, key []byte) ([]byte, bool) {
	if len(key) > h.cfg.MaxKeyBytes {
		return appendErrf(dst, "ERR key of %d bytes exceeds max-key-bytes (%d)", len(key), h.cfg.MaxKeyBytes), false
	}
	return dst, true
}

// checkValue returns an error reply for a value over MaxValueBytes.
func (h *Handler) checkValue(dst []byte, v []byte) ([]byte, bool) {
	if len(v) > h.cfg.MaxValueBytes {
		return appendErrf(dst, "ERR value of %d bytes exceeds max-value-bytes (%d)", len(v), h.cfg.MaxValueBytes), false
	}
	return dst, true
}

// checkField returns an error reply for a hash field name over the limit.
func (h *Handler) checkField(dst []byte, f []byte) ([]byte, bool) {
	if len(f) > h.maxField {
		return appendErrf(dst, "ERR field of %d bytes exceeds max-key-bytes (%d)", len(f), h.maxField), false
	}
	return dst, true
}

// mutations returns n zeroed mutations from the session's scratch.
func (s *Session) mutations(n int) []row.Mutation {
	if cap(s.muts) < n {
		s.muts = make([]row.Mutation, n)
	}
	s.usedMuts = max(s.usedMuts, n)
	return s.muts[:n]
}

// cellScratch returns n zeroed cells from the session's scratch.
func (s *Session) cellScratch(n int) []row.Cell {
	if cap(s.cells) < n {
		s.cells = make([]row.Cell, n)
	}
	s.usedCells = max(s.usedCells, n)
	return s.cells[:n]
}

// scratchLimit bounds the scratch a session keeps between commands, so that one huge MSET
// does not pin its memory for the life of the connection.
const scratchLimit = 1024

// release drops references to the last command's arguments and oversized scratch.
func (s *Session) release() {
	clear(s.muts[:s.usedMuts])
	clear(s.cells[:s.usedCells])
	s.usedMuts, s.usedCells = 0, 0
	if cap(s.muts) > scratchLimit {
		s.muts = nil
	}
	if cap(s.cells) > scratchLimit {
		s.cells = nil
	}
	if cap(s.buf) > scratchLimit*64 {
		s.buf = nil
	}
}
