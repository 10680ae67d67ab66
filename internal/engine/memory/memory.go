package memory

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/btree"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// treeDegree is the tidwall/btree degree: nodes hold up to 2*32-1 = 63 items. An item is
// 32 bytes, so a node's items array is about 2 KiB: a binary search stays within a few
// cache lines' worth of hops, a million rows need a tree of height 4, and the per-item cost
// of child pointers is small. A larger degree would shave little memory but make each
// copy-on-write (the first write to a node after an iterator or snapshot took a Copy) copy
// a larger node.
const treeDegree = 32

// itemOverheadBytes estimates what a row costs beyond its key and encoding: its 32-byte
// item in a node that is on average about 3/4 full, plus the rounding of its allocation to
// a Go size class. TestBytesPerRow measures about 73 bytes for 1 KB rows.
const itemOverheadBytes = 80

// item is one stored row: the key and the row's encoding in a single allocation, which
// costs far less memory than a decoded row.Row with a slice per name and value. The bytes
// of kv are never modified once the item is in the tree: snapshots and iterators share them.
type item struct {
	kv   []byte // key || row.AppendEncode(row)
	klen int
}

func (it item) key() []byte { return it.kv[:it.klen] }
func (it item) enc() []byte { return it.kv[it.klen:] }

func byKey(a, b item) bool { return bytes.Compare(a.key(), b.key()) < 0 }

// pivot is a search key for the tree; it stores nothing.
func pivot(key []byte) item { return item{kv: key, klen: len(key)} }

func newTree() *btree.BTreeG[item] {
	// NoLocks: DB.mu already orders every access, and snapshots are read by one goroutine.
	return btree.NewBTreeGOptions(byKey, btree.Options{Degree: treeDegree, NoLocks: true})
}

