package enginetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// These tests show that the suite fails engines that break the contract: each broken
// engine is the Model with one deliberate bug, run under a fakeTB that records failures
// instead of failing the test.

// fakeTB is a testing.TB that records failures and skips. Fatal and Skip end the calling
// goroutine as the real ones do; runFake runs the check on its own goroutine for that.
// Everything it does not override (TempDir, Name, ...) goes to the real test.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failed   bool
	skipped  bool
	msgs     []string
	cleanups []func()
}

func (f *fakeTB) record(failed, skipped bool, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = f.failed || failed
	f.skipped = f.skipped || skipped
	if msg != "" {
		f.msgs = append(f.msgs, msg)
	}
}

func (f *fakeTB) Helper()                         {}
func (f *fakeTB) Log(args ...any)                 {}
func (f *fakeTB) Logf(format string, args ...any) {}
func (f *fakeTB) Fail()                           { f.record(true, false, "") }
func (f *fakeTB) Error(args ...any)               { f.record(true, false, fmt.Sprint(args...)) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.record(true, false, fmt.Sprintf(format, args...))
}
func (f *fakeTB) FailNow()                          { f.record(true, false, ""); runtime.Goexit() }
func (f *fakeTB) Fatal(args ...any)                 { f.Error(args...); runtime.Goexit() }
func (f *fakeTB) Fatalf(format string, args ...any) { f.Errorf(format, args...); runtime.Goexit() }
func (f *fakeTB) SkipNow()                          { f.record(false, true, ""); runtime.Goexit() }
func (f *fakeTB) Skip(args ...any)                  { f.SkipNow() }
func (f *fakeTB) Skipf(format string, args ...any)  { f.SkipNow() }
func (f *fakeTB) Cleanup(fn func())                 { f.mu.Lock(); f.cleanups = append(f.cleanups, fn); f.mu.Unlock() }

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeTB) Skipped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skipped
}

// runFake runs fn with a fakeTB on its own goroutine, then its cleanups, and returns it.
func runFake(t *testing.T, fn func(testing.TB)) *fakeTB {
	ft := &fakeTB{TB: t}
	onGoroutine := func(fn func()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			fn()
		}()
		<-done
	}
	onGoroutine(func() { fn(ft) })
	for i := len(ft.cleanups) - 1; i >= 0; i-- {
		onGoroutine(ft.cleanups[i])
	}
	return ft
}

// brokenEngine is the Model with one flaw.
type brokenEngine struct {
	*Model
	flaw string

	mu    sync.Mutex
	cache map[string]row.Row // rows handed out by Get, for the get-aliases and stale-cache flaws
}

func brokenFactory(flaw string) Factory {
	return Factory{Name: "broken-" + flaw, Open: func(_ string, o engine.Options) (engine.Engine, error) {
		if flaw == "ttl-ignored" {
			o.Clock = func() int64 { return 0 }
		}
		b := &brokenEngine{Model: NewModel(o), flaw: flaw, cache: make(map[string]row.Row)}
		if flaw == "view-unpurged" {
			return unpurgedViewer{b}, nil
		}
		return b, nil
	}}
}

// unpurgedViewer lends the stored row's encoding without the read-time view, as an engine
// lending a cached encoding would if it forgot that tombstones and expiry change what a
// read returns.
type unpurgedViewer struct{ *brokenEngine }

func (v unpurgedViewer) View(key []byte, fn func(enc []byte, found bool)) error {
	v.Model.mu.RLock()
	r, ok := v.Model.rows[string(key)]
	var enc []byte
	if ok {
		enc = row.Encode(&r)
	}
	v.Model.mu.RUnlock()
	fn(enc, ok)
	return nil
}

func (b *brokenEngine) Apply(batch []row.Mutation) error {
	if b.flaw != "stale-cache" {
		b.mu.Lock()
		clear(b.cache)
		b.mu.Unlock()
	}
	if b.flaw == "ignores-row-tombstones" {
		stripped := make([]row.Mutation, len(batch))
		for i, m := range batch {
			m.Row.Deleted = 0
			stripped[i] = m
		}
		batch = stripped
	}
	return b.Model.Apply(batch)
}

