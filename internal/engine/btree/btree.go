package btree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/rowcache"
	"github.com/kuradb/kura/internal/engine/space"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// DB is the btree engine. It implements engine.Engine; every method is safe for concurrent
// use.
type DB struct {
	opts Options
	path string
	bolt *bbolt.DB

	// mu orders Apply's enqueue and NewIterator's registration against Close: once closed
	// is set under mu.Lock, nothing new reaches the queue or the iterator set.
	mu      sync.RWMutex
	closed  bool
	iters   map[*iterator]struct{} // open iterators, closed by Close so bbolt can close
	itersMu sync.Mutex

	queue      chan *request // Apply -> committer; closed by Close
	loopDone   chan struct{} // closed when the committer has answered every request
	syncStop   chan struct{} // stops the periodic syncer
	syncDone   chan struct{}
	closeOnce  sync.Once
	closeErr   error
	isClosed   atomic.Bool // fast check for Get, which does not take mu
	rows       atomic.Int64
	cache      *rowcache.Cache // rows read recently; nil when RowCacheBytes < 0
	buf        *writeBuffer    // writes journaled, not yet in the tree; nil when WriteBufferBytes <= 0
	queueBytes atomic.Int64    // bytes of requests waiting in the queue, for Stats
	space      *space.Guard    // keeps Options.DiskReserveBytes free on the file's device
	// syncMu makes a commit wait for a sync in progress (Periodic durability): see sync.
	// Every write transaction of the tree (the committer's, the write buffer's flushes,
	// DeleteRange's) holds it through its update of rows, which keeps the two in step.
	syncMu sync.Mutex

	// Counters for tests and future metrics.
	commits atomic.Int64 // write transactions committed
	syncs   atomic.Int64 // periodic fsyncs run
}

var (
	_ engine.Engine      = (*DB)(nil)
	_ engine.Viewer      = (*DB)(nil)
	_ engine.DiskWatcher = (*DB)(nil)
)

// Open opens (creating if needed) the engine stored in dir. It fails with an error wrapping
// engine.ErrLocked if another DB, in this process or another, has the file open, and with
// one wrapping engine.ErrCorrupt if bbolt finds the file damaged.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("btree: create data directory: %w", err)
	}
	d := &DB{
		opts:     opts,
		path:     filepath.Join(dir, FileName),
		iters:    make(map[*iterator]struct{}),
		queue:    make(chan *request, opts.MaxQueuedRequests),
		loopDone: make(chan struct{}),
	}
	if opts.RowCacheBytes > 0 {
		d.cache = rowcache.New(opts.RowCacheBytes)
	}
	d.space = space.New(dir, space.Options{ReserveBytes: opts.DiskReserveBytes})
	var err error
	if d.bolt, err = openBolt(d.path, opts); err != nil {
		return nil, err
	}
	if err := d.initFile(); err != nil {
		d.bolt.Close()
		return nil, err
	}
	if err := d.openJournal(dir); err != nil {
		d.bolt.Close()
		return nil, err
	}
	go d.commitLoop()
	if d.buf != nil {
		go d.flushLoop()
		d.buf.wake() // a memtable replayed from the journal waits to be flushed
	}
	if opts.Durability == engine.Periodic {
		d.syncStop, d.syncDone = make(chan struct{}), make(chan struct{})
		go d.syncLoop()
	}
	return d, nil
}

// openJournal opens the write buffer when it is on (see buffer.go). When it is off, it
// merges into the tree whatever a run with it on left in the journal, before Open
// returns.
func (d *DB) openJournal(dir string) error {
	if d.opts.WriteBufferBytes > 0 {
		b, err := openBuffer(dir, d.opts.WriteBufferBytes, d.opts.WriteBufferFlushInterval)
		d.buf = b
		return err
	}
	seqs, t, err := replay(dir)
	if err != nil || len(seqs) == 0 {
		return err
	}
	t.segments = seqs
	return d.flushMemtable(t, nil)
}

// dir is the data directory.
func (d *DB) dir() string { return filepath.Dir(d.path) }

