package tiered

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Tier names one of the two stores.
type Tier uint8

// The two tiers.
const (
	Slow Tier = iota
	Fast
)

// String returns "slow" or "fast".
func (t Tier) String() string {
	if t == Fast {
		return "fast"
	}
	return "slow"
}

func (t Tier) other() Tier { return 1 - t }

// cleanFileName marks, in the fast directory, that the engine was closed cleanly: no key
// is in both tiers, so the next Open need not look for any.
const cleanFileName = "KURA-TIERS-CLEAN"

// Options configure a tiered engine.
type Options struct {
	engine.Options
	// OpenTier opens the store of one tier in dir; it receives the tiered engine's
	// engine.Options. The default opens an lsm engine with its default settings.
	OpenTier func(dir string, t Tier, o engine.Options) (engine.Tierable, error)
	// Tracker, if set, counts every Get (at the engine's Clock) for a Migrator to decide
	// from. Iterators count nothing: scans for repair or streaming say nothing about
	// which rows clients read.
	Tracker *access.Tracker
	// CountWrites makes Apply count every written key in the Tracker too, as an access
	// like a read: the paper counts accesses (its collector is Cassandra's toppartitions,
	// which samples reads and writes). Writes rank rows: a row written often ranks
	// higher, so that its next read promotes it (from that read's capture) even when it
	// must displace rows read more than it, and keeps it on the fast tier, where its
	// updates stay off the slow device; under a mixed workload the ranking learns which
	// rows are hot twice as fast. A write that replaces its row whole also captures it
	// for a running Migrator to promote, as a read does (see captureWrites); other writes
	// move nothing. Off, only reads count, and writes capture nothing.
	//
	// Writes count only while reads are at least a tenth of the requests the engine
	// served in the tracker's previous window (see writeGate): a bulk load, or a node
	// taking its ranges from its peers, writes rows once each and reads none, and would
	// otherwise fill the fast tier with them.
	CountWrites bool
}

func (o Options) withDefaults() Options {
	o.Options = o.Options.WithDefaults()
	if o.OpenTier == nil {
		o.OpenTier = func(dir string, _ Tier, eo engine.Options) (engine.Tierable, error) {
			return lsm.Open(dir, lsm.Options{Options: eo})
		}
	}
	return o
}

// DB is the tiered engine. See the package comment.
type DB struct {
	dirs  [2]string
	opts  Options
	tiers [2]engine.Tierable

	// mu is held shared by every call and exclusively by Close.
	mu     sync.RWMutex
	closed bool

	// view is held shared by every write to a tier and exclusively while NewIterator takes
	// its two snapshots.
	view sync.RWMutex

	// moveMu serializes moves, and batches spanning both tiers (see applyAcross), so that
	// at most one caller at a time puts keys in both tiers.
	moveMu sync.Mutex

	stripes [stripeCount]stripe
	slots   []writeSlot // writeSlotCount of them

	// slowRead, if set, is called with every Get served by the slow tier: the key and,
	// when no write raced the read, the stored row's encoding and its write slot's count
	// (see Migrator.Start and moveCaptured). It must not block, nor keep the key; the
	// encoding is its own.
	slowRead atomic.Pointer[func(key, stored []byte, token uint64)]
	// slowWrite, if set, is called like slowRead for every counted write (see
	// Options.CountWrites) to a key at home on the slow tier that replaces the whole row
	// there, with the row as stored after it (see captureWrites).
	slowWrite atomic.Pointer[func(key, stored []byte, token uint64)]

	// gate decides whether writes count now (Options.CountWrites).
	gate writeGate

	// counters, read by Stats and TierStats
	fastKeys   atomic.Int64
	fastBytes  atomic.Int64    // the sizes in the stripes' fast maps, summed
	reads      [2]atomic.Int64 // reads served by each tier (a read of a key in both counts for its home)
	moved      [2]atomic.Int64 // rows moved to each tier
	spilled    atomic.Int64    // keys moved to the slow tier because the fast one was full
	movedBytes [2]atomic.Int64 // their encoded bytes
}

