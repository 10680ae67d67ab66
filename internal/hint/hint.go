// Package hint keeps the writes a coordinator could not deliver to a replica (hinted
// handoff) on the coordinator's disk, and hands them back oldest first for replay once
// the replica is up again. A Queue in front of the Store takes hints off the request path.
//
// Hints are bounded two ways, so that a long outage cannot fill the coordinator's disk:
// by age (Window, default 3 h: hints older than it are dropped, and a replica whose
// oldest hint is that old gets no new ones, since it will need a repair anyway) and by
// total size (MaxBytes). A dropped hint is counted, never silent, and marks the span of
// the ring its key falls in as needing repair for that replica (Marked, MarkedTargets,
// ClearMarks; marks.go): a replica that comes back in time catches up from its hints, and
// the ranges whose hints were dropped are left to a rebuild or a repair. Hints and marks
// are stored in their own pebble instance, written without fsync: a hint, or a mark, lost
// in a machine crash costs a read repair later, not an acknowledged write, because the
// write was acknowledged by the replicas that did take it.
package hint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine/space"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// Defaults of Options.
const (
	DefaultWindow   = 3 * time.Hour
	DefaultMaxBytes = 1 << 30
)

// Errors returned by Add when a hint is dropped instead of stored.
var (
	ErrFull    = errors.New("hint: store full")
	ErrExpired = errors.New("hint: replica unreachable for longer than the hint window")
)

// Options configure a Store.
type Options struct {
	Window   time.Duration // default DefaultWindow
	MaxBytes int64         // default DefaultMaxBytes
	// Logger, if set, gets the store's pebble write stalls and slow disk operations:
	// Add waits out a stall, and the write that stores the hint with it.
	Logger *slog.Logger
	// DiskReserveBytes is the free space Add keeps on the store's device: a hint that
	// would leave less is dropped (ErrFull) rather than written, since pebble ends the
	// process when it cannot write its log. 0 means space.DefaultReserveBytes, capped at
	// a tenth of the device; negative disables.
	DiskReserveBytes int64
}

// Stats describes the hints held for one replica.
type Stats struct {
	Hints   int64
	Bytes   int64
	Oldest  time.Time // zero when there are none
	Dropped int64     // hints refused or expired since the store was opened
}

// Store is a coordinator's durable hint store. Safe for concurrent use.
type Store struct {
	db    *pebble.DB
	opts  Options
	space *space.Guard // keeps Options.DiskReserveBytes free

	mu      sync.Mutex
	seq     uint64
	targets map[string]*Stats
	total   int64
	// held mirrors each target's Hints for Holds, which runs on every load-aware read
	// and must not wait behind Add, which writes to pebble under mu.
	held sync.Map // target -> *atomic.Int64
	// floors holds, per target, a key below which every hint of the target is deleted:
	// just past the last one Replay or Discard deleted. Keys only grow (seq), so no hint
	// is ever added below it. Replay and Discard start there instead of at the target's
	// first key, so that they do not step over the tombstones of every hint replayed
	// before (until a compaction drops them): a backlog of 500,000 deferred writes
	// replayed a batch at a time read 2-3.6 GB from disk per node in 50 s that way
	// (docs/benchmarks.md at 77be0fa, 2026-11-24, run I). Not persisted: the first replay after a
	// restart steps over them once.
	floors map[string][]byte
	// scanned counts the keys, tombstones included, that Replay and Discard iterated
	// over (pebble's iterator stats), for tests.
	scanned atomic.Int64
	// marks are the repair marks of each target that lost writes (marks.go).
	marks map[string]*targetMarks
}

