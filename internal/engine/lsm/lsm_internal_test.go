package lsm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// testClock is a manual clock safe for the compaction goroutines that read it.
type testClock struct{ now atomic.Int64 }

func newTestClock() *testClock { c := &testClock{}; c.now.Store(testNow); return c }

func (c *testClock) Now() int64 { return c.now.Load() }

func openTest(t *testing.T, dir string, clk *testClock, edit ...func(*Options)) *DB {
	t.Helper()
	o := Options{Options: engine.Options{Clock: clk.Now, GracePeriod: time.Hour}}
	for _, e := range edit {
		e(&o)
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func live(name, value string, ts int64) row.Cell {
	return row.Cell{Name: []byte(name), Value: []byte(value), Timestamp: ts}
}

func tomb(name string, ts int64) row.Cell {
	return row.Cell{Name: []byte(name), Timestamp: ts, Tombstone: true}
}

func mustApply(t *testing.T, db *DB, muts ...row.Mutation) {
	t.Helper()
	if err := db.Apply(muts); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// TestCompactionRunsMergerAndPurges writes many operands per key, some of them tombstones
// older than the grace period, compacts everything into the bottom level and checks that
// the merge operator ran there: one plain entry per key, no merge operands left, purged
// keys reduced to empty rows that read as not found, and every Get still right.
func TestCompactionRunsMergerAndPurges(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), clk)
	const keys, writes = 40, 30
	for w := range writes {
		var batch []row.Mutation
		for k := range keys {
			ts := testNow + int64(w)
			c := live(fmt.Sprintf("c%d", w%5), fmt.Sprintf("v%d", w), ts)
			if k%4 == 0 { // every fourth key only ever receives column deletes
				c = tomb(fmt.Sprintf("c%d", w%5), ts)
			}
			batch = append(batch, row.Mutation{Key: fmt.Appendf(nil, "key%03d", k), Row: row.Row{Cells: []row.Cell{c}}})
		}
		mustApply(t, db, batch...)
		if w%10 == 9 {
			if err := db.Flush(); err != nil { // several sstables, so that merges span files
				t.Fatal(err)
			}
		}
	}
	clk.now.Add(2 * time.Hour.Microseconds()) // the tombstones are now purgeable
	if err := db.pdb.Compact(context.Background(), []byte("key"), []byte("key~"), false); err != nil {
		t.Fatalf("compact: %v", err)
	}
	tables, err := db.pdb.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var entries, operands uint64
	for _, level := range tables {
		for _, tbl := range level {
			entries += tbl.Properties.NumEntries
			operands += tbl.Properties.NumMergeOperands
		}
	}
	if want := uint64(keys); entries != want || operands != 0 {
		t.Errorf("after compaction: %d entries, %d merge operands; want %d and 0", entries, operands, want)
	}
	for k := range keys {
		key := fmt.Appendf(nil, "key%03d", k)
		r, found, err := db.Get(key)
		switch {
		case err != nil:
			t.Fatalf("get %s: %v", key, err)
		case k%4 == 0 && found:
			t.Errorf("get %s: found %v, want it purged", key, r)
		case k%4 != 0 && (!found || len(r.Cells) != 5):
			t.Errorf("get %s: found=%v cells=%d, want 5 columns", key, found, len(r.Cells))
		case k%4 != 0 && string(r.Find([]byte("c4")).Value) != fmt.Sprintf("v%d", writes-1):
			t.Errorf("get %s: column c4 = %q, want the last write", key, r.Find([]byte("c4")).Value)
		}
	}
}

// TestCorruptOperandIsAnErrorNotData puts an operand that is not a row straight into
// pebble, on top of a good row in an sstable: Get and iteration must fail with ErrCorrupt
// rather than return the good row as if the operand were not there. (Apply never writes
// such an operand; the test does not flush it because a flush that meets it fails and is
// retried forever, see the package comment.)
func TestCorruptOperandIsAnErrorNotData(t *testing.T) {
	db := openTest(t, t.TempDir(), newTestClock())
	key := []byte("k")
	mustApply(t, db, row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{live("a", "v", testNow)}}})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Merge(key, []byte("garbage"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Get(key); !errors.Is(err, engine.ErrCorrupt) {
		t.Errorf("get error %v, want ErrCorrupt", err)
	}
	it, err := db.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Next() || !errors.Is(it.Err(), engine.ErrCorrupt) {
		t.Errorf("iterator error %v, want ErrCorrupt and no row", it.Err())
	}
}

// TestPeriodicSyncerSyncsAndStopsOnClose: the syncer runs, and Close leaves no goroutine
// of ours or pebble's behind.
func TestPeriodicSyncerSyncsAndStopsOnClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	db, err := Open(t.TempDir(), Options{Options: engine.Options{
		Clock: newTestClock().Now, Durability: engine.Periodic, SyncInterval: time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, db, row.Mutation{Key: []byte("k"), Row: row.Row{Cells: []row.Cell{live("a", "v", testNow)}}})
	for deadline := time.Now().Add(30 * time.Second); db.syncer.syncs.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the periodic syncer never synced")
		}
		time.Sleep(time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestSecondOpenIsLocked: a second Open of one directory, however the path is spelled,
// fails with ErrLocked until the first is closed.
func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, newTestClock())
	for _, d := range []string{dir, dir + "/.", filepath.Join(dir, "..", filepath.Base(dir))} {
		if db2, err := Open(d, Options{}); !errors.Is(err, engine.ErrLocked) {
			if db2 != nil {
				db2.Close()
			}
			t.Errorf("second open of %s: error %v, want ErrLocked", d, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	db2.Close()
}

// TestOpenUnusableDirFails: a path that is a file, or a directory we may not write,
// gives an error naming the path.
func TestOpenUnusableDirFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, Options{}); err == nil || !containsPath(err, file) {
		t.Errorf("open of a file: error %v, want one naming %s", err, file)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: skipping the read-only directory case")
		return
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ro, Options{}); err == nil || !containsPath(err, ro) {
		t.Errorf("open of a read-only dir: error %v, want one naming %s", err, ro)
	}
}

func containsPath(err error, path string) bool {
	return err != nil && strings.Contains(err.Error(), path)
}

// TestCloseClosesIteratorsAndLaterCallsFail: Close ends open iterators (pebble refuses to
// close under them), and every later call reports ErrClosed.
func TestCloseClosesIteratorsAndLaterCallsFail(t *testing.T) {
	db := openTest(t, t.TempDir(), newTestClock())
	for _, k := range []string{"a", "b"} {
		mustApply(t, db, row.Mutation{Key: []byte(k), Row: row.Row{Cells: []row.Cell{live("c", k, testNow)}}})
	}
	it, err := db.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || string(it.Key()) != "a" {
		t.Fatalf("first row: %q, %v", it.Key(), it.Err())
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close with an open iterator: %v", err)
	}
	if string(it.Key()) != "a" || string(it.Row().Cells[0].Value) != "a" {
		t.Errorf("current row changed under Close: %q", it.Key())
	}
	if it.Next() || !errors.Is(it.Err(), engine.ErrClosed) {
		t.Errorf("Next after Close: err %v, want ErrClosed", it.Err())
	}
	if err := it.Close(); err != nil {
		t.Errorf("iterator Close after DB Close: %v", err)
	}
	calls := map[string]error{
		"apply": db.Apply([]row.Mutation{{Key: []byte("a")}}),
		"flush": db.Flush(),
	}
	_, _, calls["get"] = db.Get([]byte("a"))
	_, calls["iterator"] = db.NewIterator(nil, nil)
	for name, err := range calls {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if s := db.Stats(); s != (engine.Stats{}) {
		t.Errorf("stats after Close: %+v, want zeros", s)
	}
}

// TestStatsEstimateRows: the estimate counts unflushed and flushed rows and the disk use
// grows; the exact figures are not part of the contract.
func TestStatsEstimateRows(t *testing.T) {
	db := openTest(t, t.TempDir(), newTestClock())
	const n = 1000
	batch := make([]row.Mutation, n)
	for i := range batch {
		batch[i] = row.Mutation{Key: fmt.Appendf(nil, "k%05d", i), Row: row.Row{Cells: []row.Cell{live("c", "value", testNow)}}}
	}
	mustApply(t, db, batch...)
	if s := db.Stats(); s.RowsEstimate < n/2 || s.RowsEstimate > 2*n || s.Exact {
		t.Errorf("before flush: %+v, want about %d rows, not exact", s, n)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.RowsEstimate < n/2 || s.RowsEstimate > 2*n || s.DiskBytes <= 0 {
		t.Errorf("after flush: %+v, want about %d rows and some disk", s, n)
	}
}

func TestHotKeyIsCollapsedWithoutLosingConcurrentWrites(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Options: engine.Options{Durability: engine.Periodic}, CollapseOperands: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, perWriter = 6, 300
	key := []byte("hot")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				col := fmt.Appendf(nil, "w%d-%d", w, i)
				m := row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{{Name: col, Value: col, Timestamp: int64(1 + i)}}}}
				if err := db.Apply([]row.Mutation{m}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := db.Get(key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	r, found, err := db.Get(key)
	if err != nil || !found {
		t.Fatalf("get: %v %v", found, err)
	}
	if len(r.Cells) != writers*perWriter {
		t.Errorf("row has %d cells, want %d: a collapse lost writes", len(r.Cells), writers*perWriter)
	}
	// On a loaded machine the readers may not have run while operands piled up; the
	// read above merged them all, and its collapse runs in the background.
	for deadline := time.Now().Add(10 * time.Second); db.Collapsed() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if db.Collapsed() == 0 {
		t.Error("reads of a key with hundreds of operands collapsed nothing")
	}
	t.Logf("%d collapses", db.Collapsed())
}

// The timestamp ceiling bounds every timestamp applied, survives a reopen, never falls,
// and is unknown for a store that holds keys but no ceiling file (written before kura
// kept one).
func TestTimestampCeilingBoundsWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	open := func() *DB {
		t.Helper()
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	apply := func(db *DB, ts int64, deleted int64) {
		t.Helper()
		m := row.Mutation{Key: []byte("k"), Row: row.Row{Deleted: deleted, Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: ts}}}}
		if err := db.Apply([]row.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	db := open()
	if got := db.TimestampCeiling(); got != 0 {
		t.Fatalf("an empty store's ceiling is %d, want 0", got)
	}
	apply(db, 1_000, 0)
	c1 := db.TimestampCeiling()
	if c1 < 1_000 {
		t.Fatalf("ceiling %d after a cell at 1000", c1)
	}
	apply(db, 10, 5_000_000_000) // a row tombstone far above the cell
	c2 := db.TimestampCeiling()
	if c2 < 5_000_000_000 {
		t.Fatalf("ceiling %d after a row tombstone at 5e9", c2)
	}
	apply(db, 20, 0) // older: no change
	if got := db.TimestampCeiling(); got != c2 {
		t.Fatalf("ceiling %d after an older write, want %d", got, c2)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open()
	if got := db.TimestampCeiling(); got != c2 {
		t.Fatalf("ceiling %d after reopening, want %d", got, c2)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ceilingFileName)); err != nil {
		t.Fatal(err)
	}
	db = open()
	defer db.Close()
	if got := db.TimestampCeiling(); got != math.MaxInt64 {
		t.Fatalf("a store with keys and no ceiling file has ceiling %d, want unknown (MaxInt64)", got)
	}
	apply(db, 30, 0)
	if got := db.TimestampCeiling(); got != math.MaxInt64 {
		t.Fatalf("an unknown ceiling became %d", got)
	}
}