var _ engine.Engine = (*DB)(nil)

// Open opens (creating if needed) the tiered engine whose fast tier is in fastDir and slow
// tier in slowDir. If the last Close was not clean, every fast key is looked up in the slow
// tier and a key found in both is merged into the fast tier before Open returns.
func Open(fastDir, slowDir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if fastDir == "" || slowDir == "" || filepath.Clean(fastDir) == filepath.Clean(slowDir) {
		return nil, fmt.Errorf("tiered: open: %w: need two distinct directories, got fast %q and slow %q", engine.ErrInvalid, fastDir, slowDir)
	}
	db := &DB{dirs: [2]string{Slow: slowDir, Fast: fastDir}, opts: opts}
	db.slots = make([]writeSlot, writeSlotCount)
	for i := range db.stripes {
		db.stripes[i].both = make(map[string]Tier)
	}
	for _, t := range []Tier{Slow, Fast} {
		s, err := opts.OpenTier(db.dirs[t], t, opts.Options)
		if err != nil {
			db.closeTiers()
			return nil, fmt.Errorf("tiered: open the %s tier: %w", t, err)
		}
		db.tiers[t] = s
	}
	ceiling := int64(math.MaxInt64)
	if b, ok := db.tiers[Slow].(engine.TimestampBounded); ok {
		ceiling = b.TimestampCeiling()
	}
	for i := range db.slots {
		db.slots[i].ceiling.Store(ceiling)
	}
	if err := db.load(); err != nil {
		db.closeTiers()
		return nil, err
	}
	return db, nil
}

// closeTiers closes the tiers opened so far.
func (db *DB) closeTiers() error {
	var err error
	for _, s := range db.tiers {
		if s != nil {
			err = errors.Join(err, s.Close())
		}
	}
	return err
}

// load fills the fast keys' placement from the fast tier and, after an unclean close,
// merges the keys found in both tiers into the fast one. The clean mark is removed (and
// the removal made durable) before any write can come.
func (db *DB) load() error {
	fast := db.tiers[Fast]
	it, err := fast.NewStoredIterator(nil, nil)
	if err != nil {
		return fmt.Errorf("tiered: open: list the fast tier: %w", err)
	}
	var keys, bytes int64
	for it.Next() {
		r := it.Row()
		size := int64(row.EncodedSize(&r))
		db.stripes[stripeOf(it.Key())].fast.Set(it.Key(), size)
		bytes += size
		keys++
	}
	err = errors.Join(it.Err(), it.Close())
	if err != nil {
		return fmt.Errorf("tiered: open: list the fast tier: %w", err)
	}
	db.fastKeys.Store(keys)
	db.fastBytes.Store(bytes)
	mark := filepath.Join(db.dirs[Fast], cleanFileName)
	switch _, err := os.Stat(mark); {
	case err == nil:
		if err := os.Remove(mark); err != nil {
			return fmt.Errorf("tiered: open: %w", err)
		}
		return syncDir(db.dirs[Fast])
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("tiered: open: %w", err)
	}
	return db.reconcile()
}

// reconcile merges into the fast tier the fast keys that the slow tier also holds, and
// removes them from the slow tier: what a crash in the middle of a move leaves. It runs
// before Open returns, so nothing changes the stripes meanwhile.
func (db *DB) reconcile() error {
	const chunk = 256
	keys := make([][]byte, 0, chunk)
	for i := range db.stripes {
		for k := range db.stripes[i].fast.All() {
			keys = append(keys, slices.Clone(k))
			if len(keys) == chunk {
				if err := db.reconcileChunk(keys); err != nil {
					return err
				}
				keys = keys[:0]
			}
		}
	}
	return db.reconcileChunk(keys)
}