// openBolt opens the bbolt file, turning bbolt's lock timeout into ErrLocked and its
// checks of the meta pages (or a panic on a damaged file) into ErrCorrupt.
func openBolt(path string, opts Options) (db *bbolt.DB, err error) {
	// bbolt holds the file (and its flock) when it panics: remember the file so a panic
	// does not leave the lock held for the rest of the process.
	var file *os.File
	bo := &bbolt.Options{
		Timeout: opts.LockTimeout,
		// The hash-map freelist allocates in O(1) where the default array scans; it is
		// what etcd runs in production. The on-disk format is the same.
		FreelistType:    bbolt.FreelistMapType,
		NoFreelistSync:  opts.NoFreelistSync,
		InitialMmapSize: opts.InitialMmapSize,
		NoSync:          opts.Durability == engine.Periodic,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	defer func(prev bool) {
		debug.SetPanicOnFault(prev)
		if p := recover(); p != nil {
			if file != nil {
				file.Close()
			}
			db, err = nil, fmt.Errorf("btree: open %s: %w: bbolt panicked: %v", path, engine.ErrCorrupt, p)
		}
	}(debug.SetPanicOnFault(true))
	db, err = bbolt.Open(path, 0o644, bo)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("btree: open %s: %w", path, engine.ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("btree: open %s: %w: %w", path, engine.ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("btree: open %s: %w", path, err)
	}
	return db, nil
}

// initFile checks the format and loads the row count of an existing file, or creates the
// buckets of a new one. Only the latter writes.
func (d *DB) initFile() (err error) {
	defer guard(&err, panicOnFault())
	ready := false
	err = d.bolt.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(metaBucket) == nil || tx.Bucket(metaBucket).Get(countKey) == nil {
			return nil
		}
		n, err := checkMeta(tx)
		d.rows.Store(n)
		ready = true
		return err
	})
	if err != nil || ready {
		return err
	}
	return d.bolt.Update(func(tx *bbolt.Tx) error {
		n, err := initMeta(tx)
		d.rows.Store(n)
		return err
	})
}

// Name returns "btree".
func (d *DB) Name() string { return "btree" }

// Role returns ring.ReadOptimized: a read touches one stored version of the row.
func (d *DB) Role() ring.Role { return ring.ReadOptimized }

// Get returns the stored row under key, decoded into memory the caller owns, from the row
// cache or else in its own bbolt read transaction; it never waits for writers.
func (d *DB) Get(key []byte) (row.Row, bool, error) {
	if err := d.checkGet(key); err != nil {
		return row.Row{}, false, err
	}
	if d.cache != nil {
		e, err := d.cached(key)
		if err != nil {
			return row.Row{}, false, err
		}
		return d.decodeCached(key, e)
	}
	r, found, err := d.read(key)
	if err != nil || !found {
		return row.Row{}, false, err
	}
	return engine.ReadView(r, d.opts.Clock()), true, nil
}

// read returns key's row, not purged, as a private copy: the tree's, merged with the
// write buffer's when it holds the key. The buffer is read first: a flush moves a row from
// it into the tree, never the other way, so a row flushed in between is found in the tree.
func (d *DB) read(key []byte) (row.Row, bool, error) {
	if d.buf == nil {
		return d.getStored(key)
	}
	buffered, inBuffer := d.buf.get(key)
	stored, found, err := d.getStored(key)
	switch {
	case err != nil:
		return row.Row{}, false, err
	case !inBuffer:
		return stored, found, nil
	case !found:
		return buffered, true, nil
	}
	return row.Merge(stored, buffered), true, nil
}

// View implements engine.Viewer: the encoding of a cached row that the read-time purge
// would leave as it is (no tombstones, nothing expiring) is lent as it is; any other row
// is read as Get reads it and encoded.
func (d *DB) View(key []byte, fn func(enc []byte, found bool)) error {
	if d.cache == nil {
		r, found, err := d.Get(key)
		if err == nil {
			fn(rowcache.EncodeFound(&r, found), found)
		}
		return err
	}
	if err := d.checkGet(key); err != nil {
		return err
	}
	e, err := d.cached(key)
	if err != nil {
		return err
	}
	return e.Lend(func(e *rowcache.Entry) (row.Row, bool, error) { return d.decodeCached(key, e) }, fn)
}

