package tiered_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/row"
)

// The migrator follows the reads: the highest-scored rows in while the budget lasts, then
// a row scored more than twice as high as the lowest on the fast tier takes its place.
func TestMigratorPromotesTheMostReadRowsAndDisplacesCooledOnes(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second, HistoryWindows: 8})
	fx := newFixtureWith(t, tr)
	for i := range 10 {
		fx.apply(fmt.Sprintf("k%d", i), cell("v", "0123456789", 1))
	}
	// One row on the fast tier, so the migrator knows a row's size: the budget holds three.
	if err := fx.move(tiered.Fast, "k9"); err != nil {
		t.Fatal(err)
	}
	rowBytes := fx.db.TierStats()[tiered.Fast].MovedInBytes
	m, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 3 * rowBytes})
	if err != nil {
		t.Fatal(err)
	}
	read := func(key string, n int) {
		for range n {
			mustGet(t, fx.db, key)
		}
	}
	step := func() tiered.Decision {
		t.Helper()
		fx.clk.Advance(10 * time.Second) // into the next window: the one read is complete
		if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil {
			t.Fatal(err)
		}
		return m.Last()
	}
	homes := func() string { return fx.fastAmong(10) }

	read("k1", 9)
	read("k2", 5)
	read("k3", 3)
	read("k4", 1)
	d := step()
	if got, want := homes(), " k1 k2 k3"; got != want {
		t.Errorf("fast tier after the first window:%s, want%s", got, want)
	}
	// Scores age by an eighth a window, the window just ended included: k3's 3 reads
	// score 2.625.
	if d.Promoted != 3 || d.Demoted != 1 || d.Threshold != 2.625 {
		t.Errorf("decision %+v: want 3 promoted, 1 demoted (k9, unread), threshold 2.625 (the budget is full)", d)
	}

	// In 4096ths of a read: k1 32256-4032 = 28224, k2 17920+4096 = 22016-2752 = 19264,
	// k3 10752-1344 = 9408, k4 3584+8192 = 11776-1472 = 10304: k4 is not twice k3, so
	// nothing moves.
	read("k2", 1)
	read("k4", 2)
	d = step()
	if got, want := homes(), " k1 k2 k3"; got != want || d.Promoted+d.Demoted != 0 {
		t.Errorf("fast tier after the second window:%s, want%s unchanged (decision %+v)", got, want, d)
	}
	// k4: 10304+32768 = 43072-5384 = 37688, over twice k3's 9408-1176 = 8232: it takes
	// k3's place.
	read("k4", 8)
	d = step()
	if got, want := homes(), " k1 k2 k4"; got != want {
		t.Errorf("fast tier after the third window:%s, want%s", got, want)
	}
	if d.Promoted != 1 || d.Demoted != 1 || d.Threshold != (19264.0-2408)/4096 {
		t.Errorf("decision %+v: want 1 promoted, 1 demoted, threshold %v (k2's score, the lowest kept)", d, (19264.0-2408)/4096)
	}
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		fx.expect(k, `{"v"@1700000000000001="0123456789"}`)
	}
	st := fx.db.TierStats()
	if st[tiered.Fast].Reads == 0 || st[tiered.Slow].Reads == 0 {
		t.Errorf("reads per tier %d fast, %d slow: both served some", st[tiered.Fast].Reads, st[tiered.Slow].Reads)
	}
}

func TestMigratorNeedsATracker(t *testing.T) {
	fx := newFixture(t)
	if _, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 1}); err == nil {
		t.Error("a migrator over an engine that counts no reads was accepted")
	}
}