// Open opens (creating) the hint store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	po := &pebble.Options{Logger: quietLogger{}}
	if l := opts.Logger; l != nil {
		attr := slog.String("component", "hint store")
		po.EventListener = &pebble.EventListener{
			DiskSlow: func(info pebble.DiskSlowInfo) { l.Warn("pebble disk slow", attr, slog.String("info", info.String())) },
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				l.Warn("pebble write stall", attr, slog.String("reason", info.Reason))
			},
			WriteStallEnd: func() { l.Info("pebble write stall ended", attr) },
		}
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("hint: open %s: %w", dir, err)
	}
	s := &Store{db: db, opts: opts, targets: map[string]*Stats{}, floors: map[string][]byte{},
		marks: map[string]*targetMarks{}, space: space.New(dir, space.Options{ReserveBytes: opts.DiskReserveBytes})}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.loadMarks(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// load rebuilds the per-target counters and the sequence from the stored hints.
func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: hintKeysStart})
	if err != nil {
		return fmt.Errorf("hint: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		target, seq, err := parseKey(it.Key())
		if err != nil {
			return err
		}
		created, _, err := parseValue(it.Value())
		if err != nil {
			return err
		}
		s.seq = max(s.seq, seq)
		s.count(target, created, int64(len(it.Key())+len(it.Value())))
	}
	return nil
}

func (s *Store) count(target string, created time.Time, size int64) {
	st := s.targets[target]
	if st == nil {
		st = &Stats{}
		s.targets[target] = st
	}
	st.Hints++
	s.heldFor(target).Add(1)
	st.Bytes += size
	s.total += size
	if st.Oldest.IsZero() || created.Before(st.Oldest) {
		st.Oldest = created
	}
}

// Add stores m for target, created now. It returns ErrFull or ErrExpired when the bounds
// refuse it, and then counts the drop and marks m's token for repair (Marked).
func (s *Store) Add(target string, m row.Mutation, now time.Time) error {
	if target == "" || bytes.IndexByte([]byte(target), 0) >= 0 {
		return fmt.Errorf("hint: invalid target %q", target)
	}
	val := binary.BigEndian.AppendUint64(nil, uint64(now.UnixMicro()))
	val = wire.AppendWriteRequest(val, &wire.WriteRequest{Mutations: []row.Mutation{m}})
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.targets[target]
	switch {
	case st != nil && !st.Oldest.IsZero() && now.Sub(st.Oldest) > s.opts.Window:
		return s.dropped(target, m, now, ErrExpired)
	case s.total+int64(len(val)) > s.opts.MaxBytes:
		return s.dropped(target, m, now, ErrFull)
	}
	if err := s.space.Admit(int64(len(val))); err != nil {
		return s.dropped(target, m, now, fmt.Errorf("%w: %w", ErrFull, err))
	}
	s.seq = max(s.seq+1, uint64(now.UnixNano()))
	key := makeKey(target, s.seq)
	if err := s.db.Set(key, val, pebble.NoSync); err != nil {
		return fmt.Errorf("hint: add: %w", err)
	}
	s.count(target, now, int64(len(key)+len(val)))
	return nil
}

// dropped counts m, a hint for target created at now that Add refused for cause, and
// marks its token for repair; it returns cause, joined with the error of storing the mark
// if that failed. The caller holds mu.
func (s *Store) dropped(target string, m row.Mutation, now time.Time, cause error) error {
	if s.targets[target] == nil {
		s.targets[target] = &Stats{}
	}
	s.targets[target].Dropped++
	if err := s.markLocked(s.db, target, now, ring.TokenOf(m.Key)); err != nil {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return cause
}

// Replay hands up to max of target's oldest hints to send as one batch, and deletes them
// once send returns nil. Hints older than the window are deleted unsent (counted as
// dropped, and their tokens marked for repair). It returns how many hints were sent;
// send's error is returned as is, and the hints stay for the next attempt. Replays of one
// target must not run concurrently.
func (s *Store) Replay(target string, now time.Time, max int, send func([]row.Mutation) error) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.floor(target), UpperBound: makeKey(target, ^uint64(0))})
	if err != nil {
		return 0, fmt.Errorf("hint: %w", err)
	}
	var last []byte // the last key looked at, deleted below if all goes well
	var batch []row.Mutation
	var keep, expired []stored
	var next time.Time // the oldest hint past this batch, zero if none
	for it.First(); it.Valid(); it.Next() {
		created, req, err := parseValue(bytes.Clone(it.Value()))
		if err != nil {
			it.Close()
			return 0, err
		}
		if len(batch) >= max {
			next = created
			break
		}
		h := stored{key: bytes.Clone(it.Key()), size: int64(len(it.Key()) + len(it.Value())), created: created}
		last = h.key
		if now.Sub(created) > s.opts.Window {
			h.tokens = tokensOf(req)
			expired = append(expired, h)
			continue
		}
		batch = append(batch, req.Mutations...)
		keep = append(keep, h)
	}
	s.scanned.Add(int64(it.Stats().InternalStats.PointCount))
	it.Close()
	oldest := next
	if len(keep) > 0 {
		oldest = keep[0].created
	}
	if err := s.delete(target, expired, true, oldest); err != nil {
		return 0, err
	}
	if len(batch) == 0 {
		s.raiseFloor(target, last)
		return 0, nil
	}
	if err := send(batch); err != nil {
		return 0, err
	}
	if err := s.delete(target, keep, false, next); err != nil {
		return 0, err
	}
	s.raiseFloor(target, last)
	return len(keep), nil
}

