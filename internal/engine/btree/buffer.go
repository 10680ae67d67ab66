package btree

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The write buffer (Options.WriteBufferBytes).
//
// Without it every commit rewrites, for each key written, the leaf page that holds the key
// and the branch pages above it: a read of the leaf when it is not in memory, and a write
// of a new copy of each page. On a disk whose head must seek that is two random I/Os per
// write, and a B+tree replica taking a cluster's writes keeps its disk busy with them (the
// HDD runs of issue 5: disks 70-90% busy at 33 writes a second). In memory, each commit
// costs a write system call per dirty page and, in Sync durability, two fdatasyncs.
//
// With the buffer, Apply appends its batch to a journal (journal.go: one sequential write,
// and in Sync durability one fsync shared by the group) and merges it into an in-memory
// table of rows, the active memtable. When the active memtable holds WriteBufferBytes, or
// has been open for WriteBufferFlushInterval, it becomes the flushing memtable and a new
// one takes writes; a background goroutine merges the flushing memtable into the tree in
// key order, in transactions of MaxGroupMutations rows, makes the tree durable, and
// deletes the memtable's journal segments. A key written many times while buffered is
// written to the tree once, and keys that share a leaf share its rewrite: WiredTiger's
// checkpoints and InnoDB's change buffer do the same for the same reason.
//
// Reads merge the buffered rows of a key (both memtables) with the tree's: the memtables
// first, then the tree, so that a row that a flush moves from one to the other in between
// is seen in one or the other (the merge is idempotent: seen in both is harmless). An
// iterator takes the memtables' rows in its range and begins its tree transaction under the
// buffer's read lock, which keeps a memtable from being flushed and forgotten in between.
//
// When the active memtable is full while the flushing one is still being merged, Apply
// waits (a write stall, as an LSM's writes stall behind its flushes), so that memory stays
// bounded at about twice WriteBufferBytes and the writers' response time shows the disk's
// load. If a flush fails (a full disk) it is retried every second; Apply calls that would
// wait for it fail with its error meanwhile, and Flush returns it.
//
// At Open, segments left by a crash are replayed into the flushing memtable and flushed in
// the background; if the buffer is off, they are merged into the tree before Open returns,
// so that turning the buffer off never hides an acknowledged write.

// DefaultWriteBufferFlushInterval is how long the active memtable takes writes before it
// is flushed, however little it holds.
const DefaultWriteBufferFlushInterval = 30 * time.Second

// flushRetry is how long a failed flush waits before it is tried again.
const flushRetry = time.Second

// memRowOverhead approximates a memtable entry's memory besides its key and cells: the
// map entry, the string and slice headers.
const memRowOverhead = 96

// memtable is a set of buffered rows and the journal segments that hold them.
type memtable struct {
	rows     map[string]row.Row // each row owns its memory and is never modified once stored
	bytes    int64
	segments []uint64
	opened   time.Time
}

func newMemtable(seq uint64, now time.Time) *memtable {
	return &memtable{rows: make(map[string]row.Row), segments: []uint64{seq}, opened: now}
}

func rowBytes(key string, r *row.Row) int64 {
	n := int64(memRowOverhead + len(key))
	for i := range r.Cells {
		n += int64(32 + len(r.Cells[i].Name) + len(r.Cells[i].Value))
	}
	return n
}

// insert merges m into the memtable. A key's first mutation is merged too (into the empty
// row), so that a row tombstone shadows the older cells of its own mutation: a read of a
// key the tree does not hold returns the buffered row as it is.
func (t *memtable) insert(m *row.Mutation) {
	old, ok := t.rows[string(m.Key)]
	if ok {
		t.bytes -= rowBytes(string(m.Key), &old)
	}
	merged := row.Merge(old, m.Row)
	merged = merged.Clone() // the caller's batch and old's memory are not ours to keep
	t.rows[string(m.Key)] = merged
	t.bytes += rowBytes(string(m.Key), &merged)
}

