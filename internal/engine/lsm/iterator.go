package lsm

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// NewIterator returns an iterator over lo <= key < hi (nil meaning unbounded). A pebble
// iterator reads at the sequence number current when it is created and pins the memtables
// and sstables of that moment, so it is a consistent snapshot without a pebble.Snapshot.
// Rows are purged and expired as a Get would return them when Next reaches them.
func (db *DB) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return nil, fmt.Errorf("lsm: new iterator: %w", err)
	}
	if err := db.enter("new iterator"); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	pit, err := db.pdb.NewIter(iterBounds(lo, hi))
	if err != nil {
		return nil, wrapErr("new iterator", err)
	}
	it := &iterator{db: db, pit: pit}
	db.itersMu.Lock()
	db.iters[it] = struct{}{}
	db.itersMu.Unlock()
	return it, nil
}

// iterBounds turns [lo, hi) into pebble bounds. Pebble keeps using them while the iterator
// is open and the caller may reuse its buffers, so they are copied. An empty lo is the same
// as none; pebble must not get it because its invariants builds (-race) index key[0] on
// seeks. An empty hi admits no key, and neither does [0x00, 0x00).
func iterBounds(lo, hi []byte) *pebble.IterOptions {
	switch {
	case hi != nil && len(hi) == 0:
		lo, hi = []byte{0}, []byte{0}
	case len(lo) == 0:
		lo = nil
	}
	return &pebble.IterOptions{LowerBound: slices.Clone(lo), UpperBound: slices.Clone(hi)}
}

// iterator walks a pebble iterator. Its methods take db.mu shared so that DB.Close, which
// closes every open iterator, never runs while one of them is inside pebble.
type iterator struct {
	db      *DB
	pit     *pebble.Iterator
	started bool
	closed  bool
	err     error
	stored  bool // rows as stored, without the read-time view (NewStoredIterator)

	// key and val are copies of pebble's current key and value, which pebble may reuse on
	// the next positioning call; row aliases val. Copying keeps Key and Row valid until the
	// next Next even if DB.Close closes the pebble iterator meanwhile.
	key, val []byte
	row      row.Row
}

// Next advances to the next row that has something left after the read-time purge.
func (it *iterator) Next() bool {
	it.db.mu.RLock()
	defer it.db.mu.RUnlock()
	if it.closed || it.err != nil {
		return false
	}
	for {
		var ok bool
		if it.started {
			ok = it.pit.Next()
		} else {
			ok, it.started = it.pit.First(), true
		}
		if !ok {
			it.err = wrapErr("iterator", it.pit.Error())
			return false
		}
		if found, err := it.load(); err != nil || found {
			it.err = err
			return err == nil
		}
	}
}

// load decodes the current pebble entry into it.row and reports whether a row remains.
func (it *iterator) load() (bool, error) {
	v, err := it.pit.ValueAndErr()
	if err != nil {
		return false, wrapErr(fmt.Sprintf("iterator at %q", it.pit.Key()), err)
	}
	it.key = append(it.key[:0], it.pit.Key()...)
	it.val = append(it.val[:0], v...)
	r, err := row.Decode(it.val)
	if err != nil {
		return false, fmt.Errorf("lsm: iterator at %q: %w: %w", it.key, engine.ErrCorrupt, err)
	}
	if it.stored {
		it.row = r
		return true, nil
	}
	r, found, _ := it.db.readView(it.key, r, it.db.opts.Clock())
	it.row = r
	return found, nil
}

// Key returns the current key, valid until the next Next or Close.
func (it *iterator) Key() []byte { return it.key }

// Row returns the current row, valid until the next Next or Close.
func (it *iterator) Row() row.Row { return it.row }

// Err returns the first error met.
func (it *iterator) Err() error {
	it.db.mu.RLock()
	defer it.db.mu.RUnlock()
	return it.err
}

// Close releases the iterator's snapshot. It is safe to call more than once, and after the
// DB is closed.
func (it *iterator) Close() error {
	it.db.mu.RLock()
	defer it.db.mu.RUnlock()
	if it.closed {
		return nil
	}
	it.db.itersMu.Lock()
	delete(it.db.iters, it)
	it.db.itersMu.Unlock()
	return it.closeLocked(nil)
}

// closeLocked closes the pebble iterator and records why later calls fail. The caller
// holds db.mu, shared or exclusive.
func (it *iterator) closeLocked(reason error) error {
	it.closed = true
	err := wrapErr("iterator close", it.pit.Close())
	if it.err == nil {
		it.err = reason
	}
	return err
}
