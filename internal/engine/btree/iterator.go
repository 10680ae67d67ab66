package btree

import (
	"bytes"
	"fmt"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// NewIterator returns an iterator over [lo, hi) reading one bbolt read transaction: a
// consistent snapshot that later commits do not change. With the write buffer on, the
// buffered rows in range are taken (shared, not copied) as the transaction begins and
// merged with the tree's.
//
// The transaction is held until the iterator is exhausted or closed, with bbolt's usual
// costs: pages freed by later commits cannot be reused while it is open (the file grows
// instead), and a commit that must grow the memory map waits for every open read
// transaction to finish. Options.InitialMmapSize (8 GiB by default) makes such remaps rare,
// but once the file outgrows the map a long-lived iterator can stall writers, and a
// goroutine that holds an iterator open while waiting for its own Apply can deadlock.
// Iterate promptly.
//
// Close of the DB closes iterators still open; their next Next returns false and Err
// returns ErrClosed. Keys and rows are copied out of bbolt's memory map, so what the caller
// holds stays valid (until its next Next) even if the DB closes.
func (d *DB) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return nil, fmt.Errorf("btree: iterator: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return nil, fmt.Errorf("btree: iterator: %w", engine.ErrClosed)
	}
	it := &iterator{d: d, lo: bytes.Clone(lo), hi: bytes.Clone(hi)}
	if err := it.begin(); err != nil {
		return nil, err
	}
	d.itersMu.Lock()
	d.iters[it] = struct{}{}
	d.itersMu.Unlock()
	return it, nil
}

// iterator walks a bbolt cursor within [lo, hi), merged with the write buffer's rows in
// range as they were when the iterator began (see buffer.go).
type iterator struct {
	d      *DB
	lo, hi []byte // owned copies of the bounds

	buffered []bufferedRow // the write buffer's rows in range, by key; read-only
	bi       int           // the next of buffered
	tk, tv   []byte        // the tree's next row, not returned yet (bbolt's memory); tk nil past the range
	treeEnd  bool          // the tree's cursor ran off the end of the key space
	prevTree []byte        // the tree's previous key, for the order check

	// mu is held by every method that touches the transaction, because DB.Close may
	// release it from another goroutine.
	mu      sync.Mutex
	tx      *bbolt.Tx // nil once released
	root    *bbolt.Bucket
	w       walker
	started bool
	rows    int64  // rows returned, checked against the stored count at the end of a full scan
	key     []byte // copy of the current key, reused by the next Next
	val     []byte // copy of the current value; cur aliases it
	cur     row.Row
	err     error
}

func (it *iterator) begin() (err error) {
	if b := it.d.buf; b != nil {
		// Under the buffer's read lock until the transaction has begun: a memtable
		// flushed meanwhile would be in neither.
		b.mu.RLock()
		defer b.mu.RUnlock()
		it.buffered = b.snapshot(it.lo, it.hi)
	}
	defer guard(&err, panicOnFault())
	tx, err := it.d.bolt.Begin(false)
	if err != nil {
		return fmt.Errorf("btree: iterator: %w", err)
	}
	b, err := buckets(tx)
	if err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("btree: iterator: %w", err)
	}
	it.tx, it.root = tx, b
	return nil
}

// Next moves to the next row in range. It releases the snapshot as soon as the range is
// exhausted, so a caller that reads to the end does not hold it until Close.
func (it *iterator) Next() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.tx == nil || it.err != nil {
		return false
	}
	ok, err := it.next()
	if err != nil {
		it.err = fmt.Errorf("btree: iterator: %w", err)
	}
	if !ok {
		it.release()
	}
	return ok
}