// writeBuffer is the journal and the memtables. Lock order: jmu, then mu.
type writeBuffer struct {
	dir      string
	limit    int64
	interval time.Duration

	jmu sync.Mutex // the journal, and the memtables' rotation
	j   journal

	mu       sync.RWMutex
	cond     *sync.Cond // on mu: the flushing memtable is gone, or a flush failed
	active   *memtable
	flushing *memtable // being merged into the tree; nil when none
	err      error     // the last flush's error, until a flush succeeds

	kick    chan struct{} // wakes the flusher; buffered
	stop    chan struct{}
	stopped chan struct{}

	attempts int64         // flushes tried, failed or not; under mu
	retryNow bool          // a Flush waits for a flush that failed: retry at once; under mu
	flushes  int64         // flushes done; under mu
	stalled  time.Duration // the committer's waits for a flush; under mu
}

// get returns the buffered row of key, merged over both memtables, as a private copy.
func (b *writeBuffer) get(key []byte) (row.Row, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out row.Row
	found := false
	for _, t := range []*memtable{b.flushing, b.active} {
		if t == nil {
			continue
		}
		if r, ok := t.rows[string(key)]; ok {
			out, found = row.Merge(out, r), true
		}
	}
	if !found {
		return row.Row{}, false
	}
	return out.Clone(), true
}

// counters returns the flushes done and the time writes waited for them.
func (b *writeBuffer) counters() (flushes int64, stalled time.Duration) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.flushes, b.stalled
}

// size returns the memory the memtables hold, and how many rows.
func (b *writeBuffer) size() (bytes int64, rows int) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, t := range []*memtable{b.flushing, b.active} {
		if t != nil {
			bytes, rows = bytes+t.bytes, rows+len(t.rows)
		}
	}
	return bytes, rows
}

// snapshot returns the buffered rows in [lo, hi), merged over both memtables, sorted by
// key. Call with mu held for reading. The rows are shared with the memtables: read-only.
func (b *writeBuffer) snapshot(lo, hi []byte) []bufferedRow {
	var out []bufferedRow
	seen := map[string]int{}
	for _, t := range []*memtable{b.flushing, b.active} {
		if t == nil {
			continue
		}
		for k, r := range t.rows {
			if lo != nil && k < string(lo) || hi != nil && k >= string(hi) {
				continue
			}
			if i, ok := seen[k]; ok {
				out[i].row = row.Merge(out[i].row, r)
				continue
			}
			seen[k] = len(out)
			out = append(out, bufferedRow{key: k, row: r})
		}
	}
	slices.SortFunc(out, func(a, b bufferedRow) int { return cmp.Compare(a.key, b.key) })
	return out
}

type bufferedRow struct {
	key string
	row row.Row
}

// openBuffer replays the journal segments in dir into the flushing memtable and starts a
// new segment for the active one. It does not start the flusher.
func openBuffer(dir string, limit int64, interval time.Duration) (*writeBuffer, error) {
	b := &writeBuffer{dir: dir, limit: limit, interval: interval, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	old, replayed, err := replay(dir)
	if err != nil {
		return nil, err
	}
	next := uint64(1)
	if len(old) > 0 {
		next = old[len(old)-1] + 1
		if len(replayed.rows) == 0 {
			if err := removeSegments(dir, old); err != nil {
				return nil, err
			}
		} else {
			replayed.segments = old
			b.flushing = replayed
		}
	}
	f, err := createSegment(dir, next)
	if err != nil {
		return nil, err
	}
	b.j = journal{dir: dir, seq: next, f: f}
	b.active = newMemtable(next, time.Now())
	return b, nil
}

// replay reads every journal segment in dir into one memtable.
func replay(dir string) ([]uint64, *memtable, error) {
	seqs, err := segments(dir)
	if err != nil {
		return nil, nil, err
	}
	t := &memtable{rows: make(map[string]row.Row), opened: time.Now()}
	for _, seq := range seqs {
		if err := replaySegment(dir, seq, func(m row.Mutation) { t.insert(&m) }); err != nil {
			return nil, nil, err
		}
	}
	return seqs, t, nil
}

// commitBuffered is the committer's work for a group when the buffer is on: journal the
// group, then insert it into the active memtable. It returns the group's error.
func (d *DB) commitBuffered(group []*request) error {
	b := d.buf
	if err := d.admit(); err != nil {
		return err
	}
	b.jmu.Lock()
	defer b.jmu.Unlock()
	opened, err := b.j.appendRequests(group, d.opts.Durability == engine.Sync)
	b.mu.Lock()
	if opened != 0 {
		b.active.segments = append(b.active.segments, opened)
	}
	if err == nil {
		for _, r := range group {
			for i := range r.batch {
				b.active.insert(&r.batch[i])
			}
		}
	}
	full := b.active.bytes >= b.limit
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("btree: apply: %w", err)
	}
	if full {
		b.wake()
	}
	return nil
}

