package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/rowcache"
	"github.com/kuradb/kura/internal/engine/space"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// lockFileName is kura's own lock inside the data directory. Pebble's LOCK reports a held
// lock with errors callers cannot test (EAGAIN from fcntl, or "lock held by current
// process" from a map keyed by the path string, which "d" and "./d" defeat); an flock
// taken first gives every engine the same engine.ErrLocked.
const lockFileName = "KURA.LOCK"

// Defaults of Options.
const (
	DefaultCacheSizeBytes    = 256 << 20
	DefaultMemTableSizeBytes = 32 << 20
	DefaultRowCacheBytes     = 256 << 20
	// MinBlockSizeBytes and MaxBlockSizeBytes bound Options.BlockSizeBytes.
	MinBlockSizeBytes = 1 << 10
	MaxBlockSizeBytes = 1 << 20
)

// formatVersion pins pebble's on-disk format instead of following pebble.FormatNewest, so
// that upgrading pebble never rewrites the format by surprise. This version has WAL sync
// chunks (replay tells a torn tail from corruption) and sstable footer checksums.
const formatVersion = pebble.FormatValueSeparation

// Options configure an lsm engine. The zero value is usable.
type Options struct {
	engine.Options
	// CacheSizeBytes is the block cache's capacity; default 256 MiB. The cache fills only as
	// blocks are read, so an idle node stays small.
	CacheSizeBytes int64
	// MemTableSizeBytes is the size at which a memtable is flushed; default 32 MiB. Pebble
	// starts with small memtables and grows them up to this size.
	MemTableSizeBytes uint64
	// BlockSizeBytes is the target size of an sstable's data and index blocks before
	// compression; default pebble's 4 KiB, from MinBlockSizeBytes to MaxBlockSizeBytes.
	// A point read that misses the caches reads one data block, and the index block that
	// locates it unless that is cached: on a device where a read costs a seek whatever its
	// size (an HDD), larger blocks cost a read no more seeks and shrink the index that
	// should stay cached (about 27 MB for 3 GB of 1 KB rows at 4 KiB, by estimate), at the
	// price of caching and reading a whole block for one row. Measured on the emulated
	// HDD, 32 KiB blocks gained nothing once steady (docs/benchmarks.md at 77be0fa): the page cache
	// had been serving the index misses. Tables written before a change keep their blocks.
	BlockSizeBytes int
	// Logger receives pebble's log lines and background errors; nil discards them.
	Logger *slog.Logger
	// RowCacheBytes is the row cache's capacity (see rowcache.Cache); default 256 MiB, negative
	// disables it. It fills only as rows are read.
	RowCacheBytes int64
	// WALDir, when set, holds the write-ahead log instead of the data directory: a
	// commit log on a device of its own, as Cassandra's operators give it, keeps the
	// fsync of every write clear of compaction and of other engines' I/O. It is locked
	// like the data directory. Changing it later needs the old one to hold no log:
	// pebble refuses to open otherwise (it is told to look in the data directory too).
	WALDir string
	// SecondDir, with SecondDirPolicy, places some sstables in a second directory (on
	// another device); see SecondDirPolicy. Both or neither must be set.
	SecondDir       string
	SecondDirPolicy SecondDirPolicy
	// LowPriorityCompactions runs the store's compactions and flushes on threads at the
	// lowest CPU priority (lowPriorityScheduler, package lowprio), so that on a busy
	// machine reads and writes take the CPU first; up to two such threads per compaction
	// may hold a Go P while the kernel holds them back (lowprio.Reserve). A flush's table
	// writer goroutine, which pebble gives no hook, keeps the process's priority.
	LowPriorityCompactions bool
	// CollapseOperands is the number of merge operands a read of one key may merge before
	// the key is rewritten as one value (see collapser); default 16, negative disables.
	CollapseOperands int
	// DropPageCache drops the store's file pages from the operating system's page cache
	// once they are read or synced (see uncachedFS), so that the memory they would take
	// goes to other files. Tiered storage can set it on the fast tier's store
	// (--tier-fast-page-cache=false): its device answers a miss cheaply, and pages it
	// keeps cached could push out the slow tier's, whose misses cost slow-device reads
	// (measured: no gain while pebble's block cache holds the hot blocks, whose page-cache
	// copies age out first; docs/design/tiered.md). Default false: pages stay cached as
	// the kernel sees fit.
	DropPageCache bool
	// WALFailoverDir, when set, is where the write-ahead log goes while a write or sync
	// of the log in its own directory (WALDir or the data directory) takes over 100 ms,
	// until that directory answers quickly again (pebble's WAL
	// failover): a log on a disk that something else keeps busy (the heterogeneous
	// hosts' B+tree file shares the log disk, docs/benchmarks.md at 77be0fa) no longer stalls every
	// commit behind a slow fsync. Put it on another device. It is locked like the data
	// directory; once used, a store opened without it refuses to start while logs may
	// still be there.
	WALFailoverDir string

	// fs is the file system under the store when no second directory is set; nil is the
	// operating system's. Tests wrap it to make the device misbehave.
	fs vfs.FS
	// flushDelayDeleteRange is pebble's FlushDelayDeleteRange; 0 means
	// defaultFlushDelayDeleteRange. Tests shorten it.
	flushDelayDeleteRange time.Duration
}

