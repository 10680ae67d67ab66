package tiered

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// NewIterator returns an iterator over lo <= key < hi. It takes a snapshot of each tier
// while no write is in flight on either, so the two are one consistent cut, and merges
// them in key order; rows are returned as Get would return them.
func (db *DB) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return nil, fmt.Errorf("tiered: new iterator: %w", err)
	}
	if err := db.enter("new iterator"); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	it := &iterator{db: db}
	db.view.Lock()
	defer db.view.Unlock()
	for _, t := range []Tier{Slow, Fast} {
		sub, err := db.tiers[t].NewStoredIterator(lo, hi)
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("tiered: new iterator on the %s tier: %w", t, err)
		}
		it.subs[t] = sub
	}
	return it, nil
}

// iterator merges the stored rows of the two tiers' iterators.
type iterator struct {
	db      *DB
	subs    [2]engine.Iterator
	valid   [2]bool // subs[t] is on a row not returned yet
	advance [2]bool // subs[t] must move before the next comparison
	started bool
	done    bool
	err     error

	key []byte
	row row.Row
}

// Next moves to the next key of either tier that has something left after the read-time
// view.
func (it *iterator) Next() bool {
	if it.done {
		return false
	}
	if !it.started {
		it.started = true
		it.advance = [2]bool{true, true}
	}
	for {
		for t := range it.subs {
			if it.advance[t] {
				it.valid[t] = it.subs[t].Next()
				it.advance[t] = false
				if !it.valid[t] {
					if err := it.subs[t].Err(); err != nil {
						it.err, it.done = err, true
						return false
					}
				}
			}
		}
		var r row.Row
		switch {
		case !it.valid[Slow] && !it.valid[Fast]:
			it.done = true
			return false
		case !it.valid[Fast]:
			it.key, r, it.advance[Slow] = it.subs[Slow].Key(), it.subs[Slow].Row(), true
		case !it.valid[Slow]:
			it.key, r, it.advance[Fast] = it.subs[Fast].Key(), it.subs[Fast].Row(), true
		default:
			ks, kf := it.subs[Slow].Key(), it.subs[Fast].Key()
			switch c := bytes.Compare(ks, kf); {
			case c < 0:
				it.key, r, it.advance[Slow] = ks, it.subs[Slow].Row(), true
			case c > 0:
				it.key, r, it.advance[Fast] = kf, it.subs[Fast].Row(), true
			default: // in both tiers: a move under way at the snapshot
				it.key, r = ks, row.Merge(it.subs[Slow].Row(), it.subs[Fast].Row())
				it.advance = [2]bool{true, true}
			}
		}
		// The sub-iterators' rows are theirs until their next Next; the view may rewrite
		// r's cells in place, so it works on a copy.
		r.Cells = append([]row.Cell(nil), r.Cells...)
		v, found, _ := it.db.readView(it.key, r)
		if found {
			it.row = v
			return true
		}
	}
}

// Key returns the current key, valid until the next Next or Close.
func (it *iterator) Key() []byte { return it.key }

// Row returns the current row, valid until the next Next or Close.
func (it *iterator) Row() row.Row { return it.row }

// Err returns the first error met.
func (it *iterator) Err() error {
	if it.err != nil {
		return wrapErr("iterator", it.err)
	}
	return nil
}

// Close closes both tiers' iterators. It is safe to call more than once.
func (it *iterator) Close() error {
	it.done = true
	var err error
	for t, sub := range it.subs {
		if sub != nil {
			err = errors.Join(err, sub.Close())
			it.subs[t] = nil
		}
	}
	return wrapErr("iterator close", err)
}