// reconcileChunk is reconcile for some of the fast keys.
func (db *DB) reconcileChunk(keys [][]byte) error {
	var muts []row.Mutation
	var found [][]byte
	for _, k := range keys {
		r, ok, err := db.tiers[Slow].GetStored(k)
		if err != nil {
			return fmt.Errorf("tiered: open: look up %q in the slow tier: %w", k, err)
		}
		if ok {
			muts = append(muts, row.Mutation{Key: k, Row: r})
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return nil
	}
	if err := db.tiers[Fast].Apply(muts); err != nil {
		return fmt.Errorf("tiered: open: merge keys found in both tiers: %w", err)
	}
	if err := db.tiers[Fast].Sync(); err != nil {
		return fmt.Errorf("tiered: open: %w", err)
	}
	if err := db.tiers[Slow].Remove(found); err != nil {
		return fmt.Errorf("tiered: open: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory, making the creation or removal of its entries durable.
func syncDir(dir string) error {
	if err := engine.SyncDir(dir); err != nil {
		return fmt.Errorf("tiered: %w", err)
	}
	return nil
}

// Name returns "tiered".
func (db *DB) Name() string { return "tiered" }

// Role is the role of the tiers' engine.
func (db *DB) Role() ring.Role { return db.tiers[Slow].Role() }

// enter takes the shared lock for one call; the caller must call db.mu.RUnlock when it
// returns nil.
func (db *DB) enter(op string) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return fmt.Errorf("tiered: %s: %w", op, engine.ErrClosed)
	}
	return nil
}

// Apply writes the batch to its keys' home tier. A batch spanning both tiers is written
// whole to the fast tier and its slow keys moved home before Apply returns (see the
// package comment).
//
// If the fast tier refuses the batch for lack of disk space (engine.ErrNoSpace: its
// device is fuller than the budget allowed for, with the store's own overhead), its keys
// are moved to the slow tier and the batch is written there: a full fast device costs
// placement, not writes.
func (db *DB) Apply(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("tiered: apply: %w", err)
	}
	home, err := db.apply(batch, true)
	if home != Fast || !errors.Is(err, engine.ErrNoSpace) {
		return err
	}
	keys := slices.Collect(batchKeys(batch))
	// A move that fails once its keys are marked (their removal from the fast tier
	// refused too) leaves them at home on the slow tier all the same, in both tiers until
	// a later move finishes them: the write can go ahead.
	merr := db.Move(keys, Slow)
	db.spilled.Add(int64(len(keys)))
	if _, err = db.apply(batch, false); err != nil { // a move back in between is unlikely and harmless
		return errors.Join(err, merr)
	}
	return nil
}

// apply writes the batch to its keys' home tier, or to the fast tier when they have two,
// and returns the tier written to. count says whether the write counts as an access
// (Options.CountWrites; a write retried after a spill counts once).
func (db *DB) apply(batch []row.Mutation, count bool) (Tier, error) {
	if err := db.enter("apply"); err != nil {
		return Slow, err
	}
	defer db.mu.RUnlock()
	idx := stripeSet(batchKeys(batch))
	for _, i := range idx {
		db.stripes[i].mu.RLock()
	}
	home, across := db.homeOf(batch)
	counted := false
	if count && db.opts.CountWrites && db.opts.Tracker != nil {
		now := db.opts.Clock()
		if counted = db.gate.write(len(batch), now, db.opts.Tracker.Config().Window); counted {
			at := time.UnixMicro(now)
			for i := range batch {
				db.opts.Tracker.Record(batch[i].Key, at)
			}
		}
	}
	if !across {
		var hook *func(key, stored []byte, token uint64)
		if counted && home == Slow {
			hook = db.slowWrite.Load()
		}
		caps := db.captureWrites(batch, hook != nil)
		for i := range batch {
			t := db.slots[slotOf(batch[i].Key)].started.Add(1)
			if caps != nil {
				caps[i].token, caps[i].ok = t, caps[i].ok && t == caps[i].token+1
			}
		}
		db.view.RLock()
		err := db.tiers[home].Apply(batch)
		db.view.RUnlock()
		if home == Slow {
			for i := range batch {
				prev := db.slots[slotOf(batch[i].Key)].raise(batch[i].Row.Newest())
				if caps != nil {
					caps[i].ok = caps[i].ok && err == nil && prev <= batch[i].Row.Deleted
				}
			}
		}
		for i := range batch {
			db.slots[slotOf(batch[i].Key)].finished.Add(1)
		}
		for i := range caps {
			if caps[i].ok {
				m := &batch[i]
				(*hook)(m.Key, row.Encode(new(row.Merge(row.Row{}, m.Row))), caps[i].token)
			}
		}
		for _, i := range idx {
			db.stripes[i].mu.RUnlock()
		}
		return home, wrapErr("apply", err)
	}
	for _, i := range idx {
		db.stripes[i].mu.RUnlock()
	}
	return Fast, db.applyAcross(batch, idx)
}

// writeCapture is what captureWrites knows of one mutation of a batch.
type writeCapture struct {
	// token is the count of the key's write slot: begun writes before this one, and
	// after it has begun, its own.
	token uint64
	// ok says whether the mutation may still capture its row.
	ok bool
}

// captureWrites starts, when on is set, the capture of the rows that the batch's
// mutations replace whole on the slow tier, for promotion as a read's capture is (see
// Get): nil otherwise. The caller holds the keys' stripes and writes the batch to the
// slow tier next. A mutation captures its key's row when
//
//   - its row tombstone shadows all the slow tier holds for the key: the ceiling of the
//     key's write slot, before the write raises it, is at or below the tombstone. (A SET
//     writes its value over a tombstone a microsecond older, see resp's cmdSet, so a SET
//     qualifies unless the slot's keys hold a newer timestamp or the engine opened less
//     than a minute ago: see lsm's ceiling.) The row stored after the write then reads
//     as the mutation's row alone, which is known without reading the slow device;
//   - it writes a value: a delete promotes nothing;
//   - no other write to its slot was under way when it began, none began alongside it
//     (the caller checks that its count is one above the token here), and the key is not
//     being moved: the ceiling then covers every earlier write, and a later one spoils the
//     capture as it does a read's.
func (db *DB) captureWrites(batch []row.Mutation, on bool) []writeCapture {
	if !on {
		return nil
	}
	caps := make([]writeCapture, len(batch))
	for i := range batch {
		m := &batch[i]
		ws := &db.slots[slotOf(m.Key)]
		begun, done := ws.started.Load(), ws.finished.Load()
		_, inBoth := db.stripes[stripeOf(m.Key)].home(m.Key)
		caps[i] = writeCapture{token: begun, ok: begun == done && !inBoth && holdsValue(&m.Row)}
	}
	return caps
}

// holdsValue reports whether r has a cell that is not a tombstone: a row deleted whole
// or cell by cell is not worth the fast tier's room.
func holdsValue(r *row.Row) bool {
	for i := range r.Cells {
		if !r.Cells[i].Tombstone {
			return true
		}
	}
	return false
}

// fastLow reports whether the fast tier's store would refuse a write for lack of disk
// space (engine.DiskWatcher): then no row is promoted to it.
func (db *DB) fastLow() bool { return db.fastLowBy(1 << 20) }

// fastLowBy reports whether the fast tier would refuse a write of n bytes for lack of
// disk space.
func (db *DB) fastLowBy(n int64) bool {
	w, ok := db.tiers[Fast].(engine.DiskWatcher)
	return ok && w.DiskLow(n)
}

// homeOf returns the home of the batch's keys and whether they do not share one. The
// caller holds their stripes.
func (db *DB) homeOf(batch []row.Mutation) (Tier, bool) {
	var home Tier
	for i := range batch {
		h, _ := db.stripes[stripeOf(batch[i].Key)].home(batch[i].Key)
		if i > 0 && h != home {
			return home, true
		}
		home = h
	}
	return home, false
}

// applyAcross writes a batch whose keys live on both tiers: whole to the fast tier, in
// one atomic write, with its slow keys marked in both; then it moves those keys home.
// It holds moveMu, so no move is under way and no other key is in both.
func (db *DB) applyAcross(batch []row.Mutation, idx []int) error {
	db.moveMu.Lock()
	defer db.moveMu.Unlock()
	for _, i := range idx {
		db.stripes[i].mu.Lock()
	}
	for i := range batch {
		ws := &db.slots[slotOf(batch[i].Key)]
		ws.started.Add(1)
		ws.finished.Add(1)
	}
	var slow [][]byte
	for i := range batch {
		k := batch[i].Key
		s := &db.stripes[stripeOf(k)]
		if h, _ := s.home(k); h == Slow {
			s.both[string(k)] = Slow
			slow = append(slow, k) // a key twice in the batch moves twice: harmless
		}
	}
	db.view.RLock()
	err := db.tiers[Fast].Apply(batch)
	db.view.RUnlock()
	for _, i := range idx {
		db.stripes[i].mu.Unlock()
	}
	if err != nil {
		// Part of the batch may be in the fast tier: the marks stay until the move
		// below has merged them home.
		err = wrapErr("apply", err)
	}
	return errors.Join(err, db.finishMoves(Fast, Slow, slow, nil))
}

// batchKeys yields the keys of a batch.
func batchKeys(batch []row.Mutation) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for i := range batch {
			if !yield(batch[i].Key) {
				return
			}
		}
	}
}

