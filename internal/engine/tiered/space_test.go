package tiered_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/row"
)

// TestAFullFastTierSpillsWritesToTheSlowTier: a write to a row on a fast tier whose
// device refuses writes for lack of space moves the row to the slow tier and lands there,
// with the row whole; other rows stay where they are.
func TestAFullFastTierSpillsWritesToTheSlowTier(t *testing.T) {
	const (
		k1Row = `{"a"@1700000000000001="1" "b"@1700000000000002="new"}`
		k2Row = `{"a"@1700000000000001="2"}`
	)
	fx := newFixture(t)
	fx.apply("k1", cell("a", "1", 1))
	fx.apply("k2", cell("a", "2", 1))
	if err := fx.move(tiered.Fast, "k1", "k2"); err != nil {
		t.Fatal(err)
	}
	fx.tiers[tiered.Fast].full.Store(true)

	fx.apply("k1", cell("b", "new", 2))
	fx.expect("k1", k1Row)
	if h := fx.db.HomeOf([]byte("k1")); h != tiered.Slow {
		t.Errorf("k1's home after a write the fast tier refused: %s, want slow", h)
	}
	if got := fx.stored(tiered.Fast, "k1"); got != "missing" {
		t.Errorf("fast tier still holds k1: %s", got)
	}
	if got := fx.stored(tiered.Slow, "k1"); got != k1Row {
		t.Errorf("slow tier holds k1 as %s", got)
	}
	if h := fx.db.HomeOf([]byte("k2")); h != tiered.Fast {
		t.Errorf("k2, not written, moved to the %s tier", h)
	}
	if n := fx.db.Spilled(); n != 1 {
		t.Errorf("Spilled = %d, want 1", n)
	}
	if err := fx.db.Check(); err != nil {
		t.Fatal(err)
	}

	// A slow tier that refuses too: the write fails with ErrNoSpace and applies nothing.
	fx.tiers[tiered.Slow].full.Store(true)
	err := fx.db.Apply([]row.Mutation{{Key: []byte("k2"), Row: row.Row{Cells: []row.Cell{cell("b", "lost", 3)}}}})
	if !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("write with both tiers full = %v, want ErrNoSpace", err)
	}
	fx.tiers[tiered.Slow].full.Store(false)
	fx.tiers[tiered.Fast].full.Store(false)
	fx.expect("k2", k2Row)
	fx.reopen()
	fx.expect("k1", k1Row)
	fx.expect("k2", k2Row)
}

// TestNoPromotionToAFullFastTier: rows read often stay on the slow tier while the fast
// tier's device is past its reserve, whatever the budget, and move once it has room.
func TestNoPromotionToAFullFastTier(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second, HistoryWindows: 8})
	fx := newFixtureWith(t, tr)
	fx.apply("k0", cell("v", "0123456789", 1))
	fx.apply("k1", cell("v", "0123456789", 1))
	m := fx.sizedMigrator("k0", 10) // room for nine more rows
	step := func() {
		t.Helper()
		for range 3 {
			mustGet(t, fx.db, "k1")
		}
		fx.clk.Advance(10 * time.Second)
		if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	fx.tiers[tiered.Fast].full.Store(true)
	step()
	if h := fx.db.HomeOf([]byte("k1")); h != tiered.Slow {
		t.Fatalf("k1 promoted to a fast tier with no room on its device (home %s)", h)
	}
	fx.tiers[tiered.Fast].full.Store(false)
	step()
	if h := fx.db.HomeOf([]byte("k1")); h != tiered.Fast {
		t.Fatalf("k1 not promoted once the fast device had room (home %s)", h)
	}
}