func (o Options) withDefaults() Options {
	o.Options = o.Options.WithDefaults()
	if o.CacheSizeBytes <= 0 {
		o.CacheSizeBytes = DefaultCacheSizeBytes
	}
	if o.MemTableSizeBytes == 0 {
		o.MemTableSizeBytes = DefaultMemTableSizeBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CollapseOperands == 0 {
		o.CollapseOperands = DefaultCollapseOperands
	}
	if o.RowCacheBytes == 0 {
		o.RowCacheBytes = DefaultRowCacheBytes
	}
	if o.flushDelayDeleteRange == 0 {
		o.flushDelayDeleteRange = defaultFlushDelayDeleteRange
	}
	return o
}

// DB is the lsm engine: an engine.Engine on one pebble store. See the package comment.
type DB struct {
	dir  string
	opts Options
	pdb  *pebble.DB
	lock *engine.DirLock
	// dirLocks lock the other directories the store writes to (Options.WALDir,
	// SecondDir, WALFailoverDir), those that are set.
	dirLocks []*engine.DirLock
	wo       *pebble.WriteOptions

	// mu is held shared by every call and exclusively by Close, so Close waits for calls
	// in flight and no call reaches pebble after it is closed (pebble panics then).
	mu     sync.RWMutex
	closed bool

	itersMu sync.Mutex
	iters   map[*iterator]struct{} // open iterators, closed by Close

	// guards keep the free space of the devices holding the log and the tables above
	// Options.DiskReserveBytes (see admit).
	guards []*space.Guard

	syncer    *syncer         // nil unless Durability is Periodic
	collapser *collapser      // nil when CollapseOperands < 0
	rows      *rowcache.Cache // nil when RowCacheBytes < 0
	ceiling   *ceiling        // bounds every timestamp stored (engine.TimestampBounded)

	// Totals of what Apply wrote, to turn the WAL's size into a number of entries.
	appliedOps, appliedBytes atomic.Int64
}

var (
	_ engine.Engine      = (*DB)(nil)
	_ engine.Viewer      = (*DB)(nil)
	_ engine.DiskWatcher = (*DB)(nil)

	_ engine.TimestampBounded = (*DB)(nil)
)

// Open opens (creating if needed) the lsm engine stored in dir. It returns an error wrapping
// engine.ErrLocked if another DB, in this process or another, has dir open, and one wrapping
// engine.ErrCorrupt if pebble finds the store corrupt.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if b := opts.BlockSizeBytes; b != 0 && (b < MinBlockSizeBytes || b > MaxBlockSizeBytes) {
		return nil, fmt.Errorf("lsm: open %s: %w: block size %d (want %d to %d)", dir, engine.ErrInvalid, b, MinBlockSizeBytes, MaxBlockSizeBytes)
	}
	lock, err := engine.LockDir(dir, lockFileName)
	if err != nil {
		return nil, fmt.Errorf("lsm: open %s: %w", dir, err)
	}
	dirLocks, err := lockDirs(opts)
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	db := &DB{dir: dir, opts: opts, lock: lock, dirLocks: dirLocks, iters: make(map[*iterator]struct{})}
	if opts.CollapseOperands > 0 {
		db.collapser = newCollapser(db)
	}
	if opts.RowCacheBytes > 0 {
		db.rows = rowcache.New(opts.RowCacheBytes)
	}
	cache := pebble.NewCache(opts.CacheSizeBytes + memtableReserve(opts))
	defer cache.Unref() // pebble holds its own reference while open
	po := db.pebbleOptions(cache)
	if (opts.SecondDir == "") != (opts.SecondDirPolicy == "") {
		err = fmt.Errorf("%w: a second directory needs a policy and a policy a directory", engine.ErrInvalid)
	} else {
		err = db.applySecondDir(po)
	}
	if err == nil {
		switch {
		case po.FS != nil: // the second directory's
		case opts.fs != nil:
			po.FS = opts.fs
		default:
			po.FS = vfs.Default
		}
		if opts.DropPageCache {
			po.FS = newUncachedFS(po.FS)
		}
		po.FS = newWALFS(po.FS, opts.Logger)
		if po.WALFailover != nil {
			po.WALFailover.Secondary.FS = po.FS // slow operations there are logged too
		}
		db.pdb, err = pebble.Open(dir, po)
	}
	if err == nil && opts.SecondDirPolicy == LowerLevels {
		if err = db.pdb.SetCreatorID(1); err != nil { // pebble places no table remotely without one
			_ = db.pdb.Close()
		}
	}
	if err == nil {
		if db.ceiling, err = openCeiling(dir, func() (bool, error) { return storeEmpty(db.pdb) }); err != nil {
			_ = db.pdb.Close()
		}
	}
	if err != nil {
		_ = errors.Join(lock.Unlock(), unlockAll(dirLocks))
		if errors.Is(err, syscall.EAGAIN) { // someone outside kura holds pebble's LOCK
			err = fmt.Errorf("%w: %w", engine.ErrLocked, err)
		}
		return nil, wrapErr("open "+dir, err)
	}
	stat := func(dir string) (space.Usage, error) {
		u, err := po.FS.GetDiskUsage(dir)
		return space.Usage{AvailBytes: u.AvailBytes, TotalBytes: u.TotalBytes}, err
	}
	for _, d := range []string{dir, opts.WALDir} {
		if d != "" {
			db.guards = append(db.guards, space.New(d, space.Options{ReserveBytes: opts.DiskReserveBytes, Stat: stat}))
		}
	}
	if db.collapser != nil {
		db.collapser.start()
	}
	db.wo = pebble.Sync
	if opts.Durability == engine.Periodic {
		db.wo = pebble.NoSync
		db.syncer = startSyncer(db, opts.SyncInterval)
	}
	return db, nil
}