// cached returns key's row cache entry, reading the file and filling the cache on a
// miss. The entry is shared: it must not be modified.
func (d *DB) cached(key []byte) (*rowcache.Entry, error) {
	return d.cache.Load(key, func() (row.Row, bool, error) { return d.read(key) })
}

// checkGet rejects a read of an invalid key or of a closed DB.
func (d *DB) checkGet(key []byte) error {
	if err := row.ValidateKey(key); err != nil {
		return fmt.Errorf("btree: get: %w: %w", engine.ErrInvalid, err)
	}
	if d.isClosed.Load() {
		return fmt.Errorf("btree: get: %w", engine.ErrClosed)
	}
	return nil
}

// decodeCached decodes a private copy of e's row and applies the read-time view.
func (d *DB) decodeCached(key []byte, e *rowcache.Entry) (row.Row, bool, error) {
	if !e.Found() {
		return row.Row{}, false, nil
	}
	r, err := e.Decode()
	if err != nil { // we encoded it: only a bug gets here
		return row.Row{}, false, fmt.Errorf("btree: get %.64q: row cache: %w", key, err)
	}
	return engine.ReadView(r, d.opts.Clock()), true, nil
}

// getStored returns the row stored under key, not purged, as a private copy.
func (d *DB) getStored(key []byte) (row.Row, bool, error) {
	v, err := d.getRaw(key)
	if err != nil || v == nil {
		return row.Row{}, false, err
	}
	r, err := decodeValue(key, v)
	if err != nil {
		return row.Row{}, false, err
	}
	return r, true, nil
}

// getRaw copies the stored value under key out of bbolt's memory map.
func (d *DB) getRaw(key []byte) (v []byte, err error) {
	defer guard(&err, panicOnFault())
	err = d.bolt.View(func(tx *bbolt.Tx) error {
		b, err := buckets(tx)
		if err != nil {
			return err
		}
		if stored := getKey(b, key); stored != nil {
			v = bytes.Clone(stored)
			return nil
		}
		return verifyMiss(b, key)
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		err = engine.ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("btree: get: %w", err)
	}
	return v, nil
}

// Flush merges the write buffer, if any, into the tree and fsyncs the file. In Sync
// durability every commit is already fsynced, so the fsync only matters in Periodic
// durability.
func (d *DB) Flush() error {
	d.mu.RLock() // keeps Close from closing the file under the fsync
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("btree: flush: %w", engine.ErrClosed)
	}
	if d.buf != nil {
		if err := d.drainBuffer(); err != nil {
			return err
		}
	}
	if err := d.sync(); err != nil {
		return fmt.Errorf("btree: flush: %w", err)
	}
	return nil
}

// sync fsyncs the file while commits wait. In Periodic durability a commit only writes
// pages into the page cache, and pays for them at the next sync, in random writes: a
// B+tree larger than its memory syncing a second of writes can keep a disk busy for
// seconds. Holding commits off meanwhile makes writes pay for the disk work they cause,
// as an LSM's writes stall when its flushes fall behind, so that the engine's response
// time shows a saturated disk at once (coordinators pace asynchronous writes to a
// read-optimized replica by it) instead of piling up dirty pages for later syncs.
func (d *DB) sync() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	if d.opts.duringSync != nil {
		d.opts.duringSync()
	}
	return d.bolt.Sync()
}

// syncJournal fsyncs the write buffer's journal, in Periodic durability.
func (d *DB) syncJournal() error {
	if d.buf == nil {
		return nil
	}
	d.buf.jmu.Lock()
	defer d.buf.jmu.Unlock()
	return d.buf.j.sync()
}