// TestAFastDeviceFoundShortCapsTheBudget: a decision that finds the fast device past its
// reserve caps the budget a twentieth below the rows on it, so that the lowest-scored rows
// leave; the cap changes at most once a minute, and rises back to the budget a twentieth
// at a time once the device has room. The budget as configured stays.
func TestAFastDeviceFoundShortCapsTheBudget(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second, HistoryWindows: 8})
	fx := newFixtureWith(t, tr)
	keys := make([]string, 20)
	value := strings.Repeat("v", 64<<10) // rows large beside the 1 MiB a promotion needs free
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
		fx.apply(keys[i], cell("v", value, 1))
	}
	m := fx.sizedMigrator(keys[0], 40) // the budget holds twice the rows there are
	if err := fx.move(tiered.Fast, keys[1:]...); err != nil {
		t.Fatal(err)
	}
	rowBytes := m.Budget() / 40
	for i, k := range keys { // k00 is never read, k19 read 19 times: scores in key order
		for range i {
			mustGet(t, fx.db, k)
		}
	}
	step := func(after time.Duration) {
		t.Helper()
		fx.clk.Advance(after)
		if _, err := m.Step(time.UnixMicro(fx.clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	onFast := func() (n int, lowest string) {
		for _, k := range keys {
			if fx.db.HomeOf([]byte(k)) == tiered.Fast {
				if n == 0 {
					lowest = k
				}
				n++
			}
		}
		return n, lowest
	}
	capRows := func() float64 {
		c, capped := m.DeviceCap()
		if !capped {
			return 0
		}
		return float64(c) / float64(rowBytes)
	}

	step(10 * time.Second) // room on the device: nothing moves
	if n, _ := onFast(); n != 20 || capRows() != 0 {
		t.Fatalf("with room on the device: %d rows on the fast tier, cap %.2f rows; want 20 and none", n, capRows())
	}
	flushes := fx.tiers[tiered.Fast].flushes.Load()
	fx.tiers[tiered.Fast].full.Store(true)
	step(10 * time.Second)
	if n, lowest := onFast(); n != 19 || lowest != "k01" || capRows() != 19 {
		t.Fatalf("device short: %d rows on the fast tier from %s, cap %.2f rows; want 19 from k01 (k00 demoted), cap 19", n, lowest, capRows())
	}
	// The demotion's deletions are flushed, so that compactions can give their space back.
	if f := fx.tiers[tiered.Fast].flushes.Load(); f != flushes+1 {
		t.Fatalf("the fast tier was flushed %d times after the cut, want once", f-flushes)
	}
	step(30 * time.Second) // still short, but within a minute of the cut: its room is not back yet
	if n, _ := onFast(); n != 19 || capRows() != 19 {
		t.Fatalf("30 s after the cut: %d rows, cap %.2f; want 19 and 19", n, capRows())
	}
	if f := fx.tiers[tiered.Fast].flushes.Load(); f != flushes+1 {
		t.Fatalf("the fast tier was flushed again without a cut (%d flushes)", f-flushes)
	}
	step(30 * time.Second) // a minute on, still short: cut again
	if n, lowest := onFast(); n != 18 || lowest != "k02" {
		t.Fatalf("a minute after the cut: %d rows on the fast tier from %s; want 18 from k02", n, lowest)
	}
	if got := capRows(); got < 18 || got >= 19 {
		t.Fatalf("cap after the second cut %.2f rows, want 18.05", got)
	}
	if m.Budget() != 40*rowBytes {
		t.Fatalf("Budget() = %d, want the configured %d", m.Budget(), 40*rowBytes)
	}

	// Room for a promotion and five rows, not for the rest of the budget: the cap rises a
	// twentieth a minute.
	fx.tiers[tiered.Fast].full.Store(false)
	fx.tiers[tiered.Fast].room.Store(1<<20 + 5*rowBytes)
	last := capRows()
	step(10 * time.Second)
	if c := capRows(); c != last {
		t.Fatalf("the cap rose from %.2f to %.2f rows within a minute of the cut", last, c)
	}
	for range 3 {
		step(time.Minute)
		if c := capRows(); c <= last || c > last*1.06 {
			t.Fatalf("with room for five rows, the cap went from %.2f to %.2f rows; want up a twentieth", last, c)
		}
		last = capRows()
	}
	// Room for the rest of the budget: lifted at once.
	fx.tiers[tiered.Fast].room.Store(0)
	step(10 * time.Second)
	if c := capRows(); c != 0 {
		t.Fatalf("with room for the whole budget the cap is still %.2f rows", c)
	}
	if err := fx.db.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestABudgetTheFastDeviceCannotHoldIsCappedFromTheStart: a migrator whose budget's rest
// does not fit the fast device's room caps the budget at the rows there and four fifths
// of the room; so does a budget raised past the device later.
func TestABudgetTheFastDeviceCannotHoldIsCappedFromTheStart(t *testing.T) {
	tr := access.New(access.Config{Window: 10 * time.Second, HistoryWindows: 8})
	fx := newFixtureWith(t, tr)
	fx.apply("k0", cell("v", strings.Repeat("v", 64<<10), 1))
	probe := fx.sizedMigrator("k0", 1) // measures a row, on a device with room
	rowBytes := probe.Budget()
	if _, capped := probe.DeviceCap(); capped {
		t.Fatal("capped on a device with room")
	}

	room := 100 * rowBytes
	fx.tiers[tiered.Fast].room.Store(room)
	m, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 400 * rowBytes})
	if err != nil {
		t.Fatal(err)
	}
	c, capped := m.DeviceCap()
	lo, hi := rowBytes+(room-1<<20)*4/5, rowBytes+room*4/5
	if !capped || c < lo || c > hi {
		t.Fatalf("DeviceCap() = %d, %v; want within [%d, %d]: the row there and four fifths of the room", c, capped, lo, hi)
	}
	if m.Budget() != 400*rowBytes || m.BudgetInForce() != c {
		t.Fatalf("Budget() = %d, BudgetInForce() = %d; want the configured %d and the cap %d", m.Budget(), m.BudgetInForce(), 400*rowBytes, c)
	}

	// Raised past the device on a running migrator: capped the same way.
	if err := probe.SetBudget(400 * rowBytes); err != nil {
		t.Fatal(err)
	}
	if c, capped := probe.DeviceCap(); !capped || c < lo || c > hi {
		t.Fatalf("after SetBudget past the device, DeviceCap() = %d, %v; want within [%d, %d]", c, capped, lo, hi)
	}
	// A budget the device holds is not capped.
	fit, err := tiered.NewMigrator(fx.db, tiered.MigratorConfig{BudgetBytes: 50 * rowBytes})
	if err != nil {
		t.Fatal(err)
	}
	if c, capped := fit.DeviceCap(); capped || fit.BudgetInForce() != 50*rowBytes {
		t.Fatalf("a budget of 50 rows on a device with room for 100: cap %d (%v), in force %d", c, capped, fit.BudgetInForce())
	}
}