func (b *brokenEngine) Get(key []byte) (row.Row, bool, error) {
	if b.flaw != "get-aliases" && b.flaw != "stale-cache" {
		return b.Model.Get(key)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.cache[string(key)]; ok {
		if b.flaw == "stale-cache" {
			return r.Clone(), true, nil
		}
		return r, true, nil
	}
	r, found, err := b.Model.Get(key)
	if found {
		b.cache[string(key)] = r
	}
	return r, found, err
}

// DeleteRange deletes by row tombstones at the clock's time (flaw delete-range-tombstones),
// or takes hi in too (flaw delete-range-takes-hi); without those flaws it is the Model's.
func (b *brokenEngine) DeleteRange(lo, hi []byte) error {
	switch b.flaw {
	case "delete-range-tombstones":
		var batch []row.Mutation
		b.Model.mu.RLock()
		for k := range b.Model.rows {
			if inRange([]byte(k), lo, hi) {
				batch = append(batch, row.Mutation{Key: []byte(k), Row: row.Row{Deleted: b.Model.clock()}})
			}
		}
		b.Model.mu.RUnlock()
		return b.Apply(batch)
	case "delete-range-takes-hi":
		if hi != nil {
			hi = append(bytes.Clone(hi), 0)
		}
	}
	return b.Model.DeleteRange(lo, hi)
}

func (b *brokenEngine) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	switch b.flaw {
	case "iterator-ignores-hi":
		return b.Model.NewIterator(lo, nil)
	case "live-iterator":
		if err := engine.ValidateRange(lo, hi); err != nil {
			return nil, err
		}
		return &liveIterator{m: b.Model, lo: lo, hi: hi}, nil
	}
	return b.Model.NewIterator(lo, hi)
}

// liveIterator reads the engine's current state at every Next: no snapshot.
type liveIterator struct {
	m         *Model
	lo, hi    []byte
	key       []byte
	cur       row.Row
	started   bool
	exhausted bool
}

func (it *liveIterator) Next() bool {
	if it.exhausted {
		return false
	}
	start := it.lo
	if it.started {
		start = append(bytes.Clone(it.key), 0)
	}
	it.started = true
	inner, err := it.m.NewIterator(start, it.hi)
	if err != nil {
		it.exhausted = true
		return false
	}
	defer inner.Close()
	if !inner.Next() {
		it.exhausted = true
		return false
	}
	it.key, it.cur = bytes.Clone(inner.Key()), inner.Row()
	return true
}

func (it *liveIterator) Key() []byte  { return it.key }
func (it *liveIterator) Row() row.Row { return it.cur }
func (it *liveIterator) Err() error   { return nil }
func (it *liveIterator) Close() error { return nil }

// runCheck runs the named conformance check against f under a fakeTB.
func runCheck(t *testing.T, name string, f Factory) *fakeTB {
	for _, c := range conformanceChecks() {
		if c.name == name {
			return runFake(t, func(tb testing.TB) { c.fn(tb, f) })
		}
	}
	t.Fatalf("no check %q", name)
	return nil
}

func TestConformanceFailsBrokenEngines(t *testing.T) {
	for _, c := range []struct {
		f     Factory
		check string
	}{
		{brokenFactory("ignores-row-tombstones"), "RowTombstoneShadowsOlderAndEqualCells"},
		{brokenFactory("iterator-ignores-hi"), "IteratesInKeyOrderWithinBounds"},
		{brokenFactory("live-iterator"), "IteratorSeesSnapshotAtCreation"},
		{brokenFactory("get-aliases"), "GetReturnsCallerOwnedRow"},
		{brokenFactory("stale-cache"), "ReadsNeverGoBackInTime"},
		{brokenFactory("view-unpurged"), "ViewShowsWhatGetReturns"},
		{brokenFactory("ttl-ignored"), "ExpiredCellReadsAsTombstone"},
		{logFactory(logFlaws{forgetOnClose: true}), "DataSurvivesReopen"},
		{brokenFactory("delete-range-tombstones"), "DeleteRangeDeletesExactlyTheRange"},
		{brokenFactory("delete-range-tombstones"), "DeleteRangeLeavesNothingToShadowLaterWrites"},
		{brokenFactory("delete-range-takes-hi"), "DeleteRangeDeletesExactlyTheRange"},
	} {
		t.Run(c.f.Name+"/"+c.check, func(t *testing.T) {
			ft := runCheck(t, c.check, c.f)
			if !ft.Failed() {
				t.Fatalf("%s passed %s", c.f.Name, c.check)
			}
			t.Logf("caught: %s", firstLine(ft.msgs))
		})
	}
}

