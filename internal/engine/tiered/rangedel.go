package tiered

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/engine"
)

var _ engine.RangeDeleter = (*DB)(nil)

// DeleteRange implements engine.RangeDeleter on both tiers, holding moveMu so that no move
// copies a row of the range into a tier after the range was deleted there:
//
//  1. every key of the range at home on the fast tier, or left in both tiers by a move
//     that failed, is marked in both with the slow tier as its home, and leaves the fast
//     keys' placement and byte counts (FastRowBytes, TierStats): writes from now on go
//     to the slow tier, and reads merge both tiers until the deletion is done;
//  2. the range is deleted from the fast tier, then from the slow one, with their own
//     DeleteRange (a tier without one removes the range's keys as a move does, then
//     syncs), while no NewIterator takes its snapshots: an iterator sees none of the
//     deletion or all of it;
//  3. every row a read or a write captured for promotion (Migrator) is spoiled, as a
//     write to its slot would spoil it, so that no promotion copies a deleted row back;
//  4. the marks are cleared.
//
// A row written during the deletion survives if it was written after step 2 reached its
// tier. If a tier fails, the marks stay, so that reads keep merging both tiers, and the
// rows still in the fast tier are found again by a later move or the next Open; calling
// DeleteRange again completes it. The space comes back as each tier's own DeleteRange
// says. The access tracker (Options.Tracker) is not told: its counts of the deleted keys
// fade over its windows, and a promotion of one of them finds no row to move.
func (db *DB) DeleteRange(lo, hi []byte) error {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return fmt.Errorf("tiered: delete range: %w", err)
	}
	if err := db.enter("delete range"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	db.moveMu.Lock()
	defer db.moveMu.Unlock()
	db.markRange(lo, hi)
	var err error
	db.view.RLock()
	for _, t := range []Tier{Fast, Slow} {
		if err = deleteTierRange(db.tiers[t], lo, hi); err != nil {
			err = fmt.Errorf("tiered: delete range from the %s tier: %w", t, err)
			break
		}
	}
	db.view.RUnlock()
	for i := range db.slots {
		ws := &db.slots[i]
		ws.started.Add(1)
		ws.finished.Add(1)
	}
	if err != nil {
		return err
	}
	db.clearRangeMarks(lo, hi)
	return nil
}

// markRange is step 1 of DeleteRange: the keys of [lo, hi) at home on the fast tier,
// those a failed promotion left in both tiers among them, are marked in both with the
// slow tier as their home (a failed demotion's are already). The caller holds moveMu, so
// no move is under way and every mark in the range is a failed move's.
func (db *DB) markRange(lo, hi []byte) {
	var keys [][]byte
	for i := range db.stripes {
		s := &db.stripes[i]
		s.mu.Lock()
		keys = keys[:0]
		for k := range s.fast.All() {
			if inRange(k, lo, hi) {
				keys = append(keys, bytes.Clone(k)) // All's key is only valid until the yield returns
			}
		}
		for _, k := range keys {
			db.mark(s, k, Slow, 0)
		}
		s.mu.Unlock()
	}
}

// clearRangeMarks is step 4 of DeleteRange: the marks of [lo, hi) go, since neither tier
// holds the keys any more.
func (db *DB) clearRangeMarks(lo, hi []byte) {
	for i := range db.stripes {
		s := &db.stripes[i]
		s.mu.Lock()
		for k := range s.both {
			if inRange([]byte(k), lo, hi) {
				delete(s.both, k)
			}
		}
		s.mu.Unlock()
	}
}

func inRange(key, lo, hi []byte) bool {
	return (lo == nil || bytes.Compare(key, lo) >= 0) && (hi == nil || bytes.Compare(key, hi) < 0)
}

// deleteTierRange deletes [lo, hi) from a tier: with its DeleteRange if it has one, else
// by removing the keys of a snapshot of the range, moveChunk at a time (Remove leaves no
// tombstone), and syncing the tier, which makes the removals as durable as a write.
func deleteTierRange(t engine.Tierable, lo, hi []byte) error {
	if d, ok := t.(engine.RangeDeleter); ok {
		return d.DeleteRange(lo, hi)
	}
	it, err := t.NewStoredIterator(lo, hi)
	if err != nil {
		return err
	}
	keys := make([][]byte, 0, moveChunk)
	for it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
		if len(keys) == moveChunk {
			if err = t.Remove(keys); err != nil {
				break
			}
			keys = keys[:0]
		}
	}
	if err = errors.Join(err, it.Err(), it.Close()); err != nil {
		return err
	}
	if len(keys) > 0 {
		if err := t.Remove(keys); err != nil {
			return err
		}
	}
	return t.Sync()
}