// Stats reports the file's disk usage, an estimate of the Go memory the engine holds, the
// row cache's hits and misses, and the exact row count. MemoryBytes counts bbolt's
// freelist, the requests waiting to commit and the row cache; the file's pages live in
// the OS page cache (through bbolt's memory map), not in the engine's heap, so they are
// not counted.
func (d *DB) Stats() engine.Stats {
	s := engine.Stats{RowsEstimate: d.rows.Load(), Exact: true, DiskBytes: fileBytes(d.path)}
	s.MemoryBytes = int64(d.bolt.Stats().FreelistInuse) + d.queueBytes.Load()
	if d.buf != nil {
		// A buffered row may or may not be in the tree already: the count is an upper
		// bound until the buffer is flushed.
		bytes, rows := d.buf.size()
		s.MemoryBytes += bytes
		s.RowsEstimate += int64(rows)
		s.Exact = rows == 0
		flushes, stalled := d.buf.counters()
		s.Flushes, s.WriteStallNanos = flushes, stalled.Nanoseconds()
	}
	if d.cache != nil {
		_, cached := d.cache.Size()
		s.MemoryBytes += cached
		s.RowCacheHits, s.RowCacheMisses = d.cache.Hits(), d.cache.Misses()
	}
	s.AddDisk(d.space.Stats().Engine())
	return s
}

// DiskLow implements engine.DiskWatcher: whether a write of n bytes would be refused now.
func (d *DB) DiskLow(n int64) bool { return d.space.Low(n) }

// fileBytes returns the disk space the file takes: its allocated blocks, which is less than
// its size while bbolt's preallocated growth (16 MiB steps past the data) is still a hole.
func fileBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return min(st.Blocks*512, fi.Size())
	}
	return fi.Size()
}

// Close answers every queued Apply (committing them), closes open iterators (their next
// Next reports ErrClosed), fsyncs and closes the file. It is safe to call more than once;
// later calls wait for the first and return its result.
func (d *DB) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *DB) close() error {
	d.mu.Lock()
	d.closed = true
	d.isClosed.Store(true)
	d.mu.Unlock()

	close(d.queue) // no Apply can be sending: they send under mu.RLock and check closed
	<-d.loopDone
	if d.syncStop != nil {
		close(d.syncStop)
		<-d.syncDone
	}
	var errs []error
	if d.buf != nil {
		// What is still buffered stays in the journal, for the next Open to replay: a
		// flush here could take minutes on a disk that seeks.
		close(d.buf.stop)
		<-d.buf.stopped
		if err := d.buf.j.close(); err != nil {
			errs = append(errs, fmt.Errorf("btree: close: %w", err))
		}
	}
	d.closeIterators()
	if err := d.bolt.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("btree: close: sync: %w", err))
	}
	if err := d.bolt.Close(); err != nil {
		errs = append(errs, fmt.Errorf("btree: close: %w", err))
	}
	return errors.Join(errs...)
}

// syncLoop fsyncs every SyncInterval in Periodic durability, where commits skip fsync.
func (d *DB) syncLoop() {
	defer close(d.syncDone)
	t := time.NewTicker(d.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-d.syncStop:
			return
		case <-t.C:
			// An error here has no caller to go to; the next tick, Flush or Close retries
			// and reports it.
			if d.syncJournal() == nil && d.sync() == nil {
				d.syncs.Add(1)
			}
		}
	}
}

// Check verifies every stored row: checksum, decoding, strictly increasing keys, and the
// row count. Tests call it after each step; it reads the whole file.
func (d *DB) Check() (err error) {
	if d.isClosed.Load() {
		return fmt.Errorf("btree: check: %w", engine.ErrClosed)
	}
	defer guard(&err, panicOnFault())
	return d.bolt.View(func(tx *bbolt.Tx) error {
		b, err := buckets(tx)
		if err != nil {
			return err
		}
		want, err := storedCount(tx)
		if err != nil {
			return err
		}
		var prev []byte
		var n int64
		var w walker
		k, v, err := w.seek(b, nil)
		for ; k != nil && err == nil; k, v, err = w.next() {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				return fmt.Errorf("btree: check: %w: key %.64q after %.64q", engine.ErrCorrupt, k, prev)
			}
			if _, err := decodeValue(k, v); err != nil {
				return fmt.Errorf("btree: check: %w", err)
			}
			prev, n = append(prev[:0], k...), n+1
		}
		if err != nil {
			return fmt.Errorf("btree: check: %w", err)
		}
		if n != want {
			return fmt.Errorf("btree: check: %d rows, count says %d", n, want)
		}
		return nil
	})
}
