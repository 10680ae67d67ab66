package enginetest

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// check is one behaviour of the contract. It takes a testing.TB rather than a *testing.T
// so that the suite's own tests can run a check against a deliberately broken engine and
// observe the failure without failing themselves.
type check struct {
	name string
	fn   func(t testing.TB, f Factory)
}

// conformanceChecks lists the contract, behaviour by behaviour, in reading order.
func conformanceChecks() []check {
	return append([]check{
		{"NameAndRoleAreSet", checkNameAndRole},
		{"PutThenGetReturnsTheRow", checkPutGet},
		{"EmptyMutationStoresNothing", checkEmptyMutation},
		{"MergesPartialRowsByColumn", checkMergePartial},
		{"NewerTimestampWinsPerColumn", checkNewerWins},
		{"EqualTimestampsTombstoneWins", checkTombstoneWinsTie},
		{"EqualTimestampsLargerValueThenLaterExpiryWins", checkLargerValueWinsTie},
		{"ColumnTombstoneHidesOlderValue", checkColumnTombstone},
		{"RowTombstoneShadowsOlderAndEqualCells", checkRowTombstone},
		{"ExpiredCellReadsAsTombstone", checkExpiry},
		{"PurgeNeverResurrectsDeletedData", checkPurge},
		{"PurgeHorizonKeepsTombstones", checkPurgeHorizon},
		{"AcceptsMaxSizeKeyAndLargeValue", checkMaxSizes},
		{"IteratesInKeyOrderWithinBounds", checkIterBounds},
		{"IteratorRejectsInvertedRange", checkIterInverted},
		{"IteratorSeesSnapshotAtCreation", checkIterSnapshot},
		{"IteratorKeyAndRowStayValidUntilNext", checkIterStable},
		{"GetReturnsCallerOwnedRow", checkGetOwned},
		{"ReadsNeverGoBackInTime", checkReadsNeverGoBack},
		{"ViewShowsWhatGetReturns", checkViewMatchesGet},
		{"ApplyCopiesCallerBuffers", checkApplyCopies},
		{"InvalidBatchAppliesNothing", checkInvalidBatch},
		{"BatchIsAtomicToReaders", checkBatchAtomic},
		{"ConcurrentReadersAndWritersMatchModel", checkConcurrent},
		{"StatsCountRows", checkStats},
		{"CloseIsIdempotentAndLaterCallsFail", checkClose},
		{"CloseDuringConcurrentCallsIsSafe", checkCloseConcurrent},
		{"DataSurvivesReopen", checkSurvivesReopen},
		{"SecondOpenOfDirIsLocked", checkLocked},
	}, rangeChecks()...)
}

// RunConformance checks that f's engine keeps the whole engine.Engine contract, one
// sub-test per behaviour, and engine.RangeDeleter's if it has it (RunDeleteRange). Every
// sub-test opens a fresh engine in its own t.TempDir with a ManualClock; persistent
// engines are also checked after Close and Open.
func RunConformance(t *testing.T, f Factory) {
	for _, c := range conformanceChecks() {
		t.Run(c.name, func(t *testing.T) { c.fn(t, f) })
	}
}

// fixture is one open engine with its dir, clock and options, plus assertion helpers that
// fail the check with the engine's name and the state ("as written", "after flush",
// "after reopen").
type fixture struct {
	t     testing.TB
	f     Factory
	dir   string
	clk   *ManualClock
	opts  engine.Options
	e     engine.Engine
	state string
}

// newFixture opens f in a fresh dir with suiteOptions, changed by each edit.
func newFixture(t testing.TB, f Factory, edits ...func(*engine.Options)) *fixture {
	t.Helper()
	fx := &fixture{t: t, f: f, dir: t.TempDir(), clk: NewManualClock(StartMicros), state: "as written"}
	fx.opts = suiteOptions(fx.clk)
	for _, edit := range edits {
		edit(&fx.opts)
	}
	fx.e = openEngine(t, f, fx.dir, fx.opts)
	return fx
}