// Get reads key from its home tier, or from both tiers while it is being moved.
func (db *DB) Get(key []byte) (row.Row, bool, error) {
	if err := db.enter("get"); err != nil {
		return row.Row{}, false, err
	}
	defer db.mu.RUnlock()
	s := &db.stripes[stripeOf(key)]
	s.mu.RLock()
	defer s.mu.RUnlock()
	home, inBoth := s.home(key)
	db.reads[home].Add(1)
	if db.opts.Tracker != nil {
		now := db.opts.Clock()
		db.opts.Tracker.Record(key, time.UnixMicro(now))
		if db.opts.CountWrites {
			db.gate.read(now, db.opts.Tracker.Config().Window)
		}
	}
	if hook := db.slowRead.Load(); hook != nil && home == Slow && !inBoth {
		return db.getCapturing(key, *hook)
	}
	if !inBoth {
		r, found, err := db.tiers[home].Get(key)
		return r, found, wrapErr("get", err)
	}
	// The source first: what a move takes from it is in the destination before it goes.
	src, err := db.getStored(home.other(), key)
	if err != nil {
		return row.Row{}, false, err
	}
	dst, err := db.getStored(home, key)
	if err != nil {
		return row.Row{}, false, err
	}
	return db.readView(key, row.Merge(src, dst))
}