// floor returns the key Replay and Discard start target's hints from.
func (s *Store) floor(target string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.floors[target]; f != nil {
		return f
	}
	return makeKey(target, 0)
}

// raiseFloor records that every hint of target up to and including key is deleted (nil:
// nothing was).
func (s *Store) raiseFloor(target string, key []byte) {
	if key == nil {
		return
	}
	f := append(bytes.Clone(key), 0) // just past it
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Compare(f, s.floors[target]) > 0 {
		s.floors[target] = f
	}
}

// discardChunk is how many hints Discard deletes per batch, so that a backlog of a
// million is not held in memory at once.
const discardChunk = 4096

// Discard deletes, unsent, target's hints created before before, and returns how many:
// target was rebuilt from its other replicas, from a moment after the writes they carry
// were acknowledged, so it has them. It stops at the first hint created at or after
// before (hints are stored in the order they were added; one added a moment late among
// them is kept and replayed, which is harmless). Discarded hints are not counted as
// dropped. Replays of target must not run concurrently with it.
func (s *Store) Discard(target string, before time.Time) (int, error) {
	lo := s.floor(target)
	total := 0
	for {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: makeKey(target, ^uint64(0))})
		if err != nil {
			return total, fmt.Errorf("hint: %w", err)
		}
		var chunk []stored
		var next time.Time // the oldest hint kept, zero if none was seen
		for it.First(); it.Valid() && len(chunk) < discardChunk; it.Next() {
			created, err := parseCreated(it.Value())
			if err != nil {
				it.Close()
				return total, err
			}
			if !created.Before(before) {
				next = created
				break
			}
			chunk = append(chunk, stored{key: bytes.Clone(it.Key()), size: int64(len(it.Key()) + len(it.Value())), created: created})
		}
		s.scanned.Add(int64(it.Stats().InternalStats.PointCount))
		it.Close()
		if err := s.delete(target, chunk, false, next); err != nil {
			return total, err
		}
		if len(chunk) > 0 {
			s.raiseFloor(target, chunk[len(chunk)-1].key)
		}
		total += len(chunk)
		if len(chunk) < discardChunk {
			return total, nil
		}
		lo = append(chunk[len(chunk)-1].key, 0) // just past the last one deleted
	}
}

// stored is one hint read back: its key, its size on disk and when it was created; for
// a hint dropped unsent, the tokens of its writes, to mark.
type stored struct {
	key     []byte
	size    int64
	created time.Time
	tokens  []ring.Token
}

