package tiered

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
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

func openCapturing(t testing.TB) (*DB, *failingStoredReads, map[string]Captured) {
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
	hook := func(key, stored []byte, token uint64) { captured[string(key)] = Captured{Stored: stored, Token: token} }
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

// Moving other keys of a stripe does not spoil a capture: only writes do. (Moves used to
// count as writes, and promotions, which mark thousands of keys a second, read most
// captured rows from the slow device again.)
func TestCaptureSurvivesMovesOfItsStripe(t *testing.T) {
	db, slow, captured := openCapturing(t)
	var same []string // keys of one stripe
	for i := 0; len(same) < 3; i++ {
		k := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		if stripeOf([]byte(k)) == stripeOf([]byte("kaaa")) {
			same = append(same, k)
		}
	}
	for _, k := range same {
		put(t, db, k, "a", 1)
	}
	for _, k := range same {
		cellsOf(t, db, k)
	}
	// The first key moves to the fast tier and back, the second to the fast tier, in
	// separate moves; the third is then promoted from its capture.
	if err := db.Move([][]byte{[]byte(same[0])}, Fast); err != nil {
		t.Fatal(err)
	}
	if err := db.Move([][]byte{[]byte(same[0])}, Slow); err != nil {
		t.Fatal(err)
	}
	slow.fail = true
	if err := db.moveCaptured([][]byte{[]byte(same[1])}, captured); err != nil {
		t.Fatalf("a promotion after moves of other keys in its stripe read the slow tier: %v", err)
	}
	if err := db.moveCaptured([][]byte{[]byte(same[2])}, captured); err != nil {
		t.Fatalf("the second promotion of a stripe read the slow tier: %v", err)
	}
	slow.fail = false
	for _, k := range same {
		if cellsOf(t, db, k) != 1 {
			t.Errorf("%s lost its cell", k)
		}
	}
	// A write to a key of the stripe in another write slot leaves a capture alone; a write
	// to a key of the same slot spoils it: the slot is all a capture checks.
	slot := slotOf([]byte(same[0]))
	other := keyWhere(t, func(k string) bool {
		return stripeOf([]byte(k)) == stripeOf([]byte(same[0])) && slotOf([]byte(k)) != slot
	})
	sameSlot := keyWhere(t, func(k string) bool { return k != same[0] && slotOf([]byte(k)) == slot })
	put(t, db, sameSlot, "a", 1)
	cellsOf(t, db, same[0])
	put(t, db, other, "b", 2)
	slow.fail = true
	if err := db.moveCaptured([][]byte{[]byte(same[0])}, captured); err != nil {
		t.Errorf("a promotion after a write to another slot of its stripe read the slow tier: %v", err)
	}
	slow.fail = false
	if err := db.Move([][]byte{[]byte(same[0])}, Slow); err != nil {
		t.Fatal(err)
	}
	cellsOf(t, db, same[0])
	put(t, db, sameSlot, "b", 2)
	slow.fail = true
	if err := db.moveCaptured([][]byte{[]byte(same[0])}, captured); !errors.Is(err, errStoredRead) {
		t.Errorf("a promotion after a write to its slot: %v, want it to read the slow tier", err)
	}
	slow.fail = false
	if cellsOf(t, db, same[0]) != 1 || cellsOf(t, db, sameSlot) != 2 {
		t.Error("a row lost a cell")
	}
}

// keyWhere returns the first key of the form "w<n>" that ok accepts.
func keyWhere(t *testing.T, ok func(string) bool) string {
	t.Helper()
	for i := range 1 << 22 {
		if k := fmt.Sprint("w", i); ok(k) {
			return k
		}
	}
	t.Fatal("no key of the kind wanted")
	return ""
}

// A window's decision leaves the rows waiting for promotion on read to it: they move
// from their captures moments later, where the decision would read each from the slow
// device, one after another, holding up every promotion behind it.
func TestDecisionLeavesQueuedRowsToPromotionOnRead(t *testing.T) {
	db, slow, captured := openCapturing(t)
	now := time.Unix(1000, 0)
	put(t, db, "q", "a", 1)
	put(t, db, "s", "a", 1)
	tr := access.New(access.Config{Window: 10 * time.Second})
	for _, k := range []string{"q", "s"} {
		cellsOf(t, db, k) // captures; the tracker below counts on the test's clock
		tr.Record([]byte(k), now)
	}
	db.opts.Tracker = tr
	m, err := NewMigrator(db, MigratorConfig{BudgetBytes: 1 << 20, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	m.read["q"] = captured["q"] // queued by a read; "s" was dropped (a full queue)
	now = now.Add(10 * time.Second)
	if _, err := m.Step(now); err != nil {
		t.Fatal(err)
	}
	if db.HomeOf([]byte("s")) != Fast || db.HomeOf([]byte("q")) != Slow {
		t.Fatalf("after the decision s is on the %s tier and q on the %s, want fast and slow (queued)", db.HomeOf([]byte("s")), db.HomeOf([]byte("q")))
	}
	slow.fail = true
	if err := m.promoteRead(now); err != nil {
		t.Fatalf("promotion on read of q: %v", err)
	}
	slow.fail = false
	if db.HomeOf([]byte("q")) != Fast {
		t.Errorf("q on the %s tier after promotion on read", db.HomeOf([]byte("q")))
	}
}

// A row queued by a read is promoted even when the drain comes windows later (a starved
// process): the read that queued it counts, though the tracker's windows have rolled past
// it.
func TestLateDrainStillPromotesARowReadOnce(t *testing.T) {
	db, _, captured := openCapturing(t)
	now := time.Unix(1000, 0)
	put(t, db, "late", "a", 1)
	cellsOf(t, db, "late")
	tr := access.New(access.Config{Window: 200 * time.Millisecond})
	tr.Record([]byte("late"), now)
	db.opts.Tracker = tr
	m, err := NewMigrator(db, MigratorConfig{BudgetBytes: 1 << 20, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	m.read["late"] = captured["late"]
	later := now.Add(time.Second) // five windows on: Count and Recent have forgotten the read
	if tr.Count([]byte("late"), later) != 0 || tr.Recent([]byte("late"), later) != 0 {
		t.Fatal("the tracker still counts the read five windows on; the test needs it forgotten")
	}
	if err := m.promoteRead(later); err != nil {
		t.Fatal(err)
	}
	if db.HomeOf([]byte("late")) != Fast {
		t.Errorf("a row read once and drained five windows later is on the %s tier, want fast", db.HomeOf([]byte("late")))
	}
}

// While promotion on read runs, the window's decision promotes nothing: a hot row that
// missed the read queue waits for its next read (whose capture spares the slow device)
// instead of being read from the slow tier by the decision. Once the budget is full, the
// decision offers its lowest-scored rows, and that next read swaps.
func TestDecisionLeavesPromotionToReads(t *testing.T) {
	db, _, _ := openCapturing(t)
	now := time.Unix(1000, 0)
	for _, k := range []string{"f", "s"} {
		put(t, db, k, "a", 1)
	}
	tr := access.New(access.Config{Window: 10 * time.Second})
	db.opts.Tracker = tr
	if err := db.Move([][]byte{[]byte("f")}, Fast); err != nil {
		t.Fatal(err)
	}
	rowBytes := db.FastRowBytes()
	for i := range 5 {
		tr.Record([]byte("s"), now.Add(time.Duration(i)*time.Millisecond)) // dropped from the read queue
	}
	step := func(budget int64) *Migrator {
		t.Helper()
		m, err := NewMigrator(db, MigratorConfig{BudgetBytes: budget, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		m.started.Store(true) // as Start does, without its goroutines: the test steps by hand
		if _, err := m.Step(now.Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	step(10 * rowBytes)
	if db.HomeOf([]byte("s")) != Slow {
		t.Fatal("the decision promoted s while the budget had room: promotion on read's job")
	}
	m := step(rowBytes) // full with f, which nobody read: offered, not yet moved
	if db.HomeOf([]byte("s")) != Slow || len(m.pool) != 1 || m.pool[0].Key != "f" {
		t.Fatalf("with the budget full, s is on the %s tier and the decision offers %+v, want slow and f", db.HomeOf([]byte("s")), m.pool)
	}
	m.noteRead([]byte("s"), nil, 0) // s is read again
	if err := m.promoteRead(now.Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if db.HomeOf([]byte("s")) != Fast || db.HomeOf([]byte("f")) != Slow {
		t.Fatalf("after s's read, s is on the %s tier and f on the %s, want a swap", db.HomeOf([]byte("s")), db.HomeOf([]byte("f")))
	}
}

// Writes that replace rows race their promotions, demotions and each other, over keys
// that share write slots, with timestamps out of order (some far ahead of the others):
// whatever is captured and moved, every key reads at the end, and after a reopen, as the
// merge of all that was written to it. row.Merge is commutative, so that merge does not
// depend on the order the writes landed in.
func TestWriteCapturesRacingMovesLoseNothing(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	open := func() *DB {
		db, err := Open(filepath.Join(dir, "fast"), filepath.Join(dir, "slow"), Options{
			Tracker: access.New(access.Config{Window: time.Hour}), CountWrites: true})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	db.gate.roll(db.opts.Clock(), time.Hour)
	db.gate.open.Store(true) // writes count from the start: the window never rolls

	// 64 keys in 16 write slots, so that writes to one key race writes to its slot's
	// others.
	var keys []string
	perSlot := map[int]int{}
	for i := 0; len(keys) < 64; i++ {
		k := fmt.Sprint("key", i)
		sl := slotOf([]byte(k))
		if perSlot[sl] < 4 && (perSlot[sl] > 0 || len(perSlot) < 16) {
			perSlot[sl]++
			keys = append(keys, k)
		}
	}
	var mu sync.Mutex
	captured := map[string]Captured{}
	var captures atomic.Int64
	hook := func(key, stored []byte, token uint64) {
		captures.Add(1)
		mu.Lock()
		captured[string(key)] = Captured{Stored: stored, Token: token, Written: true}
		mu.Unlock()
	}
	db.slowWrite.Store(&hook)
	stop := make(chan struct{})
	var movers sync.WaitGroup
	movers.Add(2)
	go func() { // promotion of what writes captured, as the migrator's drain does
		defer movers.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			queued := captured
			captured = map[string]Captured{}
			mu.Unlock()
			var ks [][]byte
			for k := range queued {
				ks = append(ks, []byte(k))
			}
			if err := db.moveCaptured(ks, queued); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // demotions of random keys
		defer movers.Done()
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			var fast [][]byte
			for _, k := range keys {
				if db.HomeOf([]byte(k)) == Fast && rng.IntN(4) == 0 {
					fast = append(fast, []byte(k))
				}
			}
			if err := db.Move(fast, Slow); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())  // recent: no tombstone is past the grace period
	written := make([][]row.Mutation, 4) // per writer
	var writers sync.WaitGroup
	for w := range written {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w+2)))
			for i := range 400 {
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				ts := clock.Add(1)
				switch rng.IntN(8) {
				case 0:
					ts += 50 // ahead of the others
				case 1:
					ts -= 50 // behind
				}
				var r row.Row
				switch rng.IntN(4) {
				case 0: // a value added to the row
					r.Cells = []row.Cell{{Name: []byte(fmt.Sprint("c", rng.IntN(3))), Value: []byte(fmt.Sprint(w, ".", i)), Timestamp: ts}}
				case 1: // a delete
					r.Deleted = ts
				default: // a SET
					r = row.Row{Deleted: ts - 1, Cells: []row.Cell{{Name: []byte("v"), Value: []byte(fmt.Sprint(w, ".", i)), Timestamp: ts}}}
				}
				m := row.Mutation{Key: []byte(keys[rng.IntN(len(keys))]), Row: r}
				if err := db.Apply([]row.Mutation{m}); err != nil {
					t.Error(err)
					return
				}
				written[w] = append(written[w], m)
			}
		}()
	}
	writers.Wait()
	close(stop)
	movers.Wait()
	if captures.Load() == 0 || db.moved[Fast].Load() == 0 {
		t.Fatalf("%d writes captured their rows and %d rows moved to the fast tier: the race was not run", captures.Load(), db.moved[Fast].Load())
	}
	t.Logf("%d captures, %d rows promoted, %d demoted", captures.Load(), db.moved[Fast].Load(), db.moved[Slow].Load())

	want := map[string]row.Row{}
	for _, ms := range written {
		for _, m := range ms {
			want[string(m.Key)] = row.Merge(want[string(m.Key)], m.Row)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, k := range keys {
			got, found, err := db.Get([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			exp, expFound, _ := db.readView([]byte(k), want[k])
			if found != expFound || !reflect.DeepEqual(got.Visible(1<<62), exp.Visible(1<<62)) {
				t.Errorf("%s: %s reads %v (found %v), want %v (found %v)", when, k, got, found, exp, expFound)
			}
		}
	}
	check("after the writes")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open()
	defer db.Close()
	check("after a reopen")
}

// A row a read captured before DeleteRange is not promoted back after it: the deletion
// spoils every capture, and the promotion finds nothing to move.
func TestDeleteRangeSpoilsCapturedRows(t *testing.T) {
	db, _, captured := openCapturing(t)
	put(t, db, "k", "a", 1)
	if cellsOf(t, db, "k") != 1 || captured["k"].Stored == nil {
		t.Fatalf("the read captured nothing: %+v", captured["k"])
	}
	if err := db.DeleteRange([]byte("k"), []byte("l")); err != nil {
		t.Fatal(err)
	}
	if err := db.moveCaptured([][]byte{[]byte("k")}, captured); err != nil {
		t.Fatal(err)
	}
	if r, found, err := db.Get([]byte("k")); err != nil || found {
		t.Fatalf("a row deleted after its capture came back with its promotion: %+v, %v", r, err)
	}
}
