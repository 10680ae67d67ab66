package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The checks in this file cover engine.RangeDeleter; an engine without it skips them.

// rangeChecks lists the contract of engine.RangeDeleter.
func rangeChecks() []check {
	return []check{
		{"DeleteRangeDeletesExactlyTheRange", checkDeleteRange},
		{"DeleteRangeLeavesNothingToShadowLaterWrites", checkWritesAfterDeleteRange},
		{"IteratorOpenedBeforeDeleteRangeKeepsItsSnapshot", checkIteratorBeforeDeleteRange},
		{"DeleteRangeRejectsInvertedRangeAndClosedEngine", checkDeleteRangeErrors},
		{"DeleteRangeCountsRowsOut", checkDeleteRangeStats},
		{"DeleteRangeDuringWritesDeletesEachRowAtAnInstant", checkDeleteRangeConcurrentWrites},
	}
}

// RunDeleteRange checks that f's engine keeps engine.RangeDeleter's contract, one sub-test
// per behaviour (RunConformance runs them too); it fails if the engine does not have it.
func RunDeleteRange(t *testing.T, f Factory) {
	e := openEngine(t, f, t.TempDir(), suiteOptions(NewManualClock(StartMicros)))
	_, ok := e.(engine.RangeDeleter)
	closeQuietly(t, e)
	if !ok {
		t.Fatalf("%s: not an engine.RangeDeleter", f.Name)
	}
	for _, c := range rangeChecks() {
		t.Run(c.name, func(t *testing.T) { c.fn(t, f) })
	}
}

// rangeDeleter returns fx's engine as an engine.RangeDeleter, or skips the check.
func (fx *fixture) rangeDeleter() engine.RangeDeleter {
	fx.t.Helper()
	d, ok := fx.e.(engine.RangeDeleter)
	if !ok {
		fx.t.Skipf("%s: not an engine.RangeDeleter", fx.f.Name)
	}
	return d
}

func (fx *fixture) deleteRange(lo, hi []byte) {
	fx.t.Helper()
	if err := fx.rangeDeleter().DeleteRange(lo, hi); err != nil {
		fx.t.Fatalf("%s: delete range [%s, %s) (%s): %v", fx.f.Name, fmtBound(lo), fmtBound(hi), fx.state, err)
	}
}

// rangeKeys are the keys checkDeleteRange stores: "k000" to "k019", the keys just after
// "k004" and "k007" in byte order, and keys past every "k..." (one of row.MaxKeySize bytes
// of 0xff, the last key any engine can hold).
func rangeKeys() []string {
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("k%03d", i))
		if i == 4 || i == 7 {
			keys = append(keys, fmt.Sprintf("k%03d\x00", i))
		}
	}
	return append(keys, "z", string(bytes.Repeat([]byte{0xff}, row.MaxKeySize)))
}

// rangeRow is what checkDeleteRange writes under key: a cell written before a Flush and
// one after, so that the rows lie both in the engine's on-disk form and in its write
// buffer; "k012" is a row tombstone alone, which Get reports as found until the row is
// deleted physically.
func rangeRow(key string) row.Row {
	if key == "k012" {
		return row.Row{Deleted: StartMicros + 5}
	}
	return row.Row{Cells: []row.Cell{cell("a", "flushed "+key[:min(len(key), 8)], StartMicros+1),
		cell("b", "buffered", StartMicros+2)}}
}