// admit waits while the active memtable is full and the flushing one is still being
// merged; it fails if that flush failed. A full active memtable with no flush under way
// is rotated.
func (d *DB) admit() error {
	b := d.buf
	b.mu.Lock()
	if b.active.bytes >= b.limit && b.flushing != nil && b.err == nil {
		start := time.Now()
		for b.active.bytes >= b.limit && b.flushing != nil && b.err == nil {
			b.cond.Wait()
		}
		b.stalled += time.Since(start)
	}
	full, err := b.active.bytes >= b.limit, b.err
	b.mu.Unlock()
	if !full {
		return nil
	}
	if err != nil {
		return fmt.Errorf("btree: apply: write buffer full, its flush failing: %w", err)
	}
	if err := b.rotate(d.opts.Durability == engine.Periodic); err != nil {
		return fmt.Errorf("btree: apply: write buffer full: %w", err)
	}
	return nil
}

// rotate makes the active memtable the flushing one, if there is none and the active one
// holds something, and starts a new segment and memtable. It fails only if the new
// segment cannot be started, which leaves things as they were.
func (b *writeBuffer) rotate(syncOld bool) error {
	b.jmu.Lock()
	defer b.jmu.Unlock()
	b.mu.RLock()
	busy := b.flushing != nil || len(b.active.rows) == 0
	b.mu.RUnlock()
	if busy {
		return nil
	}
	f, err := createSegment(b.dir, b.j.seq+1)
	if err != nil {
		return err
	}
	if syncOld {
		// In Periodic durability the segment's last writes may not be on disk yet; the
		// flush deletes it only once the tree holds them, and a crash before then must
		// find them in it.
		if err := b.j.sync(); err != nil {
			f.Close()
			return err
		}
	}
	if b.j.f != nil {
		b.j.f.Close()
	}
	b.j = journal{dir: b.dir, seq: b.j.seq + 1, f: f, buf: b.j.buf}
	b.mu.Lock()
	b.flushing, b.active = b.active, newMemtable(b.j.seq, time.Now())
	b.mu.Unlock()
	b.wake()
	return nil
}

func (b *writeBuffer) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// flushLoop is the flusher goroutine: it merges the flushing memtable into the tree when
// there is one, and rotates the active one when it is full or old.
func (d *DB) flushLoop() {
	b := d.buf
	defer close(b.stopped)
	tick := time.NewTicker(min(b.interval, time.Second))
	defer tick.Stop()
	retry := time.Time{}
	for {
		select {
		case <-b.stop:
			return
		case <-b.kick:
		case <-tick.C:
		}
		b.mu.RLock()
		due := b.flushing == nil && len(b.active.rows) > 0 &&
			(b.active.bytes >= b.limit || time.Since(b.active.opened) >= b.interval)
		b.mu.RUnlock()
		if due {
			_ = b.rotate(d.opts.Durability == engine.Periodic) // a failure: the next tick tries again
		}
		b.mu.RLock()
		flushing, failed, now := b.flushing, b.err != nil, b.retryNow
		b.mu.RUnlock()
		if flushing == nil || failed && !now && time.Now().Before(retry) {
			continue
		}
		err := d.flushMemtable(flushing, b.stop)
		if errors.Is(err, errStopped) {
			return
		}
		b.mu.Lock()
		b.attempts++
		b.retryNow = false
		if err == nil {
			b.flushing, b.err = nil, nil
			b.flushes++
		} else {
			b.err = err
			retry = time.Now().Add(flushRetry)
		}
		b.cond.Broadcast()
		b.mu.Unlock()
		if err == nil {
			b.wake() // the active memtable may be full already
		}
	}
}

