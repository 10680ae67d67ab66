package tiered

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/row"
)

// failingStoredReads is a tier whose GetStored fails when told to: a move that still
// succeeds did not read the tier.
type failingStoredReads struct {
	engine.Tierable
	fail bool
}

var errStoredRead = errors.New("the slow tier was read")

func (f *failingStoredReads) GetStored(key []byte) (row.Row, bool, error) {
	if f.fail {
		return row.Row{}, false, errStoredRead
	}
	return f.Tierable.GetStored(key)
}

func openCapturing(t *testing.T) (*DB, *failingStoredReads, map[string]Captured) {
	t.Helper()
	dir := t.TempDir()
	var slow *failingStoredReads
	db, err := Open(filepath.Join(dir, "fast"), filepath.Join(dir, "slow"), Options{
		OpenTier: func(d string, tier Tier, o engine.Options) (engine.Tierable, error) {
			s, err := lsm.Open(d, lsm.Options{Options: o})
			if err != nil || tier == Fast {
				return s, err
			}
			slow = &failingStoredReads{Tierable: s}
			return slow, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	captured := map[string]Captured{}
	hook := func(key, stored []byte, token uint64) { captured[string(key)] = Captured{stored, token} }
	db.slowRead.Store(&hook)
	return db, slow, captured
}

func put(t *testing.T, db *DB, key, col string, ts int64) {
	t.Helper()
	m := row.Mutation{Key: []byte(key), Row: row.Row{Cells: []row.Cell{{Name: []byte(col), Value: []byte(col), Timestamp: ts}}}}
	if err := db.Apply([]row.Mutation{m}); err != nil {
		t.Fatal(err)
	}
}

func cellsOf(t *testing.T, db *DB, key string) int {
	t.Helper()
	r, _, err := db.Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return len(r.Cells)
}

// A promotion right after a read copies the row the read saw, without reading the slow
// tier again.
func TestPromotionCopiesTheCapturedRow(t *testing.T) {
	db, slow, captured := openCapturing(t)
	put(t, db, "k", "a", 1)
	if cellsOf(t, db, "k") != 1 || captured["k"].Stored == nil {
		t.Fatalf("the read captured nothing: %+v", captured["k"])
	}
	slow.fail = true
	if err := db.moveCaptured([][]byte{[]byte("k")}, captured); err != nil {
		t.Fatalf("promotion with a captured row read the slow tier: %v", err)
	}
	slow.fail = false
	if db.HomeOf([]byte("k")) != Fast || cellsOf(t, db, "k") != 1 {
		t.Errorf("home %s, %d cells", db.HomeOf([]byte("k")), cellsOf(t, db, "k"))
	}
}

// A write after the read makes the captured row stale: the promotion reads the slow
// tier, and the write is not lost.
func TestPromotionAfterAWriteReadsTheSlowTier(t *testing.T) {
	db, slow, captured := openCapturing(t)
	put(t, db, "k", "a", 1)
	cellsOf(t, db, "k")
	put(t, db, "k", "b", 2) // same stripe, after the capture
	slow.fail = true
	if err := db.moveCaptured([][]byte{[]byte("k")}, captured); !errors.Is(err, errStoredRead) {
		t.Fatalf("promotion of a row written since its capture: %v, want it to read the slow tier", err)
	}
	slow.fail = false
	if err := db.moveCaptured([][]byte{[]byte("k")}, captured); err != nil {
		t.Fatal(err)
	}
	if n := cellsOf(t, db, "k"); n != 2 {
		t.Errorf("after the promotion k has %d cells, want 2: the write after the capture was lost", n)
	}
	if r, found, _ := slow.Tierable.GetStored([]byte("k")); found {
		t.Errorf("the slow tier still holds k: %v", r)
	}
}