// DB is the memory engine. It implements engine.Engine; every method is safe for concurrent
// use.
type DB struct {
	opts Options
	lock *engine.DirLock // held on the snapshot's directory, nil without a snapshot

	mu        sync.RWMutex // guards tree, dataBytes, version, scratch and closed
	tree      *btree.BTreeG[item]
	dataBytes int64  // sum of len(item.kv)
	version   uint64 // counts Apply calls, so that an unchanged tree is not saved again
	scratch   []byte // Apply's encoding buffer
	closed    bool

	snapMu    sync.Mutex // serializes snapshot writers (they share the temporary file)
	saved     uint64     // version of the snapshot on disk; guarded by snapMu
	diskBytes atomic.Int64
	lastErr   atomic.Pointer[error] // last background snapshot error, nil after a success

	stop      chan struct{} // stops the snapshot loop; nil without one
	loopDone  chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var (
	_ engine.Engine       = (*DB)(nil)
	_ engine.RangeDeleter = (*DB)(nil)
)

// Open returns an engine whose rows are those of the snapshot at opts.SnapshotPath, or an
// empty one. dir only anchors a relative SnapshotPath; without a snapshot nothing on disk is
// touched. A damaged snapshot fails Open with an error wrapping engine.ErrCorrupt, and a
// snapshot another DB has open fails it with engine.ErrLocked.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults(dir)
	d := &DB{opts: opts, tree: newTree()}
	if opts.SnapshotPath == "" {
		return d, nil
	}
	lock, err := engine.LockDir(filepath.Dir(opts.SnapshotPath), filepath.Base(opts.SnapshotPath)+".lock")
	if err != nil {
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	d.lock = lock
	if err := d.load(); err != nil {
		lock.Unlock()
		return nil, err
	}
	if opts.SnapshotInterval > 0 {
		d.stop, d.loopDone = make(chan struct{}), make(chan struct{})
		go d.snapshotLoop()
	}
	return d, nil
}

// Name returns "memory".
func (d *DB) Name() string { return "memory" }

// Role returns ring.InMemory.
func (d *DB) Role() ring.Role { return ring.InMemory }

// Apply validates the batch, then merges each mutation into its row under the write lock,
// so readers see all of the batch or none of it.
func (d *DB) Apply(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("memory: apply: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("memory: apply: %w", engine.ErrClosed)
	}
	d.version++
	now := d.opts.Clock()
	for i := range batch {
		if err := d.mergeLocked(&batch[i], now); err != nil {
			return fmt.Errorf("memory: apply: %w", err)
		}
	}
	return nil
}

// mergeLocked merges m into the stored row, purges what the grace period allows (safe: the
// stored row is the key's whole history) and stores the result as a fresh allocation, or
// deletes the row if nothing is left.
func (d *DB) mergeLocked(m *row.Mutation, now int64) error {
	var hint btree.PathHint
	old, found := d.tree.GetHint(pivot(m.Key), &hint)
	var stored row.Row
	if found {
		var err error
		// Every stored encoding was made by Apply or verified by load: failing here is
		// a bug, not bad input.
		if stored, err = row.Decode(old.enc()); err != nil {
			return fmt.Errorf("key %q: %w: %w", m.Key, engine.ErrCorrupt, err)
		}
		d.dataBytes -= int64(len(old.kv))
	}
	merged := row.Merge(stored, m.Row)
	row.Purge(&merged, d.opts.Horizon(m.Key, now), 0)
	if merged.IsEmpty() {
		if found {
			d.tree.DeleteHint(pivot(m.Key), &hint)
		}
		return nil
	}
	d.scratch = row.AppendEncode(append(d.scratch[:0], m.Key...), &merged)
	// A copy of exactly the encoding, so the scratch buffer's slack is not kept. bytes.Clone
	// takes memory of the same size class as make would, but skips zeroing it first.
	kv := bytes.Clone(d.scratch)
	if cap(d.scratch) > maxScratchBytes {
		d.scratch = nil
	}
	d.tree.SetHint(item{kv: kv, klen: len(m.Key)}, &hint)
	d.dataBytes += int64(len(kv))
	return nil
}

// maxScratchBytes is the largest encoding buffer Apply keeps between calls.
const maxScratchBytes = 1 << 20

// Get returns a copy of the stored row, decoded into memory the caller owns.
func (d *DB) Get(key []byte) (row.Row, bool, error) {
	if err := row.ValidateKey(key); err != nil {
		return row.Row{}, false, fmt.Errorf("memory: get: %w: %w", engine.ErrInvalid, err)
	}
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return row.Row{}, false, fmt.Errorf("memory: get: %w", engine.ErrClosed)
	}
	it, found := d.tree.Get(pivot(key))
	d.mu.RUnlock()
	if !found {
		return row.Row{}, false, nil
	}
	// it.kv is immutable, so the copy and the decode need no lock.
	r, err := row.Decode(bytes.Clone(it.enc()))
	if err != nil {
		return row.Row{}, false, fmt.Errorf("memory: get %q: %w: %w", key, engine.ErrCorrupt, err)
	}
	return engine.ReadView(r, d.opts.Clock()), true, nil
}

// deleteRangeChunk is how many rows DeleteRange deletes per hold of the write lock, so
// that reads and writes wait for a chunk (a few milliseconds), not for a whole range.
const deleteRangeChunk = 10_000

// DeleteRange implements engine.RangeDeleter: it deletes the rows of [lo, hi) from the
// tree, deleteRangeChunk of them at a time under the write lock; Stats counts them out at
// once. Their memory goes back to the Go heap once no iterator or snapshot being written
// shares the tree nodes that held them (a tree copy shares nodes until either side
// writes them), at the collector's next cycle. The deletion is durable, like any write
// to this engine, once a snapshot has been written after it returns (with SnapshotPath).
func (d *DB) DeleteRange(lo, hi []byte) error {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return fmt.Errorf("memory: delete range: %w", err)
	}
	from := bytes.Clone(lo) // the rest of the range starts here
	for {
		more, err := d.deleteChunk(&from, hi)
		if err != nil || !more {
			return err
		}
	}
}

// deleteChunk deletes up to deleteRangeChunk rows of [*from, hi), moves *from past them
// and reports whether the range may hold more.
func (d *DB) deleteChunk(from *[]byte, hi []byte) (more bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, fmt.Errorf("memory: delete range: %w", engine.ErrClosed)
	}
	var doomed []item
	collect := func(it item) bool {
		if hi != nil && bytes.Compare(it.key(), hi) >= 0 {
			return false
		}
		doomed = append(doomed, it)
		return len(doomed) < deleteRangeChunk
	}
	if *from == nil {
		d.tree.Scan(collect)
	} else {
		d.tree.Ascend(pivot(*from), collect)
	}
	for _, it := range doomed {
		d.tree.Delete(it)
		d.dataBytes -= int64(len(it.kv))
	}
	if len(doomed) > 0 {
		d.version++
	}
	if len(doomed) < deleteRangeChunk {
		return false, nil
	}
	*from = append(bytes.Clone(doomed[len(doomed)-1].key()), 0) // the next key there can be
	return true, nil
}