// checkDeleteRange is the table test of DeleteRange's bounds: rows in [lo, hi) are gone
// from Get and from iterators (tombstoned rows too), the rows around them stay (just below
// lo, at hi, and everything past the range), in every state: as deleted, after Flush and
// after Close and Open. The rows were read before the delete, so that a row cache holds
// them.
func checkDeleteRange(t testing.TB, f Factory) {
	kb := func(s string) []byte { return []byte(s) }
	for _, c := range []struct {
		name   string
		lo, hi []byte
	}{
		{"middle", kb("k005"), kb("k010")},
		{"bounds-between-keys", kb("k004\x00"), kb("k007\x00")},
		{"nil-lo", nil, kb("k003")},
		{"nil-hi", kb("k017"), nil},
		{"everything", nil, nil},
		{"empty-lo", kb(""), kb("k001")},
		{"lo-equals-hi", kb("k005"), kb("k005")},
		{"no-key-inside", kb("k005a"), kb("k005b")},
		{"holds-the-tombstoned-row", kb("k011"), kb("k013")},
		{"past-every-key", kb("\xff\xff\xff"), nil},
	} {
		name := fmt.Sprintf("[%s,%s)", fmtBound(c.lo), fmtBound(c.hi))
		fx := newFixture(t, f)
		d := fx.rangeDeleter()
		keys := rangeKeys()
		for _, k := range keys {
			r := rangeRow(k)
			if len(r.Cells) > 0 {
				fx.apply(row.Mutation{Key: kb(k), Row: row.Row{Cells: r.Cells[:1]}})
			} else {
				fx.apply(row.Mutation{Key: kb(k), Row: r})
			}
		}
		fx.flush()
		var want []kv
		for _, k := range keys {
			if r := rangeRow(k); len(r.Cells) > 1 {
				fx.apply(row.Mutation{Key: kb(k), Row: row.Row{Cells: r.Cells[1:]}})
			}
			fx.get(kb(k)) // fills a row cache
			if !inRange(kb(k), c.lo, c.hi) {
				want = append(want, kv{key: kb(k), row: rangeRow(k)})
			}
		}
		if err := d.DeleteRange(c.lo, c.hi); err != nil {
			t.Fatalf("%s %s: delete range: %v", f.Name, c.name, err)
		}
		fx.inEveryState(func() {
			for _, k := range keys {
				if inRange(kb(k), c.lo, c.hi) {
					fx.expectMissing(k)
				} else {
					fx.expect(k, rangeRow(k))
				}
			}
			got, err := scan(fx.e, nil, nil)
			if err != nil {
				t.Fatalf("%s %s: scan (%s): %v", f.Name, name, fx.state, err)
			}
			if diff := diffScans(got, want); diff != "" {
				t.Errorf("%s: scan after delete range %s (%s): %s", f.Name, name, fx.state, diff)
			}
		})
		closeQuietly(t, fx.e)
	}
}

func inRange(key, lo, hi []byte) bool {
	return (lo == nil || bytes.Compare(key, lo) >= 0) && (hi == nil || bytes.Compare(key, hi) < 0)
}

// checkWritesAfterDeleteRange: the deletion leaves nothing behind to shadow later writes,
// so a write into the range after it is read back even with timestamps older than the
// deleted cells and row tombstone (a delete by tombstones would hide it).
func checkWritesAfterDeleteRange(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	fx.apply(mut("r/1", cell("a", "old", StartMicros+100)), rowDelete("r/2", StartMicros+100),
		mut("r/3", cell("a", "outside", StartMicros+100)))
	fx.flush()
	fx.deleteRange([]byte("r/1"), []byte("r/3"))
	late := mut("r/1", cell("b", "late", StartMicros+1))
	fx.apply(late, mut("r/2", cell("a", "late", StartMicros+1)))
	fx.inEveryState(func() {
		fx.expect("r/1", late.Row)
		fx.expect("r/2", row.Row{Cells: []row.Cell{cell("a", "late", StartMicros+1)}})
		fx.expect("r/3", row.Row{Cells: []row.Cell{cell("a", "outside", StartMicros+100)}})
	})
}

// checkIteratorBeforeDeleteRange: an iterator opened before DeleteRange walks its
// snapshot, deleted rows included; one opened after does not see them.
func checkIteratorBeforeDeleteRange(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	var all []kv
	for i := range 30 {
		m := mut(fmt.Sprintf("s/%02d", i), cell("a", fmt.Sprint(i), StartMicros+1))
		fx.apply(m)
		all = append(all, kv{key: m.Key, row: m.Row})
		if i == 15 {
			fx.flush()
		}
	}
	before, err := fx.e.NewIterator(nil, nil)
	if err != nil {
		t.Fatalf("%s: new iterator: %v", f.Name, err)
	}
	if !before.Next() { // started before the delete, finished after it
		t.Fatalf("%s: iterator found no row: %v", f.Name, before.Err())
	}
	r := before.Row()
	first := kv{key: bytes.Clone(before.Key()), row: r.Clone()}
	fx.deleteRange([]byte("s/05"), []byte("s/25"))
	rest, err := collect(before)
	if err != nil {
		t.Fatalf("%s: iterator opened before delete range: %v", f.Name, err)
	}
	if diff := diffScans(append([]kv{first}, rest...), all); diff != "" {
		t.Errorf("%s: iterator opened before delete range: %s", f.Name, diff)
	}
	after, err := scan(fx.e, nil, nil)
	if err != nil {
		t.Fatalf("%s: scan: %v", f.Name, err)
	}
	if diff := diffScans(after, append(all[:5:5], all[25:]...)); diff != "" {
		t.Errorf("%s: iterator opened after delete range: %s", f.Name, diff)
	}
}

