package btree

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// Group commit.
//
// bbolt allows one write transaction at a time and, in Sync durability, fsyncs at every
// commit. Committing each Apply on its own would serialize writers behind one fsync each.
// bbolt's DB.Batch groups calls but waits up to MaxBatchDelay (10 ms) for company, so a
// lone writer pays the delay on every write. The committer here has no timer: one goroutine
// takes the first queued request and whatever else is already queued, commits them in one
// transaction, answers them all, and starts again. While a commit (and its fsync) runs, new
// requests pile up in the queue and form the next group, so the group size adapts to the
// load: 1 for a lone writer (no added latency), many under contention (one fsync shared).

// request is one Apply call waiting for the committer.
type request struct {
	batch []row.Mutation
	bytes int64      // size of keys and cells, for group and memory limits
	done  chan error // buffered: the committer never blocks answering
}

// Apply validates batch, queues it for the committer and waits until it is committed (and
// fsynced in Sync durability). A full queue blocks Apply until the committer catches up.
// The batch is applied in one bbolt transaction, so it is atomic.
func (d *DB) Apply(batch []row.Mutation) error {
	if err := d.validate(batch); err != nil {
		return err
	}
	req := &request{batch: batch, bytes: batchBytes(batch), done: make(chan error, 1)}
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return fmt.Errorf("btree: apply: %w", engine.ErrClosed)
	}
	if len(batch) == 0 {
		d.mu.RUnlock()
		return nil
	}
	if err := d.space.Admit(req.bytes); err != nil {
		d.mu.RUnlock()
		return fmt.Errorf("btree: apply: %w", err)
	}
	d.queueBytes.Add(req.bytes)
	d.queue <- req // may block on a full queue; Close waits for mu, so the queue is open
	d.mu.RUnlock()
	err := <-req.done
	if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, engine.ErrNoSpace) {
		// Past the guard's estimate (another process filled the device): bbolt rolled
		// the transaction back, so nothing was applied, as with the guard's refusal.
		err = fmt.Errorf("%w: %w", engine.ErrNoSpace, err)
	}
	return err
}

// validate checks the batch before it is queued, so that a group rarely fails because of
// one of its requests.
func (d *DB) validate(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("btree: apply: %w", err)
	}
	return nil
}

func batchBytes(batch []row.Mutation) int64 {
	var n int64
	for i := range batch {
		n += int64(len(batch[i].Key))
		for _, c := range batch[i].Row.Cells {
			n += int64(len(c.Name) + len(c.Value))
		}
	}
	return n
}

// commitLoop is the committer goroutine. It exits once Close has closed the queue and every
// request in it has been answered.
func (d *DB) commitLoop() {
	defer close(d.loopDone)
	w := &writer{d: d}
	var group []*request
	for first := range d.queue {
		group = d.fillGroup(append(group[:0], first))
		if d.opts.beforeCommit != nil {
			d.opts.beforeCommit(group)
		}
		d.commitGroup(w, group)
		for i := range group {
			d.queueBytes.Add(-group[i].bytes)
			group[i] = nil // let the requests' batches be collected
		}
	}
}

// fillGroup adds already-queued requests to group until the queue is empty or the group
// reaches its limits. It never waits.
func (d *DB) fillGroup(group []*request) []*request {
	muts, size := len(group[0].batch), group[0].bytes
	for muts < d.opts.MaxGroupMutations && size < int64(d.opts.MaxGroupBytes) {
		select {
		case r, ok := <-d.queue:
			if !ok {
				return group
			}
			group = append(group, r)
			muts, size = muts+len(r.batch), size+r.bytes
		default:
			return group
		}
	}
	return group
}

// commitGroup commits the group in one transaction. If that fails, it retries each request
// in a transaction of its own, so that one bad request (say, one that reads a corrupted
// row) fails alone and its neighbours still commit.
func (d *DB) commitGroup(w *writer, group []*request) {
	if d.buf != nil {
		err := d.commitBuffered(group)
		if d.cache != nil {
			// Once the rows are in the memtable (see rowcache.Cache). A cached row is what
			// a read returned, the tree's row merged with the buffer's: merging the write
			// in gives what a read returns now.
			for _, r := range group {
				for i := range r.batch {
					if err != nil {
						d.cache.Invalidate(r.batch[i].Key)
						continue
					}
					d.cache.MergeWrite(r.batch[i].Key, &r.batch[i].Row)
				}
			}
		}
		for _, r := range group {
			r.done <- err
		}
		return
	}
	d.syncMu.Lock() // not during a sync: see DB.sync
	defer d.syncMu.Unlock()
	err := w.update(group)
	if err == nil || len(group) == 1 {
		for _, r := range group {
			r.done <- err
		}
		return
	}
	for i, r := range group {
		r.done <- w.update(group[i : i+1])
	}
}