// lockDirs locks the directories besides the data directory that opts has the store
// write to, so that no two stores share one.
func lockDirs(opts Options) ([]*engine.DirLock, error) {
	var locks []*engine.DirLock
	for _, d := range []struct{ what, dir string }{
		{"the WAL directory", opts.WALDir}, {"the second directory", opts.SecondDir},
		{"the WAL failover directory", opts.WALFailoverDir},
	} {
		if d.dir == "" {
			continue
		}
		l, err := engine.LockDir(d.dir, lockFileName)
		if err != nil {
			_ = unlockAll(locks)
			return nil, fmt.Errorf("lsm: open %s %s: %w", d.what, d.dir, err)
		}
		locks = append(locks, l)
	}
	return locks, nil
}

func unlockAll(locks []*engine.DirLock) error {
	var err error
	for _, l := range locks {
		err = errors.Join(err, l.Unlock())
	}
	return err
}

// memtableReserve is what pebble's block cache is grown by so that CacheSizeBytes is
// left for blocks: pebble reserves every memtable's size in the block cache (to bound the
// two together), and up to two memtables are in memory (the mutable one and one being
// flushed; pebble's MemTableStopWritesThreshold). Without it a 64 MiB cache next to 32 MiB
// memtables cached no block at all under writes: every read went to the page cache or
// the device (measured in docs/benchmarks.md at 77be0fa, "Tiered storage").
func memtableReserve(opts Options) int64 { return 2 * int64(opts.MemTableSizeBytes) }