// frozen is a tree nobody modifies any more, and the version of the data it holds.
type frozen struct {
	tree    *btree.BTreeG[item]
	version uint64
}

// copyTree returns an O(1) copy-on-write snapshot of the tree. Copy gives the live tree a
// new identity, so it needs the write lock, but only for an instant.
func (d *DB) copyTree(op string) (frozen, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return frozen{}, fmt.Errorf("memory: %s: %w", op, engine.ErrClosed)
	}
	return frozen{d.tree.Copy(), d.version}, nil
}

// Flush writes a snapshot when SnapshotPath is set; otherwise it does nothing.
func (d *DB) Flush() error {
	snap, err := d.copyTree("flush")
	if err != nil || d.opts.SnapshotPath == "" {
		return err
	}
	return d.writeSnapshot(snap)
}

// Stats reports the memory the rows take (keys and encodings plus an estimate of the tree's
// per-row overhead), the exact row count and the size of the last snapshot.
func (d *DB) Stats() engine.Stats {
	s := engine.Stats{DiskBytes: d.diskBytes.Load(), Exact: true}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.tree != nil {
		n := int64(d.tree.Len())
		s.RowsEstimate = n
		s.MemoryBytes = d.dataBytes + n*itemOverheadBytes
	}
	return s
}

// LastSnapshotError returns the error of the last background snapshot, or nil if it
// succeeded (or none ran). Flush and Close report their own snapshot's error.
func (d *DB) LastSnapshotError() error {
	if p := d.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops background snapshots, writes a final snapshot when SnapshotPath is set and
// drops the rows. It waits for calls in flight and is safe to call more than once; later
// calls return the first one's result. Iterators already open keep their snapshot.
func (d *DB) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *DB) close() error {
	if d.stop != nil {
		close(d.stop)
		<-d.loopDone
	}
	d.mu.Lock()
	d.closed = true
	snap := frozen{d.tree, d.version}
	d.tree, d.scratch = nil, nil
	d.mu.Unlock()
	if d.opts.SnapshotPath == "" {
		return nil
	}
	var errs []error
	if err := d.writeSnapshot(snap); err != nil {
		errs = append(errs, fmt.Errorf("memory: close: %w", err))
	}
	if err := d.lock.Unlock(); err != nil {
		errs = append(errs, fmt.Errorf("memory: close: unlock: %w", err))
	}
	return errors.Join(errs...)
}

// snapshotLoop writes a snapshot every SnapshotInterval until Close.
func (d *DB) snapshotLoop() {
	defer close(d.loopDone)
	t := time.NewTicker(d.opts.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			snap, err := d.copyTree("snapshot")
			if err == nil {
				err = d.writeSnapshot(snap)
			}
			if err != nil {
				d.lastErr.Store(&err)
			} else {
				d.lastErr.Store(nil)
			}
		}
	}
}

// Check verifies the tree: keys strictly increasing, every encoding decodes, and the byte
// count agrees. Tests call it after each step.
func (d *DB) Check() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("memory: check: %w", engine.ErrClosed)
	}
	var prev []byte
	var total int64
	var err error
	d.tree.Scan(func(it item) bool {
		switch {
		case prev != nil && bytes.Compare(prev, it.key()) >= 0:
			err = fmt.Errorf("memory: check: key %q after %q", it.key(), prev)
		case row.ValidateKey(it.key()) != nil:
			err = fmt.Errorf("memory: check: bad key %q", it.key())
		default:
			if _, derr := row.Decode(it.enc()); derr != nil {
				err = fmt.Errorf("memory: check: key %q: %w", it.key(), derr)
			}
		}
		prev, total = it.key(), total+int64(len(it.kv))
		return err == nil
	})
	if err == nil && total != d.dataBytes {
		err = fmt.Errorf("memory: check: rows hold %d bytes, count says %d", total, d.dataBytes)
	}
	return err
}
