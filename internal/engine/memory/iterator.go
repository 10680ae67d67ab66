package memory

import (
	"bytes"
	"fmt"

	"github.com/tidwall/btree"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// NewIterator returns an iterator over [lo, hi) of an O(1) copy-on-write copy of the tree:
// it holds no lock while it walks, and writers go on meanwhile (the first write to each
// shared node after the copy clones that node). The iterator keeps working after Close of
// the DB: its copy is its own.
func (d *DB) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return nil, fmt.Errorf("memory: iterator: %w", err)
	}
	snap, err := d.copyTree("iterator")
	if err != nil {
		return nil, err
	}
	return &iterator{
		iter:  snap.tree.Iter(),
		lo:    bytes.Clone(lo),
		hi:    bytes.Clone(hi),
		clock: d.opts.Clock,
	}, nil
}

// iterator walks a private copy of the tree. Keys and rows are decoded from a buffer of its
// own, reused by each Next.
type iterator struct {
	iter    btree.IterG[item]
	lo, hi  []byte
	clock   engine.Clock
	started bool
	done    bool
	buf     []byte // copy of the current item's kv
	klen    int
	cur     row.Row
	err     error
}

// Next moves to the next row in range.
func (it *iterator) Next() bool {
	if it.done {
		return false
	}
	var ok bool
	switch {
	case it.started:
		ok = it.iter.Next()
	case it.lo == nil:
		ok = it.iter.First()
	default:
		ok = it.iter.Seek(pivot(it.lo))
	}
	it.started = true
	if !ok || (it.hi != nil && bytes.Compare(it.iter.Item().key(), it.hi) >= 0) {
		it.finish()
		return false
	}
	cur := it.iter.Item()
	it.buf = append(it.buf[:0], cur.kv...)
	it.klen = cur.klen
	r, err := row.Decode(it.buf[it.klen:])
	if err != nil {
		it.err = fmt.Errorf("memory: iterator: key %q: %w: %w", cur.key(), engine.ErrCorrupt, err)
		it.finish()
		return false
	}
	// Expiry is judged when Next reaches the row, as a Get at that moment would.
	it.cur = engine.ReadView(r, it.clock())
	return true
}

// finish drops the tree copy so that its nodes can be collected.
func (it *iterator) finish() {
	if !it.done {
		it.done = true
		it.iter.Release()
	}
}

// Key returns the current key; valid until the next Next or Close.
func (it *iterator) Key() []byte { return it.buf[:it.klen] }

// Row returns the current row; valid until the next Next or Close.
func (it *iterator) Row() row.Row { return it.cur }

// Err returns the first error met.
func (it *iterator) Err() error { return it.err }

// Close releases the iterator's copy of the tree. It is safe to call more than once.
func (it *iterator) Close() error {
	it.finish()
	return nil
}
