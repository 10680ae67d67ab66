package lsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

var _ engine.Tierable = (*DB)(nil)

// GetStored implements engine.Tierable: the merged row as pebble stores it, before the
// read-time purge and expiry view.
func (db *DB) GetStored(key []byte) (row.Row, bool, error) {
	if err := db.enter("get stored"); err != nil {
		return row.Row{}, false, err
	}
	defer db.mu.RUnlock()
	return db.getStored(key)
}

// NewStoredIterator implements engine.Tierable: NewIterator without the read-time view.
func (db *DB) NewStoredIterator(lo, hi []byte) (engine.Iterator, error) {
	it, err := db.NewIterator(lo, hi)
	if err != nil {
		return nil, err
	}
	it.(*iterator).stored = true
	return it, nil
}

// Remove implements engine.Tierable with one batch of pebble Deletes, not synced, which
// hide every merge operand and value below them; compactions then drop them all. It
// holds the collapser's stripes like Apply, so a collapse cannot write a key back after
// its Remove.
func (db *DB) Remove(keys [][]byte) error {
	for _, k := range keys {
		if len(k) == 0 {
			return fmt.Errorf("lsm: remove: %w: empty key", engine.ErrInvalid)
		}
	}
	if err := db.enter("remove"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return wrapErr("remove", err)
		}
	}
	if b.Empty() {
		return nil
	}
	if db.collapser != nil {
		unlock := db.collapser.lockBatch(func(yield func([]byte) bool) {
			for _, k := range keys {
				if !yield(k) {
					return
				}
			}
		})
		defer unlock()
	}
	// Removing frees space once compacted, so it may use half of the reserve: a tiered
	// engine demotes rows from a fast tier that has run out of room.
	for _, g := range db.guards {
		if err := g.AdmitFreeing(int64(b.Len())); err != nil {
			return fmt.Errorf("lsm: remove: %w", err)
		}
	}
	err := db.pdb.Apply(b, pebble.NoSync)
	if db.rows != nil {
		for _, k := range keys {
			db.rows.Invalidate(k)
		}
	}
	return wrapErr("remove", err)
}

// Sync implements engine.Tierable: it fsyncs the WAL, as the periodic syncer does.
func (db *DB) Sync() error {
	if err := db.enter("sync"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return wrapErr("sync", db.pdb.LogData(nil, pebble.Sync))
}
