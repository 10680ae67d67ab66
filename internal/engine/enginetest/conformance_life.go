package enginetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The checks in this file cover concurrency, stats, Close and what survives Close.

// checkBatchAtomic: a writer rewrites a group of keys in one batch per generation; a
// reader's snapshot scans must always see every key at one generation.
func checkBatchAtomic(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.Durability = engine.Periodic })
	const keys, generations = 8, 200
	var done atomic.Bool
	var writeErr error
	go func() {
		defer done.Store(true)
		for g := 1; g <= generations; g++ {
			batch := make([]row.Mutation, keys)
			for k := range batch {
				batch[k] = mut(fmt.Sprintf("atomic/%d", k), cell("gen", fmt.Sprintf("%06d", g), StartMicros+int64(g)))
			}
			if writeErr = fx.e.Apply(batch); writeErr != nil {
				return
			}
		}
	}()
	for last := false; !last; {
		last = done.Load()
		rows, err := scan(fx.e, []byte("atomic/"), []byte("atomic0"))
		if err != nil {
			t.Fatalf("%s: scan during writes: %v", f.Name, err)
		}
		if msg := mixedGenerations(rows, keys); msg != "" {
			t.Fatalf("%s: a snapshot saw part of a batch: %s", f.Name, msg)
		}
	}
	if writeErr != nil {
		t.Fatalf("%s: apply: %v", f.Name, writeErr)
	}
}

// mixedGenerations returns "" when rows are empty or all n rows hold one generation.
func mixedGenerations(rows []kv, n int) string {
	if len(rows) == 0 {
		return ""
	}
	if len(rows) != n {
		return fmt.Sprintf("%d of %d keys", len(rows), n)
	}
	for _, r := range rows[1:] {
		if !RowsEqual(r.row, rows[0].row) {
			return fmt.Sprintf("%q is %s but %q is %s", rows[0].key, FormatRow(rows[0].row), r.key, FormatRow(r.row))
		}
	}
	return ""
}

// checkConcurrent runs writers and readers at once; run it under -race. Merging is
// order-independent, so the final state must equal the model's after all the batches the
// writers applied, whatever the interleaving.
func checkConcurrent(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.Durability = engine.Periodic })
	const writers, readers, batches = 4, 2, 150
	applied := make([][][]row.Mutation, writers)
	errs := make(chan error, writers+readers)
	var wg, rwg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			g := newGenerator(uint64(100 + w))
			for range batches {
				b := g.batch(fx.clk.Now())
				if err := fx.e.Apply(b); err != nil {
					errs <- fmt.Errorf("writer %d: apply: %w", w, err)
					return
				}
				applied[w] = append(applied[w], b)
			}
		})
	}
	stop := make(chan struct{})
	for r := range readers {
		rwg.Go(func() { errs <- concurrentReader(fx.e, newGenerator(uint64(200+r)), stop) })
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
	model := NewModel(engine.Options{Clock: fx.clk.Now})
	for _, bs := range applied {
		for _, b := range bs {
			if err := model.Apply(b); err != nil {
				t.Fatalf("model: %v", err)
			}
		}
	}
	fx.inEveryState(func() { expectMatchesModel(t, fx, model) })
}

// concurrentReader gets and scans until stop, checking only what holds at any moment:
// rows are valid and scans are sorted.
func concurrentReader(e engine.Engine, g *generator, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		r, _, err := e.Get(g.key())
		if err == nil {
			err = r.Validate()
		}
		if err != nil {
			return fmt.Errorf("reader: get: %w", err)
		}
		lo, hi := g.bound(), g.bound()
		if lo != nil && hi != nil && string(lo) > string(hi) {
			lo, hi = hi, lo
		}
		rows, err := scan(e, lo, hi)
		if err != nil {
			return fmt.Errorf("reader: scan: %w", err)
		}
		for i := range rows {
			if i > 0 && string(rows[i-1].key) >= string(rows[i].key) {
				return fmt.Errorf("reader: scan out of order: %q then %q", rows[i-1].key, rows[i].key)
			}
			if err := rows[i].row.Validate(); err != nil {
				return fmt.Errorf("reader: scan row %q: %w", rows[i].key, err)
			}
		}
	}
}

// expectMatchesModel compares a full scan and a Get of every generator key with the model.
func expectMatchesModel(t testing.TB, fx *fixture, model *Model) {
	t.Helper()
	got, err := scan(fx.e, nil, nil)
	if err != nil {
		t.Fatalf("%s: scan (%s): %v", fx.f.Name, fx.state, err)
	}
	want, _ := scan(model, nil, nil)
	if d := diffScans(got, want); d != "" {
		t.Errorf("%s: scan (%s) differs from the model: %s", fx.f.Name, fx.state, d)
	}
	for _, k := range generatorKeys() {
		r, found, _ := model.Get(k)
		want := normalGet(r, found)
		if got := fx.get(k); !got.equal(want) {
			t.Errorf("%s: get %q (%s) = %s, model has %s", fx.f.Name, k, fx.state, got, want)
		}
	}
}

