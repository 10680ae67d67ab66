package resp

import (
	"bytes"
	"errors"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/kuradb/kura/internal/row"
)

// Leader is a Store that runs read-modify-write commands at one place per key: a
// cluster, where the key's leader is the first live replica of the key in ring order.
// Commands flagged flagLeader (INCR, APPEND...) and transactions (MULTI/EXEC) go there, so
// that two of them on one key never interleave while one leader serves it, and so that
// counter shards are written only by their own node (see counter.go).
//
// A store that is not a Leader (a single node) runs them in place under a per-key lock.
type Leader interface {
	// AtLeader runs req at the leader of req.Key and returns the reply it produced (one
	// reply, or EXEC's array). An error means the reply never came: the commands may or
	// may not have run.
	AtLeader(req *LeaderRequest) ([]byte, error)
}

// LeaderRequest is what a coordinator sends to a key's leader: the commands, and what
// the leader needs of the client's connection to run them.
type LeaderRequest struct {
	Key   []byte
	Level string // the connection's consistency level; "" for the store's default
	Proto int    // 2 or 3: the protocol of the replies
	// Multi makes the reply EXEC's: an array of the commands' replies, or a null array
	// when a watched key changed.
	Multi bool
	// Watched, with Multi, is the key's digest when the client WATCHed it (see
	// watchDigest); nil when it did not.
	Watched []byte
	// WatchOnly asks for the key's digest (WATCH) instead of running commands.
	WatchOnly bool
	// Cmds are the commands, each its argument vector (name first).
	Cmds [][][]byte
}

// LeaderStore is the Store a key's leader reads and writes through: in a cluster, the
// leader's own copy merged with a read at the request's level, and writes applied to the
// own copy before the replicas (so that the leader's next read sees them whatever its
// engine's write path).
type LeaderStore interface {
	Get(level string, key []byte) (row.Row, error)
	Apply(level string, batch []row.Mutation) error
}

// keyLocks serializes the leader's commands per key. Striped: two keys may share a lock.
type keyLocks struct {
	seed  maphash.Seed
	locks [256]sync.Mutex
}

func (l *keyLocks) stripe(key []byte) int {
	return int(maphash.Bytes(l.seed, key) % uint64(len(l.locks)))
}

// lock takes the locks of keys in stripe order (no deadlock between two multi-key
// transactions) and returns the function that releases them.
func (l *keyLocks) lock(keys [][]byte) func() {
	stripes := make([]int, 0, len(keys))
	for _, k := range keys {
		stripes = append(stripes, l.stripe(k))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		l.locks[i].Lock()
	}
	return func() {
		for _, i := range stripes {
			l.locks[i].Unlock()
		}
	}
}

// atLeader runs a flagLeader command (a single-key read-modify-write, key args[1]) so that
// no other leader command or transaction on the key interleaves with it.
func (h *Handler) atLeader(dst []byte, c *command, args [][]byte, s *Session) []byte {
	if s.store != nil { // already at the leader, inside a transaction
		return c.fn(h, dst, args, s)
	}
	req := LeaderRequest{Key: args[1], Level: s.consistency, Proto: int(s.proto), Cmds: [][][]byte{args}}
	return h.sendToLeader(dst, &req, [][]byte{args[1]}, nil)
}

// watch is a key WATCH saw, and the digest of the row it saw.
type watch struct {
	key, digest []byte
}

// sendToLeader runs req at its key's leader through the store when it is a Leader.
// Otherwise (a single node) it runs req in place under the locks of keys, checking the
// watches; a single node's transactions may touch several keys.
func (h *Handler) sendToLeader(dst []byte, req *LeaderRequest, keys [][]byte, watches []watch) []byte {
	if l, ok := h.store.(Leader); ok {
		reply, err := l.AtLeader(req)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		return append(dst, reply...)
	}
	return h.runLocked(dst, req, keys, watches, directStore{h.store})
}

// RunAtLeader runs a request this node leads (the Leader store's local half, or a peer's
// request over the internode transport) through store, and appends its reply to dst.
func (h *Handler) RunAtLeader(dst []byte, req *LeaderRequest, store LeaderStore) []byte {
	keys := [][]byte{req.Key}
	if req.WatchOnly {
		unlock := h.locks.lock(keys)
		defer unlock()
		r, err := store.Get(req.Level, req.Key)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		return appendBulk(dst, watchDigest(&r))
	}
	var watches []watch
	if req.Watched != nil {
		watches = []watch{{req.Key, req.Watched}}
	}
	return h.runLocked(dst, req, keys, watches, store)
}