func (it *iterator) next() (ok bool, err error) {
	defer guard(&err, panicOnFault())
	if !it.started {
		it.started = true
		if err := it.advanceTree(true); err != nil {
			return false, err
		}
	}
	inBuffer := it.bi < len(it.buffered)
	if it.tk == nil && !inBuffer {
		return false, it.checkCount(it.treeEnd)
	}
	cmp := -1 // the tree's row comes first
	switch {
	case it.tk == nil:
		cmp = 1
	case inBuffer:
		cmp = bytes.Compare(it.tk, []byte(it.buffered[it.bi].key))
	}
	var r row.Row
	if cmp <= 0 {
		it.key = append(it.key[:0], it.tk...)
		it.val = append(it.val[:0], it.tv...)
		if r, err = decodeValue(it.key, it.val); err != nil {
			return false, err
		}
		if err := it.advanceTree(false); err != nil {
			return false, err
		}
	}
	if cmp >= 0 {
		b := &it.buffered[it.bi]
		it.bi++
		if cmp > 0 {
			it.key = append(it.key[:0], b.key...)
			r = b.row.Clone() // the memtable's memory is not the caller's
		} else {
			r = row.Merge(r, b.row.Clone())
		}
	}
	// Expiry is judged when Next reaches the row, as a Get at that moment would.
	it.cur = engine.ReadView(r, it.d.opts.Clock())
	return true, nil
}

// advanceTree moves the tree's cursor to its first row in range (first) or its next, and
// counts the row toward the check of a complete scan.
func (it *iterator) advanceTree(first bool) (err error) {
	var k, v []byte
	if first {
		k, v, err = it.w.seek(it.root, it.lo)
	} else {
		k, v, err = it.w.next()
	}
	if err != nil {
		return err
	}
	if k == nil || (it.hi != nil && bytes.Compare(k, it.hi) >= 0) {
		it.tk, it.tv, it.treeEnd = nil, nil, k == nil
		return nil
	}
	// A damaged page can hand back keys out of order; checking costs one compare.
	if (it.prevTree != nil && bytes.Compare(k, it.prevTree) <= 0) || (it.lo != nil && bytes.Compare(k, it.lo) < 0) {
		return fmt.Errorf("%w: key %.64q out of order after %.64q", engine.ErrCorrupt, k, it.prevTree)
	}
	it.prevTree = append(it.prevTree[:0], k...)
	it.tk, it.tv = k, v
	it.rows++
	return nil
}

// checkCount compares the rows of a complete scan with the count stored in the same
// snapshot: a damaged page header can hide entries from the cursor without any checksum
// noticing, and the count is how such a scan still ends in an error.
func (it *iterator) checkCount(atEnd bool) error {
	if !atEnd || it.lo != nil {
		return nil
	}
	want, err := storedCount(it.tx)
	if err != nil {
		return err
	}
	if it.rows != want {
		return fmt.Errorf("%w: scan found %d rows, the stored count is %d", engine.ErrCorrupt, it.rows, want)
	}
	return nil
}

// Key returns the current key; valid until the next Next or Close.
func (it *iterator) Key() []byte { return it.key }

// Row returns the current row; valid until the next Next or Close.
func (it *iterator) Row() row.Row { return it.cur }

// Err returns the first error met.
func (it *iterator) Err() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.err
}

// Close releases the snapshot. It is safe to call more than once.
func (it *iterator) Close() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.release()
	return nil
}

// release rolls back the read transaction and forgets the iterator. Call with mu held.
func (it *iterator) release() {
	if it.tx == nil {
		return
	}
	_ = it.tx.Rollback() // a read transaction has nothing to roll back but its lock
	it.tx, it.root = nil, nil
	it.d.itersMu.Lock()
	delete(it.d.iters, it)
	it.d.itersMu.Unlock()
}

// closeIterators releases the snapshots of iterators still open, which bbolt's Close
// would otherwise wait for.
func (d *DB) closeIterators() {
	d.itersMu.Lock()
	open := make([]*iterator, 0, len(d.iters))
	for it := range d.iters {
		open = append(open, it)
	}
	d.itersMu.Unlock()
	for _, it := range open {
		it.mu.Lock()
		if it.tx != nil && it.err == nil {
			it.err = fmt.Errorf("btree: iterator: %w", engine.ErrClosed)
		}
		it.release()
		it.mu.Unlock()
	}
}