// bloomBitsPerKey sizes the bloom filter of every sstable: 10 bits per key gives about 1%
// false positives (RocksDB's and Cassandra's usual setting). Without filters a point read
// probes every L0 file and level whose key range covers the key; with them it skips the
// files that lack it, which is what keeps Get fast while a key's merge operands are still
// spread over several files. Pebble's default is no filter at all.
const bloomBitsPerKey = 10

func (db *DB) pebbleOptions(cache *pebble.Cache) *pebble.Options {
	o := &pebble.Options{
		Cache:              cache,
		MemTableSize:       db.opts.MemTableSizeBytes,
		FormatMajorVersion: formatVersion,
		Merger:             newMerger(func(key []byte) int64 { return db.opts.Horizon(key, db.opts.Clock()) }, db.requestCollapse),
		Logger:             pebbleLogger{db.opts.Logger},
		EventListener:      eventListener(db.opts.Logger, db.opts.LowPriorityCompactions),
		// A range deletion reclaims nothing until it is in a table (see DeleteRange).
		FlushDelayDeleteRange: db.opts.flushDelayDeleteRange,
	}
	if db.opts.LowPriorityCompactions {
		o.Experimental.CompactionScheduler = newLowPriorityScheduler()
	}
	if db.opts.WALDir != "" {
		o.WALDir = db.opts.WALDir
		o.WALRecoveryDirs = []wal.Dir{{FS: vfs.Default, Dirname: db.dir}} // logs of before it was set
	}
	if db.opts.WALFailoverDir != "" {
		// Pebble fails the log over once a write or sync takes over 100 ms (its
		// FailoverOptions default): a periodic sync on a healthy HDD takes tens of
		// milliseconds, and the stalls this avoids took a second and more.
		o.WALFailover = &pebble.WALFailoverOptions{Secondary: wal.Dir{Dirname: db.opts.WALFailoverDir}}
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		o.Levels[i].FilterType = pebble.TableFilter
		o.Levels[i].BlockSize = db.opts.BlockSizeBytes // 0: pebble's default
	}
	return o
}

// Name returns "lsm".
func (db *DB) Name() string { return "lsm" }

// Role returns ring.WriteOptimized.
func (db *DB) Role() ring.Role { return ring.WriteOptimized }

// enter takes the shared lock for one call; the caller must call db.mu.RUnlock when it
// returns nil.
func (db *DB) enter(op string) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return fmt.Errorf("lsm: %s: %w", op, engine.ErrClosed)
	}
	return nil
}