func TestMetamorphicFailsBrokenEngines(t *testing.T) {
	for _, f := range []Factory{brokenFactory("ignores-row-tombstones"), brokenFactory("live-iterator"), brokenFactory("ttl-ignored")} {
		t.Run(f.Name, func(t *testing.T) {
			ft := runFake(t, func(tb testing.TB) { runMetamorphic(tb, 1, 1000, []Factory{f}) })
			if !ft.Failed() {
				t.Fatalf("metamorphic run passed %s", f.Name)
			}
			t.Logf("caught: %s", firstLine(ft.msgs))
		})
	}
}

func TestCrashFailsEngineThatAcksBeforeWriting(t *testing.T) {
	t.Setenv(flawsEnv, "ack-before-write") // the re-executed child builds the same flaw
	ft := runFake(t, func(tb testing.TB) { runCrash(tb, logFactory(logFlaws{ackBeforeWrite: true})) })
	if !ft.Failed() {
		t.Fatal("crash test passed an engine that acknowledges writes before logging them")
	}
	t.Logf("caught: %s", firstLine(ft.msgs))
}

func TestCorruptionFailsEngineWithoutChecksums(t *testing.T) {
	f := logFactory(logFlaws{noChecksum: true})
	var c *corruptionCase
	if ft := runFake(t, func(tb testing.TB) { c = prepareCorruption(tb, f) }); ft.Failed() {
		t.Fatalf("prepare: %v", ft.msgs)
	}
	caught := 0
	for _, v := range corruptionVariants(1) {
		ft := runFake(t, func(tb testing.TB) { c.run(tb, f, v) })
		if ft.Failed() {
			caught++
			t.Logf("%s caught: %s", v.name, firstLine(ft.msgs))
		}
	}
	if caught == 0 {
		t.Fatal("corruption test passed an engine that never verifies checksums")
	}
}

func firstLine(msgs []string) string {
	if len(msgs) == 0 {
		return "(no message)"
	}
	s, _, _ := strings.Cut(msgs[0], "\n")
	return s
}

// A Perturb that changes what callers see (here: deleting a key now and then) must
// fail the metamorphic run, and the failure must show what it did.
func TestMetamorphicRunsPerturbAndShowsIt(t *testing.T) {
	f := modelFactory()
	f.Name = "model-with-meddling-perturb"
	calls := 0
	f.Perturb = func(e engine.Engine, rng *rand.Rand) (string, error) {
		calls++
		if rng.IntN(50) != 0 {
			return "", nil
		}
		m := row.Mutation{Key: []byte("k00"), Row: row.Row{Deleted: StartMicros + 1}}
		return "deleted k00", e.Apply([]row.Mutation{m})
	}
	ft := runFake(t, func(tb testing.TB) { runMetamorphic(tb, 1, 1000, []Factory{f}) })
	if calls == 0 {
		t.Fatal("Perturb was never called")
	}
	if !ft.Failed() {
		t.Fatalf("metamorphic run passed an engine whose Perturb deletes a key (%d calls)", calls)
	}
	if msg := strings.Join(ft.msgs, "\n"); !strings.Contains(msg, "deleted k00") {
		t.Errorf("the failure does not show the perturbation:\n%s", msg)
	}
}