func (fx *fixture) apply(muts ...row.Mutation) {
	fx.t.Helper()
	if err := fx.e.Apply(muts); err != nil {
		fx.t.Fatalf("%s: apply (%s): %v", fx.f.Name, fx.state, err)
	}
}

func (fx *fixture) get(key []byte) getResult {
	fx.t.Helper()
	r, found, err := fx.e.Get(key)
	if err != nil {
		fx.t.Fatalf("%s: get %q (%s): %v", fx.f.Name, trunc(key), fx.state, err)
	}
	return normalGet(r, found)
}

// expect checks that key holds exactly want.
func (fx *fixture) expect(key string, want row.Row) {
	fx.t.Helper()
	if got := fx.get([]byte(key)); !got.equal(normalGet(want, true)) {
		fx.t.Errorf("%s: get %q (%s) = %s, want %s", fx.f.Name, trunc([]byte(key)), fx.state, got, FormatRow(want))
	}
}

// expectMissing checks that key holds nothing (or an empty row).
func (fx *fixture) expectMissing(key string) {
	fx.t.Helper()
	if got := fx.get([]byte(key)); got.found {
		fx.t.Errorf("%s: get %q (%s) = %s, want not found", fx.f.Name, trunc([]byte(key)), fx.state, got)
	}
}

func (fx *fixture) flush() {
	fx.t.Helper()
	if err := fx.e.Flush(); err != nil {
		fx.t.Fatalf("%s: flush (%s): %v", fx.f.Name, fx.state, err)
	}
}

// reopen closes and reopens a persistent engine; for others it only flushes, since their
// data does not outlive Close.
func (fx *fixture) reopen() {
	fx.t.Helper()
	if !fx.f.Persistent {
		fx.flush()
		fx.state = "after flush"
		return
	}
	fx.e = reopen(fx.t, fx.f, fx.e, fx.dir, fx.opts)
	fx.state = "after reopen"
}

// inEveryState runs verify as things are, after Flush, and (persistent engines) after
// Close and Open: the contract holds whatever form the data has reached. fx.state names
// the last of these steps in failure messages.
func (fx *fixture) inEveryState(verify func()) {
	fx.t.Helper()
	verify()
	fx.flush()
	fx.state = "after flush"
	verify()
	if fx.f.Persistent {
		fx.reopen()
		verify()
	}
}

// expectMergeAllOrders applies muts to several keys named after prefix, each in a
// different order and grouping (one batch, separate batches, a Flush between batches, all
// forwards and backwards), then checks every key reads as want in every state. The merge
// is order-independent, so an engine that layers versions (an LSM) must agree with one
// that merges in place (a B-tree).
func (fx *fixture) expectMergeAllOrders(prefix string, want row.Row, muts ...row.Mutation) {
	fx.t.Helper()
	var keys []string
	for _, reverse := range []bool{false, true} {
		for _, mode := range []string{"batch", "separate", "flushed"} {
			key := fmt.Sprintf("%s/%s/reverse=%t", prefix, mode, reverse)
			keys = append(keys, key)
			fx.applyInOrder(key, mode, reverse, muts)
		}
	}
	fx.inEveryState(func() {
		for _, k := range keys {
			fx.expect(k, want)
		}
	})
}

func (fx *fixture) applyInOrder(key, mode string, reverse bool, muts []row.Mutation) {
	fx.t.Helper()
	ordered := make([]row.Mutation, len(muts))
	for i, m := range muts {
		j := i
		if reverse {
			j = len(muts) - 1 - i
		}
		m.Key = []byte(key)
		ordered[j] = m
	}
	if mode == "batch" {
		fx.apply(ordered...)
		return
	}
	for _, m := range ordered {
		fx.apply(m)
		if mode == "flushed" {
			fx.flush()
		}
	}
}

// trunc shortens long keys (the 64 KiB one) in messages.
func trunc(key []byte) string {
	if len(key) > 40 {
		return fmt.Sprintf("%s...(%d B)", key[:32], len(key))
	}
	return string(key)
}