// Apply writes each mutation as one merge operand, in one pebble batch, without reading.
// In Durability Sync it returns once the batch is fsynced in the WAL. Pebble's commit
// pipeline groups the syncs of concurrent committers: each batch is queued for the WAL
// writer, whose flush loop takes every sync waiter queued so far, fsyncs once and wakes
// them all (commit.go "commitPipeline", record/log_writer.go "flushLoop"). In Periodic it
// returns once the batch is in the WAL writer's buffer.
func (db *DB) Apply(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("lsm: apply: %w", err)
	}
	if err := db.enter("apply"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	b := db.pdb.NewBatch()
	buf := encodeBufs.Get().(*[]byte)
	defer putEncodeBuf(buf)
	for i := range batch {
		m := &batch[i]
		if m.Row.IsEmpty() {
			continue // the identity of row.Merge: nothing to store
		}
		r := &m.Row
		if shadows(r) {
			// Store what row.Merge would keep, so that a lone operand reads as merged.
			n := row.Merge(row.Row{}, *r)
			r = &n
		}
		*buf = row.AppendEncode((*buf)[:0], r)
		if err := b.Merge(m.Key, *buf, nil); err != nil {
			_ = b.Close()
			return wrapErr("apply", err)
		}
	}
	if b.Empty() {
		return b.Close()
	}
	if db.collapser != nil {
		unlock := db.collapser.lockBatch(func(yield func([]byte) bool) {
			for i := range batch {
				if !yield(batch[i].Key) {
					return
				}
			}
		})
		defer unlock() // held until the batch is visible: see collapser
	}
	ops, size := int64(b.Count()), int64(b.Len())
	if err := db.admit(size); err != nil {
		_ = b.Close()
		return fmt.Errorf("lsm: apply: %w", err)
	}
	if err := db.ceiling.cover(newestTimestamp(batch)); err != nil {
		_ = b.Close()
		return err
	}
	err := db.pdb.Apply(b, db.wo)
	if db.rows != nil {
		// Once the batch is visible (Apply returned), and even if it failed (part of it
		// may be): see rowcache.Cache. A cached row is the merge of the key's operands
		// that a read returned, so with the write's operand merged in it is what a read
		// returns now (the merge is commutative: concurrent writers' updates land in any
		// order), and a key read and written often stays cached. Not for a write with
		// anything older than the purge horizon: the read that filled the cache may have
		// purged a tombstone that shadows it, which pebble still holds.
		horizon := db.opts.Clock() - db.opts.GracePeriod.Microseconds()
		for i := range batch {
			m := &batch[i]
			if err != nil || !newerThan(&m.Row, horizon) {
				db.rows.Invalidate(m.Key)
				continue
			}
			db.rows.MergeWrite(m.Key, &m.Row)
		}
	}
	if err != nil {
		return wrapErr("apply", err) // pebble's own Merge does not reuse a failed batch either
	}
	db.appliedOps.Add(ops)
	db.appliedBytes.Add(size)
	return b.Close()
}

// admit asks the guard of every device the store writes its log and tables to for room
// for a write of n bytes, and returns the first refusal, which wraps engine.ErrNoSpace.
// Pebble panics when a write to its log or manifest fails, so a store on a nearly full
// disk refuses writes instead, while it still has room for its flushes and compactions
// (see package space).
func (db *DB) admit(n int64) error {
	for _, g := range db.guards {
		if err := g.Admit(n); err != nil {
			return err
		}
	}
	return nil
}

// DiskLow implements engine.DiskWatcher: whether a write of n bytes would be refused now.
func (db *DB) DiskLow(n int64) bool {
	for _, g := range db.guards {
		if g.Low(n) {
			return true
		}
	}
	return false
}

// requestCollapse is the merge operator's hook for long operand chains.
func (db *DB) requestCollapse(key []byte, operands int) {
	if db.collapser != nil {
		db.collapser.request(key, operands)
	}
}

// Collapsed returns how many keys were rewritten as one value because reads merged long
// operand chains.
func (db *DB) Collapsed() int64 {
	if db.collapser == nil {
		return 0
	}
	return db.collapser.collapsed.Load()
}

// encodeBufs holds scratch buffers for encoding rows; b.Merge copies what it is given.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putEncodeBuf returns buf to the pool unless one huge row made it too big to keep.
func putEncodeBuf(buf *[]byte) {
	if cap(*buf) <= 1<<20 {
		encodeBufs.Put(buf)
	}
}

// Get returns the merged row under key as a copy the caller owns. It is purged as a full
// compaction at the current time would leave it (see the package comment), so a row left
// with nothing after the purge is not found.
func (db *DB) Get(key []byte) (row.Row, bool, error) {
	if err := db.enter("get"); err != nil {
		return row.Row{}, false, err
	}
	defer db.mu.RUnlock()
	if db.rows == nil {
		r, found, err := db.getStored(key)
		if err != nil || !found {
			return row.Row{}, false, err
		}
		return db.readView(key, r, db.opts.Clock())
	}
	e, err := db.cached(key)
	if err != nil || !e.Found() {
		return row.Row{}, false, err
	}
	return db.decodeCached(key, e)
}

// decodeCached decodes a private copy of e's row and applies the read-time view.
func (db *DB) decodeCached(key []byte, e *rowcache.Entry) (row.Row, bool, error) {
	r, err := e.Decode()
	if err != nil { // we encoded it: only a bug gets here
		return row.Row{}, false, fmt.Errorf("lsm: get %q: row cache: %w", key, err)
	}
	return db.readView(key, r, db.opts.Clock())
}