// getCapturing reads a slow key as Get does and hands the stored row to hook, with its
// write slot's count, if no write to the slot ran during the read: a promotion soon after
// can then copy that row instead of reading the slow device again. The caller holds the
// key's stripe shared.
func (db *DB) getCapturing(key []byte, hook func(key, stored []byte, token uint64)) (row.Row, bool, error) {
	ws := &db.slots[slotOf(key)]
	token, quiet := ws.started.Load(), ws.finished.Load()
	r, found, err := db.tiers[Slow].GetStored(key)
	if err != nil {
		return row.Row{}, false, wrapErr("get", err)
	}
	if !found {
		return row.Row{}, false, nil
	}
	if token == quiet && ws.started.Load() == token {
		hook(key, row.Encode(&r), token)
	} else {
		hook(key, nil, 0)
	}
	return db.readView(key, r)
}

// getStored reads key's stored row from tier t; a missing row is the empty row.
func (db *DB) getStored(t Tier, key []byte) (row.Row, error) {
	r, _, err := db.tiers[t].GetStored(key)
	if err != nil {
		return row.Row{}, fmt.Errorf("tiered: get %q from the %s tier: %w", key, t, err)
	}
	return r, nil
}

// readView applies the read-time purge and expiry view to key's stored row, as each
// tier's own Get does.
func (db *DB) readView(key []byte, r row.Row) (row.Row, bool, error) {
	now := db.opts.Clock()
	row.Purge(&r, db.opts.Horizon(key, now), 0)
	if r.IsEmpty() {
		return row.Row{}, false, nil
	}
	return engine.ReadView(r, now), true, nil
}