var errStopped = errors.New("btree: flush: closing")

// flushMemtable merges t into the tree in key order, makes the tree durable and deletes
// t's journal segments. It gives up between transactions once stop is closed (the
// segments stay, and the next Open replays them).
func (d *DB) flushMemtable(t *memtable, stop <-chan struct{}) error {
	if d.opts.beforeFlush != nil {
		if err := d.opts.beforeFlush(); err != nil {
			return fmt.Errorf("btree: flush: %w", err)
		}
	}
	keys := make([]string, 0, len(t.rows))
	for k := range t.rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w := &writer{d: d}
	var purged [][]byte
	if d.cache != nil {
		// Merging a buffered row into the tree changes what Get returns only when the
		// purge drops something (a tombstone or an expired cell past the grace period):
		// those keys are invalidated once their transaction has committed.
		w.purged = func(key []byte) { purged = append(purged, key) }
	}
	for len(keys) > 0 {
		select {
		case <-stop:
			return errStopped
		default:
		}
		n := min(len(keys), d.opts.MaxGroupMutations)
		purged = purged[:0]
		err := d.mergeRows(w, keys[:n], t.rows)
		for _, k := range purged { // committed or rolled back
			d.cache.Invalidate(k)
		}
		if err != nil {
			return fmt.Errorf("btree: flush: %w", err)
		}
		keys = keys[n:]
	}
	if d.opts.Durability == engine.Periodic {
		if err := d.sync(); err != nil {
			return fmt.Errorf("btree: flush: %w", err)
		}
	}
	return removeSegments(d.dir(), t.segments)
}

// mergeRows merges rows[k] into the tree for each k of keys, in one transaction.
func (d *DB) mergeRows(w *writer, keys []string, rows map[string]row.Row) (err error) {
	d.syncMu.Lock() // not during a sync: see DB.sync
	defer d.syncMu.Unlock()
	var count int64
	defer guard(&err, panicOnFault())
	err = d.bolt.Update(func(tx *bbolt.Tx) error {
		b, err := buckets(tx)
		if err != nil {
			return err
		}
		count = d.rows.Load() // only writers holding syncMu change it
		now := d.opts.Clock()
		for _, k := range keys {
			m := row.Mutation{Key: []byte(k), Row: rows[k]}
			delta, err := w.merge(b, &m, now)
			if err != nil {
				return err
			}
			count += delta
		}
		return putCount(tx, count)
	})
	if err != nil {
		return err
	}
	d.rows.Store(count)
	d.commits.Add(1)
	return nil
}

// drainBuffer flushes everything buffered so far into the tree (engine.Engine.Flush).
func (d *DB) drainBuffer() error {
	b := d.buf
	if err := b.waitFlushed(); err != nil {
		return err
	}
	// The writes applied so far are all in the active memtable now. If rotate finds it
	// empty or a flush under way, the committer rotated it first.
	if err := b.rotate(d.opts.Durability == engine.Periodic); err != nil {
		return fmt.Errorf("btree: flush: %w", err)
	}
	return b.waitFlushed()
}

// waitFlushed waits until no memtable is being flushed, and returns the error of a flush
// that failed, tried again first if it had failed before.
func (b *writeBuffer) waitFlushed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil { // try again now, rather than report the last failure
		b.retryNow = true
		b.wake()
		for n := b.attempts; b.attempts == n; {
			b.cond.Wait()
		}
	}
	for b.flushing != nil && b.err == nil {
		b.cond.Wait()
	}
	return b.err
}