// cached returns key's row cache entry, reading pebble and filling the cache on a miss.
// The entry's row is shared: it must not be modified.
func (db *DB) cached(key []byte) (*rowcache.Entry, error) {
	return db.rows.Load(key, func() (row.Row, bool, error) { return db.getStored(key) })
}

// View implements engine.Viewer: the encoding of a row in the row cache that the
// read-time purge would leave as it is (no tombstones, nothing expiring) is lent as it is.
func (db *DB) View(key []byte, fn func(enc []byte, found bool)) error {
	if db.rows == nil {
		r, found, err := db.Get(key)
		if err == nil {
			fn(rowcache.EncodeFound(&r, found), found)
		}
		return err
	}
	if err := db.enter("get"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	e, err := db.cached(key)
	if err != nil {
		return err
	}
	return e.Lend(func(e *rowcache.Entry) (row.Row, bool, error) { return db.decodeCached(key, e) }, fn)
}

// getStored returns the row stored under key, merged but not purged, as a private copy.
func (db *DB) getStored(key []byte) (row.Row, bool, error) {
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return row.Row{}, false, nil
	}
	if err != nil {
		return row.Row{}, false, wrapErr(fmt.Sprintf("get %q", key), err)
	}
	// v is pebble's memory, valid only until closer.Close; the row aliases a private copy.
	r, err := row.Decode(bytes.Clone(v))
	if cerr := closer.Close(); err == nil && cerr != nil {
		return row.Row{}, false, wrapErr(fmt.Sprintf("get %q", key), cerr)
	}
	if err != nil {
		return row.Row{}, false, fmt.Errorf("lsm: get %q: %w: %w", key, engine.ErrCorrupt, err)
	}
	return r, true, nil
}

// newerThan reports whether everything r holds (cells, row tombstone) is timestamped
// after horizon.
func newerThan(r *row.Row, horizon int64) bool {
	if r.Deleted != 0 && r.Deleted <= horizon {
		return false
	}
	for i := range r.Cells {
		if r.Cells[i].Timestamp <= horizon {
			return false
		}
	}
	return true
}

// readView applies the read-time purge and engine.ReadView to key's decoded row.
func (db *DB) readView(key []byte, r row.Row, now int64) (row.Row, bool, error) {
	row.Purge(&r, db.opts.Horizon(key, now), 0)
	if r.IsEmpty() {
		return row.Row{}, false, nil
	}
	return engine.ReadView(r, now), true, nil
}

// Flush writes the memtables to sstables and waits; everything applied before it is durable
// when it returns, whatever the durability mode.
func (db *DB) Flush() error {
	if err := db.enter("flush"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return wrapErr("flush", db.pdb.Flush())
}

// Close stops the periodic syncer, fsyncs the WAL, closes open iterators (their Next then
// fails with engine.ErrClosed) and closes pebble. It waits for calls in flight; calls after
// it return engine.ErrClosed. It is safe to call more than once.
func (db *DB) Close() error {
	db.syncer.stop() // before taking mu: the syncer takes it shared
	if db.collapser != nil {
		db.collapser.close() // likewise, and it holds stripes Apply waits for
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	db.itersMu.Lock()
	for it := range db.iters {
		it.closeLocked(fmt.Errorf("lsm: iterator: %w", engine.ErrClosed))
	}
	db.iters = nil
	db.itersMu.Unlock()
	var err error
	if db.opts.Durability == engine.Periodic {
		// Pebble's Close syncs the WAL too; syncing here keeps the promise visible.
		err = db.pdb.LogData(nil, pebble.Sync)
	}
	err = errors.Join(err, db.pdb.Close(), db.lock.Unlock(), unlockAll(db.dirLocks))
	return wrapErr("close", err)
}

// wrapErr prefixes err with the operation and marks pebble's corruption errors with
// engine.ErrCorrupt. It returns nil for a nil err.
func wrapErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrCorrupt):
		return fmt.Errorf("lsm: %s: %w", op, err)
	case pebble.IsCorruptionError(err):
		return fmt.Errorf("lsm: %s: %w: %w", op, engine.ErrCorrupt, err)
	}
	return fmt.Errorf("lsm: %s: %w", op, err)
}