func checkStats(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	const rows = 100
	batch := make([]row.Mutation, rows)
	for i := range batch {
		batch[i] = mut(fmt.Sprintf("stats%03d", i), cell("a", "some value", StartMicros))
	}
	fx.apply(batch...)
	fx.flush()
	s := fx.e.Stats()
	if s.RowsEstimate <= 0 || (s.Exact && s.RowsEstimate != rows) {
		t.Errorf("%s: Stats().RowsEstimate = %d (exact %t) after %d rows", f.Name, s.RowsEstimate, s.Exact, rows)
	}
	if s.DiskBytes < 0 || s.MemoryBytes < 0 {
		t.Errorf("%s: negative sizes in %+v", f.Name, s)
	}
	if f.Persistent && s.DiskBytes == 0 {
		t.Errorf("%s: Stats().DiskBytes = 0 after Flush of a persistent engine", f.Name)
	}
}

// checkClose: Close may be called again, and every other call after it fails with
// ErrClosed rather than panicking or touching released resources.
func checkClose(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	fx.apply(mut("a", cell("v", "1", StartMicros)))
	if err := fx.e.Close(); err != nil {
		t.Fatalf("%s: close: %v", f.Name, err)
	}
	if err := fx.e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
		t.Errorf("%s: second close: %v, want nil or ErrClosed", f.Name, err)
	}
	_, _, getErr := fx.e.Get([]byte("a"))
	it, iterErr := fx.e.NewIterator(nil, nil)
	if iterErr == nil {
		it.Close()
	}
	for name, err := range map[string]error{
		"Apply":       fx.e.Apply([]row.Mutation{mut("b", cell("v", "2", StartMicros))}),
		"Get":         getErr,
		"NewIterator": iterErr,
		"Flush":       fx.e.Flush(),
	} {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s: %s after Close: %v, want ErrClosed", f.Name, name, err)
		}
	}
	_ = fx.e.Stats() // must not panic
}

// checkCloseConcurrent closes the engine while goroutines apply, get and scan; each call
// must succeed or fail with ErrClosed, and Close must succeed.
func checkCloseConcurrent(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.Durability = engine.Periodic })
	var started, wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		started.Add(1)
		wg.Go(func() { errs <- closingWorker(fx.e, newGenerator(uint64(300+w)), w, &started) })
	}
	started.Wait()
	if err := fx.e.Close(); err != nil {
		t.Errorf("%s: close during calls: %v", f.Name, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}

// closingWorker calls the engine until it reports ErrClosed; it marks started after a few
// calls so that Close lands among calls in flight.
func closingWorker(e engine.Engine, g *generator, w int, started *sync.WaitGroup) error {
	var once sync.Once
	defer once.Do(started.Done) // also when the worker stops early
	for i := 0; ; i++ {
		if i == 20 {
			once.Do(started.Done)
		}
		var err error
		switch (i + w) % 3 {
		case 0:
			err = e.Apply(g.batch(StartMicros))
		case 1:
			_, _, err = e.Get(g.key())
		default:
			_, err = scan(e, []byte("k1"), []byte("k2"))
		}
		if errors.Is(err, engine.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("worker %d call %d: %w", w, i, err)
		}
	}
}

// checkSurvivesReopen: everything applied, flushed or not, is there after Close and Open.
func checkSurvivesReopen(t testing.TB, f Factory) {
	if !f.Persistent {
		t.Skipf("%s is not persistent", f.Name)
	}
	fx := newFixture(t, f)
	model := NewModel(engine.Options{Clock: fx.clk.Now})
	g := newGenerator(7)
	both := func(n int) {
		for range n {
			b := g.batch(fx.clk.Now())
			fx.apply(b...)
			if err := model.Apply(b); err != nil {
				t.Fatalf("model: %v", err)
			}
		}
	}
	both(300)
	fx.reopen()
	expectMatchesModel(t, fx, model)
	both(200)
	fx.flush()
	both(200)
	fx.reopen()
	expectMatchesModel(t, fx, model)
}

// checkLocked: a second Open of a dir in use fails with ErrLocked, and the dir opens again
// once the first engine is closed.
func checkLocked(t testing.TB, f Factory) {
	if !f.Persistent {
		t.Skipf("%s is not persistent", f.Name)
	}
	fx := newFixture(t, f)
	if e2, err := f.Open(fx.dir, fx.opts); !errors.Is(err, engine.ErrLocked) {
		if err == nil {
			e2.Close()
		}
		t.Errorf("%s: second open of an open dir: %v, want ErrLocked", f.Name, err)
	}
	if err := fx.e.Close(); err != nil {
		t.Fatalf("%s: close: %v", f.Name, err)
	}
	openEngine(t, f, fx.dir, fx.opts)
}
