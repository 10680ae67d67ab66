package tiered_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/row"
)

// hookedTier is an lsm tier whose Remove can be held up or failed by a test, and whose
// disk a test can declare full.
type hookedTier struct {
	engine.Tierable
	mu           sync.Mutex
	beforeRemove func(keys [][]byte) error
	storedReads  atomic.Int64 // GetStored calls: the reads a move makes of its source
	// full makes Apply refuse writes with engine.ErrNoSpace and DiskLow report it, as
	// the lsm engine does on a device past its reserve (Remove still works: it may use
	// half of the reserve).
	full atomic.Bool
	// room, when not 0, makes DiskLow report writes larger than it.
	room    atomic.Int64
	flushes atomic.Int64 // Flush calls
}

func (h *hookedTier) Flush() error {
	h.flushes.Add(1)
	return h.Tierable.Flush()
}

func (h *hookedTier) Apply(batch []row.Mutation) error {
	if h.full.Load() {
		return fmt.Errorf("test: %w", engine.ErrNoSpace)
	}
	return h.Tierable.Apply(batch)
}

func (h *hookedTier) DiskLow(n int64) bool {
	r := h.room.Load()
	return h.full.Load() || r > 0 && n > r
}

// TimestampCeiling forwards the lsm tier's (engine.TimestampBounded), so that the
// tiered engine captures the rows writes replace (see TestAWriteReplacingARowPromotesIt).
func (h *hookedTier) TimestampCeiling() int64 {
	return h.Tierable.(engine.TimestampBounded).TimestampCeiling()
}

func (h *hookedTier) GetStored(key []byte) (row.Row, bool, error) {
	h.storedReads.Add(1)
	return h.Tierable.GetStored(key)
}

func (h *hookedTier) Remove(keys [][]byte) error {
	h.mu.Lock()
	hook := h.beforeRemove
	h.mu.Unlock()
	if hook != nil {
		if err := hook(keys); err != nil {
			return err
		}
	}
	return h.Tierable.Remove(keys)
}

func (h *hookedTier) setBeforeRemove(fn func(keys [][]byte) error) {
	h.mu.Lock()
	h.beforeRemove = fn
	h.mu.Unlock()
}