// The loop decides once per window, on the clock it is given.
func TestMigratorLoopStepsAtWindowRollOver(t *testing.T) {
	tr := access.New(access.Config{Window: 50 * time.Millisecond})
	fx := newFixtureWith(t, tr)
	fx.apply("hot", cell("v", "x", 1))
	m, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 1 << 20,
		Now: func() time.Time { return time.UnixMicro(fx.clk.Now()) }})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer m.Stop()
	mustGet(t, fx.db, "hot")
	fx.clk.Advance(50 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for fx.db.HomeOf([]byte("hot")) != tiered.Fast {
		if time.Now().After(deadline) {
			t.Fatal("the loop did not promote a row read in the last window")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Recent turns the counters sampled by the loop into the fast tier's share of reads and
// the migration traffic over a span.
func TestMigratorRecentRates(t *testing.T) {
	tr := access.New(access.Config{Window: 100 * time.Millisecond})
	fx := newFixtureWith(t, tr)
	fx.apply("hot", cell("v", "x", 1))
	fx.apply("cold", cell("v", "x", 1))
	m, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	if err := fx.move(tiered.Fast, "hot"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustGet(t, fx.db, "hot")
	}
	mustGet(t, fx.db, "cold")
	r := m.SinceOpen(opened, time.Now())
	if r.Reads != 4 || r.FastShare != 0.75 || r.MovedBytesPerSecond <= 0 {
		t.Errorf("since open: %+v, want 4 reads, 3/4 from the fast tier, some bytes moved", r)
	}
	// With no sample yet, the last minute is empty.
	if r := m.Recent(time.Minute, time.Now()); r.Reads != 0 || r.Over != 0 {
		t.Errorf("recent before any sample: %+v", r)
	}
	m.Start()
	defer m.Stop()
	time.Sleep(50 * time.Millisecond) // a few loop ticks (every 10ms) take samples
	mustGet(t, fx.db, "cold")
	if r := m.Recent(time.Minute, time.Now()); r.Reads != 1 || r.FastShare != 0 || r.Over <= 0 {
		t.Errorf("recent: %+v, want the one read since the first sample, from the slow tier", r)
	}
}

// While the budget has room, a row read from the slow tier moves to the fast one within
// moments, not at the window's end; once the budget is full, reads promote nothing more
// until a decision offers rows to displace (see the next test).
func TestMigratorPromotesOnReadWhileTheBudgetHasRoom(t *testing.T) {
	tr := access.New(access.Config{Window: time.Hour}) // no roll-over during the test
	fx := newFixtureWith(t, tr)
	for _, k := range []string{"a", "b", "c"} {
		fx.apply(k, cell("v", "0123456789", 1))
	}
	m := fx.sizedMigrator("c", 2)
	m.Start()
	defer m.Stop()
	mustGet(t, fx.db, "a")
	deadline := time.Now().Add(10 * time.Second)
	for fx.db.HomeOf([]byte("a")) != tiered.Fast {
		if time.Now().After(deadline) {
			t.Fatal("a row read from the slow tier was not promoted while the budget had room")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mustGet(t, fx.db, "b") // the budget (two rows) is full: b stays
	time.Sleep(300 * time.Millisecond)
	if fx.db.HomeOf([]byte("b")) != tiered.Slow || m.PromotedOnRead() != 1 {
		t.Errorf("b on the %s tier, %d promoted on read: want slow and 1", fx.db.HomeOf([]byte("b")), m.PromotedOnRead())
	}
}

// Once the budget is full and a decision has offered its lowest-scored rows, a row read
// from the slow tier takes the place of one that scores Displace times lower, within
// moments of the read, and the swap reads nothing more from the slow device: the row
// promoted is the one the read captured. A row scored high stays.
func TestMigratorSwapsOnReadOnceTheBudgetIsFull(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second})
	fx := newFixtureWith(t, tr)
	for _, k := range []string{"warm", "cold", "new", "other"} {
		fx.apply(k, cell("v", "0123456789", 1))
	}
	m := fx.sizedMigrator("cold", 2)
	if err := fx.move(tiered.Fast, "warm"); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		mustGet(t, fx.db, "warm")
	}
	fx.clk.Advance(10 * time.Second) // the reads of warm are a complete window
	m.Start()
	defer m.Stop()
	if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil { // offers cold, then warm
		t.Fatal(err)
	}
	home := func(k string) tiered.Tier { return fx.db.HomeOf([]byte(k)) }
	if home("warm") != tiered.Fast || home("cold") != tiered.Fast || home("new") != tiered.Slow {
		t.Fatalf("before the reads: warm %s, cold %s, new %s; want fast, fast, slow", home("warm"), home("cold"), home("new"))
	}

	slowReads := fx.tiers[tiered.Slow].storedReads.Load()
	mustGet(t, fx.db, "new") // read once: score 1 against cold's 0
	for deadline := time.Now().Add(10 * time.Second); home("new") != tiered.Fast; {
		if time.Now().After(deadline) {
			t.Fatal("a row read from the slow tier did not displace a cold one")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if home("cold") != tiered.Slow || home("warm") != tiered.Fast {
		t.Errorf("after the swap cold is on the %s tier and warm on the %s: want slow and fast", home("cold"), home("warm"))
	}
	if n := fx.tiers[tiered.Slow].storedReads.Load() - slowReads; n != 1 {
		t.Errorf("the read and the swap read the slow tier %d times, want 1 (the read's own)", n)
	}

	mustGet(t, fx.db, "other") // score 1 against warm's 4: not Displace (2) times higher
	time.Sleep(300 * time.Millisecond)
	if home("other") != tiered.Slow || home("warm") != tiered.Fast {
		t.Errorf("other on the %s tier, warm on the %s: want slow and fast", home("other"), home("warm"))
	}
	if m.PromotedOnRead() != 1 || m.DisplacedOnRead() != 1 {
		t.Errorf("%d promoted and %d displaced on read, want 1 and 1", m.PromotedOnRead(), m.DisplacedOnRead())
	}
	for _, k := range []string{"warm", "cold", "new", "other"} {
		if r, _ := mustGet(t, fx.db, k); len(r.Cells) != 1 || string(r.Cells[0].Value) != "0123456789" {
			t.Errorf("%s after the moves: %+v", k, r)
		}
	}
}

// With CountWrites, a row written often beside reads is hot like one read often: the
// window's decision promotes it. Once the migrator runs, writes that add cells to a row
// move nothing (their promotion would read the slow device): a written row moves at its
// next read, keeping every cell, as without CountWrites. (Writes that replace a row
// whole do move it: TestAWriteReplacingARowPromotesIt.)
func TestMigratorCountsWritesOnlyWhenAsked(t *testing.T) {
	for _, counting := range []bool{false, true} {
		t.Run(fmt.Sprintf("count writes %v", counting), func(t *testing.T) {
			tr := access.New(access.Config{Window: 10 * time.Second})
			fx := newFixtureCounting(t, tr, counting)
			fx.apply("sizer", cell("v", "0123456789", 1))
			m := fx.sizedMigrator("sizer", 4)
			fx.clk.Advance(10 * time.Second)
			// A window with reads beside the writes: from the next one on, writes count
			// (writeGate; TestTieredNodeCountsWritesWhenAsked shows that writes alone do not).
			mustGet(t, fx.db, "sizer")
			fx.apply("sizer", cell("v", "0123456789", 2))
			fx.clk.Advance(10 * time.Second)
			for i := range 3 {
				fx.apply("hot", cell("v", "0123456789", int64(2+i)))
			}
			mustGet(t, fx.db, "sizer") // so that writes still count in the next window
			fx.clk.Advance(10 * time.Second)
			if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil {
				t.Fatal(err)
			}
			wantHot := tiered.Slow
			if counting {
				wantHot = tiered.Fast
			}
			if got := fx.db.HomeOf([]byte("hot")); got != wantHot {
				t.Errorf("after a window with three writes of hot and one read of another row, hot is on the %s tier, want %s", got, wantHot)
			}

			// Writes that add cells move nothing once the migrator runs; the next read does.
			fx.apply("fresh", cell("a", "1", 2))
			m.Start()
			defer m.Stop()
			for i := range 3 {
				fx.apply("fresh", cell("b", "2", int64(3+i)))
			}
			time.Sleep(300 * time.Millisecond) // six drains of the promotion queue
			if got := fx.db.HomeOf([]byte("fresh")); got != tiered.Slow {
				t.Errorf("a row only written moved to the %s tier", got)
			}
			mustGet(t, fx.db, "fresh")
			deadline := time.Now().Add(10 * time.Second)
			for fx.db.HomeOf([]byte("fresh")) != tiered.Fast {
				if time.Now().After(deadline) {
					t.Fatal("a row read on the slow tier was not promoted while the budget had room")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if r, _ := mustGet(t, fx.db, "fresh"); len(r.Cells) != 2 {
				t.Errorf("fresh after its promotion: %+v, want both cells", r)
			}
		})
	}
}

// With CountWrites, a write that replaces a slow row whole (a SET: a value over a row
// tombstone a microsecond older) promotes it like a read, from the row it leaves, without
// reading the slow tier; the old cells do not come back. A write whose tombstone would
// not shadow a newer cell the slow tier holds for the key, a write that only adds a
// cell, and a delete promote nothing: their rows move at their next read, whole.
func TestAWriteReplacingARowPromotesIt(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second})
	fx := newFixtureCounting(t, tr, true)
	fx.apply("sizer", cell("v", "0123456789", 1))
	m := fx.sizedMigrator("sizer", 8)
	fx.apply("replaced", cell("old", "1", 2))
	fx.apply("newer", cell("late", "1", 500)) // a cell newer than the SET below
	fx.apply("added", cell("a", "1", 2))
	// A window with reads beside the writes, so that writes count in the next.
	mustGet(t, fx.db, "sizer")
	fx.clk.Advance(10 * time.Second)
	m.Start()
	defer m.Stop()

	set := func(key string, ts int64) {
		t.Helper()
		r := row.Row{Deleted: enginetest.StartMicros + ts - 1, Cells: []row.Cell{cell("v", "new", ts)}}
		if err := fx.db.Apply([]row.Mutation{{Key: []byte(key), Row: r}}); err != nil {
			t.Fatal(err)
		}
	}
	before := fx.tiers[tiered.Slow].storedReads.Load()
	set("replaced", 100)
	set("newer", 100)
	fx.apply("added", cell("b", "2", 100))
	if err := fx.db.Apply([]row.Mutation{{Key: []byte("sizer2"), Row: row.Row{Deleted: enginetest.StartMicros + 100}}}); err != nil {
		t.Fatal(err) // a delete of a row never written: nothing to promote
	}
	deadline := time.Now().Add(10 * time.Second)
	for fx.db.HomeOf([]byte("replaced")) != tiered.Fast {
		if time.Now().After(deadline) {
			t.Fatal("a row replaced by a write was not promoted while the budget had room")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // three drains more for the others
	if n := fx.tiers[tiered.Slow].storedReads.Load() - before; n != 0 {
		t.Errorf("the promotions read the slow tier %d times, want none", n)
	}
	if got := m.PromotedOnWrite(); got != 1 {
		t.Errorf("%d promoted on write, want 1", got)
	}
	at := func(ts int64) int64 { return enginetest.StartMicros + ts }
	fx.expect("replaced", fmt.Sprintf(`{deleted@%d "v"@%d="new"}`, at(99), at(100)))
	if got := fx.stored(tiered.Slow, "replaced"); got != "missing" {
		t.Errorf("the slow tier still holds the replaced row: %s", got)
	}
	for _, k := range []string{"newer", "added", "sizer2"} {
		if got := fx.db.HomeOf([]byte(k)); got != tiered.Slow {
			t.Errorf("%s moved to the %s tier on a write", k, got)
		}
	}
	// Their next reads promote them, whole.
	mustGet(t, fx.db, "newer")
	mustGet(t, fx.db, "added")
	for fx.db.HomeOf([]byte("newer")) != tiered.Fast || fx.db.HomeOf([]byte("added")) != tiered.Fast {
		if time.Now().After(deadline) {
			t.Fatal("rows read on the slow tier were not promoted while the budget had room")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fx.expect("newer", fmt.Sprintf(`{deleted@%d "late"@%d="1" "v"@%d="new"}`, at(99), at(500), at(100)))
	fx.expect("added", fmt.Sprintf(`{"a"@%d="1" "b"@%d="2"}`, at(2), at(100)))
}

// sizedMigrator moves sizer, a stored row, to the fast tier, so that the migrator knows a
// row's size, and returns a migrator on the fixture's clock whose budget holds rows such
// rows.
func (fx *fixture) sizedMigrator(sizer string, rows int64) *tiered.Migrator {
	fx.t.Helper()
	if err := fx.move(tiered.Fast, sizer); err != nil {
		fx.t.Fatal(err)
	}
	rowBytes := fx.db.TierStats()[tiered.Fast].MovedInBytes
	m, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: rows * rowBytes,
		Now: func() time.Time { return time.UnixMicro(fx.clk.Now()) }})
	if err != nil {
		fx.t.Fatal(err)
	}
	return m
}

// SetBudget changes the budget of a running migrator: lowered, the next decision demotes
// the lowest-scored rows over it; raised, rows read from the slow tier come in again.
func TestMigratorBudgetChangesWhileRunning(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second, HistoryWindows: 8})
	fx := newFixtureWith(t, tr)
	for i := range 4 {
		fx.apply(fmt.Sprintf("k%d", i), cell("v", "0123456789", 1))
	}
	m := fx.sizedMigrator("k0", 4)
	rowBytes := m.Budget() / 4
	if err := fx.move(tiered.Fast, "k1", "k2", "k3"); err != nil {
		t.Fatal(err)
	}
	step := func(reads map[string]int) {
		t.Helper()
		for k, n := range reads {
			for range n {
				mustGet(t, fx.db, k)
			}
		}
		fx.clk.Advance(10 * time.Second)
		if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	fast := func() string { return fx.fastAmong(4) }
	if err := m.SetBudget(-1); err == nil {
		t.Fatal("SetBudget(-1) accepted")
	}
	if err := m.SetBudget(2 * rowBytes); err != nil {
		t.Fatal(err)
	}
	step(map[string]int{"k2": 3, "k3": 2, "k1": 1})
	if got := fast(); got != " k2 k3" {
		t.Fatalf("fast tier with the budget lowered to two rows:%s, want k2 k3 (the most read)", got)
	}
	if m.Budget() != 2*rowBytes {
		t.Fatalf("Budget = %d, want %d", m.Budget(), 2*rowBytes)
	}
	if err := m.SetBudget(4 * rowBytes); err != nil {
		t.Fatal(err)
	}
	step(map[string]int{"k0": 3, "k1": 3})
	if got := fast(); got != " k0 k1 k2 k3" {
		t.Fatalf("fast tier with the budget raised to four rows:%s, want all four", got)
	}
}

// fastAmong lists, in order, which of the keys k0 to k<n-1> are at home on the fast tier,
// each after a space: " k1 k2".
func (fx *fixture) fastAmong(n int) string {
	s := ""
	for i := range n {
		if fx.db.HomeOf(fmt.Appendf(nil, "k%d", i)) == tiered.Fast {
			s += fmt.Sprintf(" k%d", i)
		}
	}
	return s
}
