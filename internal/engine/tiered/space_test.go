package tiered_test

import (
	"errors"
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