// delete removes hints of target and updates its counters without a rescan; oldest is the
// creation time of the oldest hint left (zero if none was seen). dropped says whether the
// hints count as dropped: their tokens are then marked for repair in the batch that
// deletes them, under mu (see markLocked).
func (s *Store) delete(target string, hints []stored, dropped bool, oldest time.Time) error {
	if len(hints) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	for _, h := range hints {
		_ = b.Delete(h.key, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if dropped {
		for _, h := range hints {
			if err := s.markLocked(b, target, h.created, h.tokens...); err != nil {
				return err
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("hint: delete: %w", err)
	}
	st := s.targets[target]
	for _, h := range hints {
		st.Hints--
		st.Bytes -= h.size
		s.total -= h.size
	}
	s.heldFor(target).Add(-int64(len(hints)))
	if dropped {
		st.Dropped += int64(len(hints))
	}
	switch {
	case st.Hints == 0:
		st.Oldest = time.Time{}
	case !oldest.IsZero():
		st.Oldest = oldest
	default: // every hint seen was deleted, but Add stored new ones meanwhile
		st.Oldest = s.firstCreated(target)
	}
	return nil
}

// firstCreated returns when target's oldest stored hint was created, zero if none. The
// caller holds mu.
func (s *Store) firstCreated(target string) time.Time {
	lo := s.floors[target]
	if lo == nil {
		lo = makeKey(target, 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: makeKey(target, ^uint64(0))})
	if err != nil {
		return time.Time{}
	}
	defer it.Close()
	if !it.First() {
		return time.Time{}
	}
	created, _, _ := parseValue(it.Value())
	return created
}

// Holds reports whether the store holds any hint for target: writes target has not had
// yet. It takes no lock, so it is cheap enough to call per request.
func (s *Store) Holds(target string) bool {
	n, ok := s.held.Load(target)
	return ok && n.(*atomic.Int64).Load() > 0
}

// Holding returns, sorted, the targets the store holds hints for. Like Holds it takes no
// lock.
func (s *Store) Holding() []string {
	var out []string
	s.held.Range(func(k, v any) bool {
		if v.(*atomic.Int64).Load() > 0 {
			out = append(out, k.(string))
		}
		return true
	})
	slices.Sort(out)
	return out
}

// heldFor returns target's counter for Holds.
func (s *Store) heldFor(target string) *atomic.Int64 {
	if n, ok := s.held.Load(target); ok {
		return n.(*atomic.Int64)
	}
	n, _ := s.held.LoadOrStore(target, new(atomic.Int64))
	return n.(*atomic.Int64)
}

// Stats returns a copy of the counters of every target that has or had hints.
func (s *Store) Stats() map[string]Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Stats, len(s.targets))
	for t, st := range s.targets {
		out[t] = *st
	}
	return out
}

// Close flushes and closes the store.
func (s *Store) Close() error {
	if err := s.db.Flush(); err != nil {
		s.db.Close()
		return fmt.Errorf("hint: close: %w", err)
	}
	return s.db.Close()
}

// Keys are target, 0x00, then the sequence number big-endian, so a target's hints sort
// oldest first. Target IDs must not contain 0x00.
func makeKey(target string, seq uint64) []byte {
	k := append([]byte(target), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func parseKey(k []byte) (string, uint64, error) {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return "", 0, fmt.Errorf("hint: malformed key %q", k)
	}
	return string(k[:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

func parseValue(v []byte) (time.Time, wire.WriteRequest, error) {
	created, err := parseCreated(v)
	if err != nil {
		return time.Time{}, wire.WriteRequest{}, err
	}
	req, err := wire.DecodeWriteRequest(v[8:])
	if err != nil {
		return time.Time{}, wire.WriteRequest{}, fmt.Errorf("hint: %w", err)
	}
	return created, req, nil
}

// parseCreated reads when a hint was created from its stored value, without decoding the
// write it carries.
func parseCreated(v []byte) (time.Time, error) {
	if len(v) < 8 {
		return time.Time{}, fmt.Errorf("hint: malformed value")
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(v[:8]))), nil
}

// quietLogger drops pebble's informational lines ("Found 0 WALs"); a fatal error still
// stops the process, as pebble expects of its logger.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("hint: pebble: "+format, args...))
}