// checkDeleteRangeErrors: an inverted range is invalid and deletes nothing; after Close
// the call fails with ErrClosed.
func checkDeleteRangeErrors(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	d := fx.rangeDeleter()
	fx.apply(mut("e/1", cell("a", "x", StartMicros)))
	if err := d.DeleteRange([]byte("e/2"), []byte("e/0")); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("%s: delete range [e/2, e/0): %v, want ErrInvalid", f.Name, err)
	}
	fx.expect("e/1", row.Row{Cells: []row.Cell{cell("a", "x", StartMicros)}})
	if err := fx.e.Close(); err != nil {
		t.Fatalf("%s: close: %v", f.Name, err)
	}
	if err := d.DeleteRange(nil, nil); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("%s: delete range after Close: %v, want ErrClosed", f.Name, err)
	}
}

// checkDeleteRangeStats: an engine whose row count is exact counts the deleted rows out.
func checkDeleteRangeStats(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	fx.rangeDeleter()
	for i := range 100 {
		fx.apply(mut(fmt.Sprintf("n/%03d", i), cell("a", "x", StartMicros)))
	}
	fx.deleteRange([]byte("n/010"), []byte("n/050"))
	fx.flush() // a write buffer's rows count exactly once in the tree
	s := fx.e.Stats()
	if !s.Exact {
		t.Skipf("%s: the row count is an estimate", f.Name)
	}
	if s.RowsEstimate != 60 {
		t.Errorf("%s: %d rows after deleting 40 of 100, want 60", f.Name, s.RowsEstimate)
	}
}

// checkDeleteRangeConcurrentWrites: writers keep adding a cell per generation to keys
// inside and outside a range that is deleted again and again meanwhile (run it under
// -race). Afterwards every key outside holds every generation, and every key inside the
// generations written after some instant: a contiguous run ending at the last one (the
// contract: a row ends as if deleted at one instant).
func checkDeleteRangeConcurrentWrites(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.Durability = engine.Periodic })
	d := fx.rangeDeleter()
	const writers, keysEach, generations = 4, 4, 60
	lo, hi := []byte("c/in/"), []byte("c/in0")
	key := func(w, k int) string {
		where := "out"
		if k%2 == 0 {
			where = "in"
		}
		return fmt.Sprintf("c/%s/%d/%d", where, w, k)
	}
	errs := make(chan error, writers+1)
	// The deleter deletes the range once per batch written, at most; every writer waits
	// for a deletion every few generations, so that deletions and writes interleave
	// whatever the engines' speeds.
	progress := make(chan struct{}, 1)
	var mu sync.Mutex
	next := make(chan struct{}) // closed when the next deletion has returned
	stop, deleterDone := make(chan struct{}), make(chan struct{})
	waitForDeletion := func() {
		mu.Lock()
		ch := next
		mu.Unlock()
		select { // asked after ch was taken: a deletion that starts later closes ch
		case progress <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-deleterDone:
		}
	}
	deletes := 0
	var wg, dwg sync.WaitGroup
	dwg.Go(func() {
		defer close(deleterDone)
		for {
			select {
			case <-stop:
				return
			case <-progress:
			}
			if err := d.DeleteRange(lo, hi); err != nil {
				errs <- err
				return
			}
			deletes++
			mu.Lock()
			close(next)
			next = make(chan struct{})
			mu.Unlock()
		}
	})
	for w := range writers {
		wg.Go(func() {
			for g := range generations {
				batch := make([]row.Mutation, keysEach)
				for k := range batch {
					batch[k] = mut(key(w, k), cell(fmt.Sprintf("g%03d", g), "x", StartMicros+int64(g)))
				}
				if err := fx.e.Apply(batch); err != nil {
					errs <- err
					return
				}
				select {
				case progress <- struct{}{}:
				default:
				}
				if g%6 == 5 {
					waitForDeletion()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	dwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%s: %v", f.Name, err)
	}
	t.Logf("%s: %d range deletions during the writes", f.Name, deletes)
	fx.inEveryState(func() {
		for w := range writers {
			for k := range keysEach {
				got := fx.get([]byte(key(w, k)))
				if msg := generationRun(got, generations, inRange([]byte(key(w, k)), lo, hi)); msg != "" {
					t.Errorf("%s: %s (%s): %s", f.Name, key(w, k), fx.state, msg)
				}
			}
		}
	})
}

// generationRun returns "" if got holds one cell for each generation from some j to n-1,
// j being 0 unless partial.
func generationRun(got getResult, n int, partial bool) string {
	cells := got.row.Cells
	if !got.found {
		cells = nil
	}
	j := n - len(cells)
	if j < 0 || (!partial && j != 0) || got.row.Deleted != 0 {
		return fmt.Sprintf("holds %s, want a run of generations ending at %d (all of them: %t)", FormatRow(got.row), n-1, !partial)
	}
	for i, c := range cells {
		if string(c.Name) != fmt.Sprintf("g%03d", j+i) {
			return fmt.Sprintf("holds %s: not a run of generations ending at %d", FormatRow(got.row), n-1)
		}
	}
	return ""
}