// fixture is a tiered engine on hooked lsm tiers, with a manual clock.
type fixture struct {
	t       *testing.T
	dir     string
	clk     *enginetest.ManualClock
	db      *tiered.DB
	tiers   [2]*hookedTier
	tracker *access.Tracker
	// countWrites is tiered.Options.CountWrites.
	countWrites bool
	// rangeTiers gives the tiers the lsm engine's DeleteRange (deletingTier).
	rangeTiers bool
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith opens a fixture whose engine counts its reads in tr (nil: none).
func newFixtureWith(t *testing.T, tr *access.Tracker) *fixture {
	return newFixtureCounting(t, tr, false)
}

// newFixtureCounting opens a fixture whose engine counts its reads, and its writes if
// countWrites, in tr.
func newFixtureCounting(t *testing.T, tr *access.Tracker, countWrites bool) *fixture {
	fx := &fixture{t: t, dir: t.TempDir(), clk: enginetest.NewManualClock(enginetest.StartMicros), tracker: tr, countWrites: countWrites}
	fx.open()
	t.Cleanup(func() { fx.db.Close() })
	return fx
}

func (fx *fixture) open() {
	fx.t.Helper()
	opts := tiered.Options{Options: engine.Options{Clock: fx.clk.Now}, Tracker: fx.tracker, CountWrites: fx.countWrites}
	opts.OpenTier = func(dir string, t tiered.Tier, o engine.Options) (engine.Tierable, error) {
		s, err := lsm.Open(dir, lsm.Options{Options: o})
		if err != nil {
			return nil, err
		}
		fx.tiers[t] = &hookedTier{Tierable: s}
		if fx.rangeTiers {
			return deletingTier{fx.tiers[t]}, nil
		}
		return fx.tiers[t], nil
	}
	db, err := tiered.Open(filepath.Join(fx.dir, "fast"), filepath.Join(fx.dir, "slow"), opts)
	if err != nil {
		fx.t.Fatalf("open: %v", err)
	}
	fx.db = db
}

func (fx *fixture) reopen() {
	fx.t.Helper()
	if err := fx.db.Close(); err != nil {
		fx.t.Fatalf("close: %v", err)
	}
	fx.open()
}

func cell(name, value string, ts int64) row.Cell {
	return row.Cell{Name: []byte(name), Value: []byte(value), Timestamp: enginetest.StartMicros + ts}
}

func (fx *fixture) apply(key string, cells ...row.Cell) {
	fx.t.Helper()
	if err := fx.db.Apply([]row.Mutation{{Key: []byte(key), Row: row.Row{Cells: cells}}}); err != nil {
		fx.t.Fatalf("apply %s: %v", key, err)
	}
}

// expect checks what Get returns for key.
func (fx *fixture) expect(key, want string) {
	fx.t.Helper()
	r, found, err := fx.db.Get([]byte(key))
	if err != nil {
		fx.t.Fatalf("get %s: %v", key, err)
	}
	if got := describe(r, found); got != want {
		fx.t.Errorf("get %s = %s, want %s", key, got, want)
	}
}

// stored describes what tier t holds under key, as stored.
func (fx *fixture) stored(t tiered.Tier, key string) string {
	fx.t.Helper()
	r, found, err := fx.tiers[t].GetStored([]byte(key))
	if err != nil {
		fx.t.Fatalf("%s tier: get %s: %v", t, key, err)
	}
	return describe(r, found)
}

// expectScan checks what a full iteration returns, one "key row" per line.
func (fx *fixture) expectScan(want string) {
	fx.t.Helper()
	it, err := fx.db.NewIterator(nil, nil)
	if err != nil {
		fx.t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for it.Next() {
		got = append(got, string(it.Key())+" "+enginetest.FormatRow(it.Row()))
	}
	if err := it.Err(); err != nil {
		fx.t.Fatal(err)
	}
	if g := strings.Join(got, "\n"); g != want {
		fx.t.Errorf("scan:\n%s\nwant:\n%s", g, want)
	}
}

func describe(r row.Row, found bool) string {
	if !found {
		return "missing"
	}
	return enginetest.FormatRow(r)
}

func (fx *fixture) move(to tiered.Tier, keys ...string) error {
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	return fx.db.Move(bs, to)
}

func TestMoveCarriesTheWholeRowAndItsHome(t *testing.T) {
	fx := newFixture(t)
	expiring := cell("ttl", "soon", 2)
	expiring.ExpiresAt = enginetest.StartMicros + 50
	fx.apply("a", row.Cell{Name: []byte("gone"), Timestamp: enginetest.StartMicros + 3, Tombstone: true}, expiring, cell("x", "1", 1))
	fx.apply("b", cell("x", "2", 1))
	fx.clk.Advance(100 * time.Microsecond) // "ttl" has expired: Get shows it as a tombstone
	before := describe(mustGet(t, fx.db, "a"))

	if err := fx.move(tiered.Fast, "a", "never-written"); err != nil {
		t.Fatal(err)
	}
	if h := fx.db.HomeOf([]byte("a")); h != tiered.Fast {
		t.Errorf("home of a = %s, want fast", h)
	}
	if got := fx.stored(tiered.Slow, "a"); got != "missing" {
		t.Errorf("the slow tier still holds a: %s", got)
	}
	// The stored row moved as it was: the expired cell is still a live cell with its
	// expiry, not the tombstone a read shows.
	if got, want := fx.stored(tiered.Fast, "a"), (`{"gone"@1700000000000003=tomb "ttl"@1700000000000002="soon",exp=1700000000000050 "x"@1700000000000001="1"}`); got != want {
		t.Errorf("fast tier holds a as %s, want %s", got, want)
	}
	fx.expect("a", before)
	st := fx.db.TierStats()
	if st[tiered.Fast].Keys != 2 || st[tiered.Fast].MovedIn != 1 {
		t.Errorf("fast tier: %d keys, %d rows moved in; want 2 (a and never-written) and 1", st[tiered.Fast].Keys, st[tiered.Fast].MovedIn)
	}

	fx.reopen() // the fast keys are found again on the fast tier
	if h := fx.db.HomeOf([]byte("a")); h != tiered.Fast {
		t.Errorf("after reopen, home of a = %s, want fast", h)
	}
	if h := fx.db.HomeOf([]byte("never-written")); h != tiered.Slow {
		t.Errorf("after reopen, home of a key moved but never written = %s, want slow (nothing stored)", h)
	}
	fx.apply("a", cell("y", "new", 5)) // writes go home
	if got := fx.stored(tiered.Slow, "a"); got != "missing" {
		t.Errorf("a write to a fast key reached the slow tier: %s", got)
	}

	if err := fx.move(tiered.Slow, "a"); err != nil {
		t.Fatal(err)
	}
	if got := fx.stored(tiered.Fast, "a"); got != "missing" {
		t.Errorf("the fast tier still holds a after demotion: %s", got)
	}
	fx.expect("a", `{"gone"@1700000000000003=tomb "ttl"@1700000000000002=tomb "x"@1700000000000001="1" "y"@1700000000000005="new"}`)
	fx.expect("b", `{"x"@1700000000000001="2"}`)
}

func mustGet(t *testing.T, db *tiered.DB, key string) (row.Row, bool) {
	t.Helper()
	r, found, err := db.Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return r, found
}

func TestReadsMergeBothTiersWhileAMoveIsUnderWay(t *testing.T) {
	fx := newFixture(t)
	fx.apply("k", cell("old", "1", 1))
	held, release := make(chan struct{}), make(chan struct{})
	fx.tiers[tiered.Slow].setBeforeRemove(func([][]byte) error {
		close(held)
		<-release
		return nil
	})
	moved := make(chan error)
	go func() { moved <- fx.move(tiered.Fast, "k") }()
	<-held // copied to the fast tier, not yet removed from the slow one

	if n := fx.db.InBoth(); n != 1 {
		t.Errorf("InBoth = %d during the move, want 1", n)
	}
	fx.apply("k", cell("new", "2", 2))
	if got := fx.stored(tiered.Slow, "k"); got != `{"old"@1700000000000001="1"}` {
		t.Errorf("during the move the slow tier (the source) holds %s; a write must go to the destination", got)
	}
	want := `{"new"@1700000000000002="2" "old"@1700000000000001="1"}`
	fx.expect("k", want)

	close(release)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if n := fx.db.InBoth(); n != 0 {
		t.Errorf("InBoth = %d after the move", n)
	}
	if got := fx.stored(tiered.Slow, "k"); got != "missing" {
		t.Errorf("the slow tier still holds k: %s", got)
	}
	fx.expect("k", want)
}

func TestAFailedMoveLeavesTheRowReadableAndIsFinishedLater(t *testing.T) {
	fx := newFixture(t)
	fx.apply("k", cell("a", "1", 1))
	broken := errors.New("disk on fire")
	fx.tiers[tiered.Slow].setBeforeRemove(func([][]byte) error { return broken })
	if err := fx.move(tiered.Fast, "k"); !errors.Is(err, broken) {
		t.Fatalf("move with a failing source = %v, want the source's error", err)
	}
	if n := fx.db.InBoth(); n != 1 {
		t.Errorf("InBoth = %d after the failed move, want 1", n)
	}
	fx.apply("k", cell("b", "2", 2))
	want := `{"a"@1700000000000001="1" "b"@1700000000000002="2"}`
	fx.expect("k", want)
	fx.expectScan("k " + want)

	fx.tiers[tiered.Slow].setBeforeRemove(nil)
	if err := fx.move(tiered.Fast, "k"); err != nil {
		t.Fatal(err)
	}
	if n := fx.db.InBoth(); n != 0 {
		t.Errorf("InBoth = %d after the second move", n)
	}
	fx.expect("k", want)
	if got := fx.stored(tiered.Slow, "k"); got != "missing" {
		t.Errorf("the slow tier still holds k: %s", got)
	}
}

func TestABatchAcrossTiersLandsWholeAndKeysStayHome(t *testing.T) {
	fx := newFixture(t)
	fx.apply("hot", cell("a", "1", 1))
	if err := fx.move(tiered.Fast, "hot"); err != nil {
		t.Fatal(err)
	}
	batch := []row.Mutation{
		{Key: []byte("hot"), Row: row.Row{Cells: []row.Cell{cell("b", "2", 2)}}},
		{Key: []byte("cold"), Row: row.Row{Cells: []row.Cell{cell("c", "3", 3)}}},
	}
	if err := fx.db.Apply(batch); err != nil {
		t.Fatal(err)
	}
	fx.expect("hot", `{"a"@1700000000000001="1" "b"@1700000000000002="2"}`)
	fx.expect("cold", `{"c"@1700000000000003="3"}`)
	if h := fx.db.HomeOf([]byte("cold")); h != tiered.Slow {
		t.Errorf("home of cold = %s, want slow", h)
	}
	if got := fx.stored(tiered.Fast, "cold"); got != "missing" {
		t.Errorf("the cold key stayed on the fast tier: %s", got)
	}
	if got := fx.stored(tiered.Slow, "cold"); got != `{"c"@1700000000000003="3"}` {
		t.Errorf("slow tier holds cold as %s", got)
	}
	if n := fx.db.InBoth(); n != 0 {
		t.Errorf("InBoth = %d after the batch", n)
	}
}

// A crash between a move's copy and its removal leaves a key in both tiers; the next
// Open must merge the two parts, wherever the newer cells are.
func TestOpenAfterACrashMergesKeysFoundInBothTiers(t *testing.T) {
	dir := t.TempDir()
	fastDir, slowDir := filepath.Join(dir, "fast"), filepath.Join(dir, "slow")
	plant := func(d string, muts ...row.Mutation) {
		s, err := lsm.Open(d, lsm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(muts); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mut := func(key string, c row.Cell) row.Mutation {
		return row.Mutation{Key: []byte(key), Row: row.Row{Cells: []row.Cell{c}}}
	}
	plant(fastDir, mut("both", cell("a", "fast", 1)), mut("fast-only", cell("a", "1", 1)))
	plant(slowDir, mut("both", cell("b", "slow", 2)), mut("slow-only", cell("a", "1", 1)))

	fx := &fixture{t: t, dir: dir, clk: enginetest.NewManualClock(enginetest.StartMicros)}
	fx.open()
	t.Cleanup(func() { fx.db.Close() })
	fx.expect("both", `{"a"@1700000000000001="fast" "b"@1700000000000002="slow"}`)
	if got := fx.stored(tiered.Slow, "both"); got != "missing" {
		t.Errorf("the slow tier still holds the merged key: %s", got)
	}
	if got := fx.stored(tiered.Slow, "slow-only"); got == "missing" {
		t.Error("a key only on the slow tier was removed")
	}
	for key, want := range map[string]tiered.Tier{"both": tiered.Fast, "fast-only": tiered.Fast, "slow-only": tiered.Slow} {
		if h := fx.db.HomeOf([]byte(key)); h != want {
			t.Errorf("home of %s = %s, want %s", key, h, want)
		}
	}

	// A clean close says no key is in both: the next Open skips the search, and the
	// one after an unclean end does it again.
	fx.reopen()
	if _, err := os.Stat(filepath.Join(fastDir, "KURA-TIERS-CLEAN")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the clean mark is still there once open: %v", err)
	}
}

func TestOpenRefusesOneDirectoryForBothTiers(t *testing.T) {
	dir := t.TempDir()
	if _, err := tiered.Open(dir, dir+"/.", tiered.Options{}); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("open with one directory for both tiers = %v, want ErrInvalid", err)
	}
}
