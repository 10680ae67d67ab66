package lsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
)

// defaultFlushDelayDeleteRange is how long pebble lets a memtable that holds a range
// deletion wait before it flushes it (pebble.Options.FlushDelayDeleteRange; CockroachDB
// runs with the same 10 s). Pebble can reclaim nothing while the deletion is in a
// memtable, and a node cleaning up after a membership change may take few writes to fill
// one: the flush puts the deletion in a table, whose statistics tell pebble which tables
// below it the deletion covers (see DeleteRange). Waiting a little lets the deletions of
// one cleanup share the flush.
const defaultFlushDelayDeleteRange = 10 * time.Second

var _ engine.RangeDeleter = (*DB)(nil)

// DeleteRange implements engine.RangeDeleter with one pebble range deletion, in a batch
// committed as Apply commits its own (fsynced in Durability Sync): the whole range is
// deleted at one instant, the batch's sequence number. Pebble hides every entry of the
// range below it at once, on every read, whatever levels hold them. The row cache then
// forgets the range, after the commit and even if it failed, as Apply invalidates its
// keys; the collapser's stripes are held meanwhile, so that no collapse that read a key
// before the deletion writes its row back after it.
//
// The space comes back in steps, none of which DeleteRange waits for (a manual
// compaction of the range, pebble's Compact, would read and rewrite every table that
// overlaps it, while a deletion over whole tables can drop them unread):
//
//   - the memtable holding the deletion is flushed within defaultFlushDelayDeleteRange,
//     or sooner when it fills;
//   - from the new table's statistics pebble learns which tables of the levels below lie
//     wholly inside the range and older than the deletion, and drops them in a
//     delete-only compaction, which reads and writes nothing (tables an open iterator
//     still reads stay on disk until it is closed);
//   - tables that hold keys on both sides of a bound keep their deleted rows until a
//     compaction rewrites them: pebble counts the bytes a table's range deletions cover
//     into its level's score, so it picks them sooner than their own size would.
//
// Stats follows: DiskBytes and RowsEstimate fall as tables are dropped.
func (db *DB) DeleteRange(lo, hi []byte) error {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return fmt.Errorf("lsm: delete range: %w", err)
	}
	if err := db.enter("delete range"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	start, end, err := db.deletionBounds(lo, hi)
	if err != nil || end == nil {
		return err
	}
	b := db.pdb.NewBatch()
	if err := b.DeleteRange(start, end, nil); err != nil {
		_ = b.Close()
		return wrapErr("delete range", err)
	}
	if db.collapser != nil {
		defer db.collapser.lockAll()()
	}
	// A deletion frees space once compacted, so it may use half of the reserve, as
	// Remove does: a node on a full disk can still clean up.
	for _, g := range db.guards {
		if err := g.AdmitFreeing(int64(b.Len())); err != nil {
			_ = b.Close()
			return fmt.Errorf("lsm: delete range: %w", err)
		}
	}
	err = db.pdb.Apply(b, db.wo)
	if db.rows != nil {
		db.rows.InvalidateRange(lo, hi)
	}
	if err != nil {
		return wrapErr("delete range", err) // as in Apply: a failed batch is not reused
	}
	return b.Close()
}

// deletionBounds returns pebble's [start, end) for the keys of [lo, hi), or a nil end when
// no stored key can be in it. Keys are never empty, so a nil or empty lo starts at the
// smallest key there can be, 0x00 (pebble is never given an empty key, see iterBounds). A
// range deletion needs an end: for a nil hi it is the key just after the last stored one,
// read now; a key written later, past it, is a write after the deletion's instant.
func (db *DB) deletionBounds(lo, hi []byte) (start, end []byte, err error) {
	start = lo
	if len(start) == 0 {
		start = []byte{0}
	}
	if hi != nil {
		if bytes.Compare(start, hi) >= 0 {
			return nil, nil, nil
		}
		return start, hi, nil
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return nil, nil, wrapErr("delete range", err)
	}
	if it.Last() {
		end = append(bytes.Clone(it.Key()), 0)
	}
	if err := it.Close(); err != nil {
		return nil, nil, wrapErr("delete range", err)
	}
	return start, end, nil
}
