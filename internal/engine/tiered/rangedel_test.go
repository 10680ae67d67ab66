package tiered_test

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/tiered"
)

// deletingTier is a hooked tier with the lsm engine's DeleteRange; a bare hookedTier has
// none, and the tiered engine removes a range's keys from it one by one.
type deletingTier struct{ *hookedTier }

func (d deletingTier) DeleteRange(lo, hi []byte) error {
	return d.Tierable.(engine.RangeDeleter).DeleteRange(lo, hi)
}

// DeleteRange deletes the range from both tiers, rows at home on the fast one and rows a
// failed move left in both included, and their keys leave the fast tier's placement and
// byte count; a later write of a deleted key goes to the slow tier. Both with tiers that
// have DeleteRange and with tiers that only have Remove.
func TestDeleteRangeEmptiesBothTiersAndTheFastPlacement(t *testing.T) {
	for _, rangeTiers := range []bool{true, false} {
		name := "tiers-with-delete-range"
		if !rangeTiers {
			name = "tiers-with-remove-only"
		}
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t)
			fx.rangeTiers = rangeTiers
			fx.reopen()
			for _, k := range []string{"a", "b", "c", "d", "e", "f", "x"} {
				fx.apply(k, cell("v", k, 1))
			}
			if err := fx.move(tiered.Fast, "c", "d", "x"); err != nil {
				t.Fatal(err)
			}
			broken := errors.New("test: remove refused")
			fx.tiers[tiered.Slow].setBeforeRemove(func([][]byte) error { return broken })
			if err := fx.move(tiered.Fast, "e"); !errors.Is(err, broken) {
				t.Fatalf("move of e with the slow tier refusing removals: %v", err)
			}
			fx.tiers[tiered.Slow].setBeforeRemove(nil)
			if fx.db.InBoth() != 1 {
				t.Fatalf("%d keys in both tiers, want e", fx.db.InBoth())
			}
			if err := fx.db.DeleteRange([]byte("b"), []byte("f")); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				for _, k := range []string{"b", "c", "d", "e"} {
					fx.expect(k, "missing")
					for _, tier := range []tiered.Tier{tiered.Fast, tiered.Slow} {
						if got := fx.stored(tier, k); got != "missing" {
							t.Errorf("%s: the %s tier still holds %s: %s", when, tier, k, got)
						}
					}
					if h := fx.db.HomeOf([]byte(k)); h != tiered.Slow {
						t.Errorf("%s: home of the deleted key %s = %s, want slow", when, k, h)
					}
				}
				fx.expectScan(`a {"v"@1700000000000001="a"}` + "\n" + `f {"v"@1700000000000001="f"}` + "\n" + `x {"v"@1700000000000001="x"}`)
				if st := fx.db.TierStats(); st[tiered.Fast].Keys != 1 || fx.db.InBoth() != 0 {
					t.Errorf("%s: %d fast keys and %d in both, want x alone and none", when, st[tiered.Fast].Keys, fx.db.InBoth())
				}
				if err := fx.db.Check(); err != nil {
					t.Errorf("%s: %v", when, err)
				}
			}
			check("after the deletion")
			fx.reopen()
			check("after reopen")
			fx.apply("c", cell("w", "later", 0)) // older than the deleted cell: nothing shadows it
			fx.expect("c", `{"w"@1700000000000000="later"}`)
			if got := fx.stored(tiered.Slow, "c"); got != `{"w"@1700000000000000="later"}` {
				t.Errorf("the write after the deletion is not on the slow tier: %s", got)
			}
		})
	}
}