// Flush flushes both tiers.
func (db *DB) Flush() error {
	if err := db.enter("flush"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return wrapErr("flush", errors.Join(db.tiers[Fast].Flush(), db.tiers[Slow].Flush()))
}

// Stats sums the two tiers' figures; the read amplification is the worse tier's, since a
// read looks into the tier where its key lives.
func (db *DB) Stats() engine.Stats {
	if db.enter("stats") != nil {
		return engine.Stats{}
	}
	defer db.mu.RUnlock()
	var st engine.Stats
	for _, s := range db.tiers {
		t := s.Stats()
		st.DiskBytes += t.DiskBytes
		st.MemoryBytes += t.MemoryBytes
		st.RowsEstimate += t.RowsEstimate
		st.RowCacheHits += t.RowCacheHits
		st.RowCacheMisses += t.RowCacheMisses
		st.BlockCacheHits += t.BlockCacheHits
		st.BlockCacheMisses += t.BlockCacheMisses
		st.CompactionReadBytes += t.CompactionReadBytes
		st.CompactionDebtBytes += t.CompactionDebtBytes
		st.ReadAmp = max(st.ReadAmp, t.ReadAmp) // a read looks into one tier
		st.AddDisk(t)
	}
	return st
}

// Report is each tier's own report (engine.Reporter), fast first, under a heading that
// names the tier and its directory; a tier whose engine has none says so.
func (db *DB) Report() string {
	if err := db.enter("report"); err != nil {
		return err.Error() + "\n"
	}
	defer db.mu.RUnlock()
	var b strings.Builder
	for i, t := range []Tier{Fast, Slow} {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s tier (%s):\n", t, db.dirs[t])
		if r, ok := db.tiers[t].(engine.Reporter); ok {
			b.WriteString(r.Report())
		} else {
			fmt.Fprintf(&b, "the %s engine has no report\n", db.tiers[t].Name())
		}
	}
	return b.String()
}

// TierStats are one tier's figures.
type TierStats struct {
	// Stats are the tier's engine's own.
	engine.Stats
	// Keys is the number of keys at home on the tier: exact for the fast tier, the
	// engine's estimate for the slow one.
	Keys int64
	// Reads counts the reads it served since Open.
	Reads int64
	// MovedIn and MovedInBytes count the rows moved to the tier since Open and their
	// encoded size.
	MovedIn, MovedInBytes int64
}

// Spilled counts the keys moved to the slow tier because the fast tier refused a write to
// them for lack of disk space (see Apply).
func (db *DB) Spilled() int64 { return db.spilled.Load() }

// TierStats returns each tier's figures, indexed by Tier.
func (db *DB) TierStats() [2]TierStats {
	var out [2]TierStats
	if db.enter("tier stats") != nil {
		return out
	}
	defer db.mu.RUnlock()
	for _, t := range []Tier{Slow, Fast} {
		out[t] = TierStats{Stats: db.tiers[t].Stats(), Reads: db.reads[t].Load(),
			MovedIn: db.moved[t].Load(), MovedInBytes: db.movedBytes[t].Load()}
	}
	out[Fast].Keys = db.fastKeys.Load()
	out[Slow].Keys = out[Slow].RowsEstimate
	return out
}

// Close closes both tiers and, if both closed cleanly, marks the fast directory clean. It
// waits for calls and moves in flight and is safe to call more than once.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	if err := db.closeTiers(); err != nil {
		return fmt.Errorf("tiered: close: %w", err)
	}
	// No key is in both: moves finish under mu held shared, and a move that failed
	// leaves its keys marked, which we check.
	for i := range db.stripes {
		if len(db.stripes[i].both) > 0 {
			return nil
		}
	}
	f, err := os.Create(filepath.Join(db.dirs[Fast], cleanFileName))
	if err != nil {
		return fmt.Errorf("tiered: close: %w", err)
	}
	err = errors.Join(f.Sync(), f.Close(), syncDir(db.dirs[Fast]))
	return wrapErr("close", err)
}

// wrapErr prefixes err with the operation; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("tiered: %s: %w", op, err)
}