// runLocked runs req's commands under the locks of keys, against an overlay of store that
// collects their writes and applies them as one batch at the end: the commands of a
// transaction see each other's writes, and land together.
func (h *Handler) runLocked(dst []byte, req *LeaderRequest, keys [][]byte, watches []watch, store LeaderStore) []byte {
	unlock := h.locks.lock(keys)
	defer unlock()
	tx := &txStore{base: store, level: req.Level}
	run := Session{id: -1, proto: resp2, consistency: req.Level, store: tx}
	if req.Proto == 3 {
		run.proto = resp3
	}
	start := len(dst)
	if req.Multi {
		for _, w := range watches {
			r, _, err := tx.Get(w.key)
			if err != nil {
				return h.appendStoreErr(dst, err)
			}
			if !bytes.Equal(watchDigest(&r), w.digest) {
				return run.proto.appendNullArray(dst)
			}
		}
		dst = appendArray(dst, len(req.Cmds))
	}
	for _, args := range req.Cmds {
		c := h.lookup(args[0])
		switch {
		case c == nil:
			dst = appendUnknownCommand(dst, args)
		case !arityOK(c.arity, len(args)):
			dst = appendArityErr(dst, c.name)
		case txControl(c.name):
			// Never queued by a coordinator; from a peer they would nest transactions,
			// and WATCH would ask this key's leader, this node, for a lock it holds.
			dst = appendErrf(dst, "ERR %s cannot run at a key's leader", c.name)
		default:
			dst = c.fn(h, dst, args, &run)
		}
		run.release()
	}
	if err := tx.flush(); err != nil {
		return h.appendStoreErr(dst[:start], err)
	}
	return dst
}

// watchDigest identifies the version of a row WATCH saw: its digest, empty for an absent
// row.
func watchDigest(r *row.Row) []byte {
	if r.IsEmpty() {
		return []byte{}
	}
	d := row.Digest(*r, true)
	return []byte{byte(d >> 56), byte(d >> 48), byte(d >> 40), byte(d >> 32), byte(d >> 24), byte(d >> 16), byte(d >> 8), byte(d)}
}

// directStore is a plain Store seen as a LeaderStore (a single node).
type directStore struct{ s Store }

func (d directStore) Get(level string, key []byte) (row.Row, error) {
	if ls, ok := d.s.(LeveledStore); ok && level != "" {
		r, _, err := ls.GetAt(level, key)
		return r, err
	}
	r, _, err := d.s.Get(key)
	return r, err
}

func (d directStore) Apply(level string, batch []row.Mutation) error {
	if ls, ok := d.s.(LeveledStore); ok && level != "" {
		return ls.ApplyAt(level, batch)
	}
	return d.s.Apply(batch)
}

// txStore is the Store of commands running at the leader: it reads each key once from
// the base, shows the commands their own writes, and applies them all in flush.
type txStore struct {
	base  LeaderStore
	level string
	keys  []string
	read  map[string]row.Row // the base's row merged with the writes so far
	wrote map[string]row.Row // the writes so far, merged per key
}

var errTxKey = errors.New("resp: empty key")

func (t *txStore) Get(key []byte) (row.Row, bool, error) {
	if t.read == nil {
		t.read, t.wrote = map[string]row.Row{}, map[string]row.Row{}
	}
	if len(key) == 0 {
		return row.Row{}, false, nil // no row has the empty key
	}
	if r, ok := t.read[string(key)]; ok {
		return r.Clone(), !r.IsEmpty(), nil
	}
	r, err := t.base.Get(t.level, key)
	if err != nil {
		return row.Row{}, false, err
	}
	r = r.Clone()
	t.read[string(key)] = r
	return r.Clone(), !r.IsEmpty(), nil
}

func (t *txStore) Apply(batch []row.Mutation) error {
	for _, m := range batch {
		if len(m.Key) == 0 {
			return errTxKey
		}
		if _, _, err := t.Get(m.Key); err != nil {
			return err
		}
		k := string(m.Key)
		add := m.Row.Clone()
		if _, ok := t.wrote[k]; !ok {
			t.keys = append(t.keys, k)
		}
		t.wrote[k] = row.Merge(t.wrote[k], add)
		t.read[k] = row.Merge(t.read[k], add)
	}
	return nil
}

// flush applies the writes, one mutation per key, in one batch.
func (t *txStore) flush() error {
	if len(t.keys) == 0 {
		return nil
	}
	batch := make([]row.Mutation, len(t.keys))
	for i, k := range t.keys {
		batch[i] = row.Mutation{Key: []byte(k), Row: t.wrote[k]}
	}
	return t.base.Apply(t.level, batch)
}