// maxScratchBytes is the largest encoding buffer the committer keeps between rows.
const maxScratchBytes = 1 << 20

// writer applies requests in bbolt write transactions. Only the committer goroutine uses
// it, so its scratch buffer needs no lock.
type writer struct {
	d       *DB
	scratch []byte
	// purged, when not nil, is called with each key whose row the grace period's purge
	// changed.
	purged func(key []byte)
	// stored, when not nil, records the value each key written now has in the tree (nil:
	// deleted), for the row cache once the transaction commits. Keys whose value did not
	// change are not recorded.
	stored map[string][]byte
}

// update applies reqs in one transaction and, on success, publishes the new row count.
func (w *writer) update(reqs []*request) (err error) {
	var count int64
	if w.d.cache != nil {
		// Once the transaction has committed (new read transactions see it) or rolled
		// back (see rowcache.Cache): a cached key gets the row the tree now holds.
		// Deferred before guard, so that it runs after guard has turned a panic into err.
		if w.stored == nil {
			w.stored = make(map[string][]byte)
		}
		clear(w.stored)
		defer func() {
			for _, r := range reqs {
				for i := range r.batch {
					w.refreshCached(r.batch[i].Key, err == nil)
				}
			}
		}()
	}
	defer guard(&err, panicOnFault())
	err = w.d.bolt.Update(func(tx *bbolt.Tx) error {
		b, err := buckets(tx)
		if err != nil {
			return err
		}
		count = w.d.rows.Load() // only writers holding syncMu change it
		now := w.d.opts.Clock()
		for _, r := range reqs {
			for i := range r.batch {
				delta, err := w.merge(b, &r.batch[i], now)
				if err != nil {
					return err
				}
				count += delta
			}
		}
		return putCount(tx, count)
	})
	if err != nil {
		return fmt.Errorf("btree: apply: %w", err)
	}
	w.d.rows.Store(count)
	w.d.commits.Add(1)
	return nil
}

// merge reads the row stored under m.Key, merges m into it, purges what the grace period
// allows and writes the result back, deleting the key if nothing is left. It returns the
// change in the number of stored rows. Purging is safe here because the stored row is the
// key's whole history.
func (w *writer) merge(b *bbolt.Bucket, m *row.Mutation, now int64) (int64, error) {
	var stored row.Row
	old := getKey(b, m.Key)
	if old != nil {
		var err error
		if stored, err = decodeValue(m.Key, old); err != nil {
			return 0, err
		}
	}
	merged := row.Merge(stored, m.Row)
	cells, deleted := len(merged.Cells), merged.Deleted
	row.Purge(&merged, w.d.opts.Horizon(m.Key, now), 0)
	if w.purged != nil && (len(merged.Cells) != cells || merged.Deleted != deleted) {
		w.purged(m.Key)
	}
	switch {
	case merged.IsEmpty() && old == nil:
		return 0, nil
	case merged.IsEmpty():
		if w.stored != nil {
			w.stored[string(m.Key)] = nil
		}
		return -1, deleteKey(b, m.Key)
	}
	// bbolt keeps the value slice until the transaction commits, so every Put gets its own
	// copy; the scratch buffer only saves growing it piecemeal.
	w.scratch = appendValue(w.scratch[:0], m.Key, &merged)
	if bytes.Equal(old, w.scratch) {
		// Nothing new (a replayed hint, a repair, a refill of a row already here): no
		// page to dirty.
		return 0, nil
	}
	v := make([]byte, len(w.scratch))
	copy(v, w.scratch)
	if cap(w.scratch) > maxScratchBytes {
		w.scratch = nil // do not keep one huge row's buffer for ever
	}
	if err := putKey(b, m.Key, v); err != nil {
		return 0, fmt.Errorf("key %.64q: %w", m.Key, err)
	}
	if w.stored != nil {
		w.stored[string(m.Key)] = v // bbolt keeps v until the commit anyway
	}
	if old == nil {
		return 1, nil
	}
	return 0, nil
}

// refreshCached brings key's row cache entry up to date after a transaction that wrote
// key: the row the tree now holds when it committed, nothing cached when it did not.
func (w *writer) refreshCached(key []byte, committed bool) {
	if !committed {
		w.d.cache.Invalidate(key)
		return
	}
	v, changed := w.stored[string(key)]
	w.d.cache.Update(key, func(cached row.Row, found bool) (row.Row, bool, error) {
		switch {
		case !changed: // the write changed nothing stored
			return cached, found, nil
		case v == nil:
			return row.Row{}, false, nil
		}
		r, err := decodeValue(key, v) // we encoded it: only a bug fails, and drops the entry
		return r, true, err
	})
}
