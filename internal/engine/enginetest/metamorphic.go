package enginetest

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

var (
	seedFlag = flag.String("enginetest.seed", "", "metamorphic seed: a number or \"random\" (default: env KURA_SEED, else fixed seeds)")
	opsFlag  = flag.Int("enginetest.ops", 0, "operations per metamorphic seed (default: env KURA_OPS, else 2000)")
)

// defaultSeeds are run when no seed is given: fixed, so a failure in CI reproduces.
var defaultSeeds = []uint64{1, 2, 3}

const defaultOps = 2000

// RunMetamorphic runs one seeded sequence of operations on every engine in fs and on the
// Model, and fails at the first operation whose result differs. Operations: apply batches
// of colliding random mutations (and invalid batches), get, scan, move the clock (so TTLs
// expire), flush, close and reopen (persistent engines only), iterators held open
// across writes (snapshot isolation), and range deletions (left out, with a log line,
// unless every engine is an engine.RangeDeleter).
//
// The seed is logged; set KURA_SEED=n (or -enginetest.seed=n, or "random") to choose one
// and KURA_OPS=n (or -enginetest.ops=n) for the length. The grace period is far longer
// than the clock moves, so no engine may purge and results must match exactly.
func RunMetamorphic(t *testing.T, fs ...Factory) {
	n := metamorphicOps()
	for _, seed := range metamorphicSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runMetamorphic(t, seed, n, fs) })
	}
}

func metamorphicSeeds(t testing.TB) []uint64 {
	s := *seedFlag
	if s == "" {
		s = os.Getenv("KURA_SEED")
	}
	switch s {
	case "":
		return defaultSeeds
	case "random":
		return []uint64{uint64(time.Now().UnixNano())}
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("enginetest: bad seed %q: %v", s, err)
	}
	return []uint64{seed}
}

func metamorphicOps() int {
	if *opsFlag > 0 {
		return *opsFlag
	}
	if n, err := strconv.Atoi(os.Getenv("KURA_OPS")); err == nil && n > 0 {
		return n
	}
	return defaultOps
}

// runMetamorphic generates n operations from seed and runs them on fs and the model.
func runMetamorphic(t testing.TB, seed uint64, n int, fs []Factory) {
	t.Logf("metamorphic seed %d, %d ops (rerun with KURA_SEED=%d)", seed, n, seed)
	persistent := false
	for _, f := range fs {
		persistent = persistent || f.Persistent
	}
	ops := generateOps(seed, n, persistent)
	clk := NewManualClock(StartMicros)
	opts := periodicOptions(clk)
	model := &runner{name: "model", e: NewModel(opts)}
	runners := []*runner{model}
	for _, f := range fs {
		r := &runner{name: f.Name, f: f, dir: t.TempDir(), opts: opts}
		e, err := f.Open(r.dir, opts)
		if err != nil {
			t.Fatalf("%s: open: %v", f.Name, err)
		}
		r.e = e
		runners = append(runners, r)
	}
	t.Cleanup(func() {
		for _, r := range runners {
			r.close()
		}
	})
	if without := notRangeDeleters(runners); without != "" {
		t.Logf("no range deletions: %s not an engine.RangeDeleter", without)
		ops = slices.DeleteFunc(ops, func(o op) bool { return o.kind == opDeleteRange })
	}
	perturbRng := rand.New(rand.NewPCG(seed, 1))
	for i, o := range ops {
		if o.kind == opAdvance {
			clk.Advance(time.Duration(o.micros) * time.Microsecond)
			continue
		}
		want := model.exec(t, o)
		for _, r := range runners[1:] {
			if d := r.exec(t, o).diff(want); d != "" {
				t.Fatalf("seed %d op %d of %d: %s: %s\n%s: %s\nhistory of the keys involved:\n%s%s",
					seed, i, len(ops), r.name, o, r.name, d, historyOf(ops[:i+1], o), r.perturbations())
			}
			r.perturb(t, i, perturbRng)
		}
	}
}

// notRangeDeleters names the runners' engines that are not an engine.RangeDeleter.
func notRangeDeleters(runners []*runner) string {
	var names []string
	for _, r := range runners {
		if _, ok := r.e.(engine.RangeDeleter); !ok {
			names = append(names, r.name)
		}
	}
	return strings.Join(names, ", ")
}

// perturbLog is how many of the latest perturbations a failure shows.
const perturbLog = 20

// perturb calls the factory's Perturb, if any, after op i.
func (r *runner) perturb(t testing.TB, i int, rng *rand.Rand) {
	if r.f.Perturb == nil {
		return
	}
	did, err := r.f.Perturb(r.e, rng)
	if err != nil {
		t.Fatalf("%s: perturb after op %d: %v", r.name, i, err)
	}
	if did != "" {
		r.perturbed = append(r.perturbed, fmt.Sprintf("  after op %5d: %s", i, did))
		if len(r.perturbed) > perturbLog {
			r.perturbed = r.perturbed[1:]
		}
	}
}

// perturbations lists the latest perturbations for a failure message.
func (r *runner) perturbations() string {
	if len(r.perturbed) == 0 {
		return ""
	}
	return "latest perturbations:\n" + strings.Join(r.perturbed, "\n") + "\n"
}

// runner is one engine under test (or the model) with its open iterators.
type runner struct {
	name  string
	f     Factory // zero for the model
	dir   string
	opts  engine.Options
	e     engine.Engine
	iters [iterSlots]engine.Iterator
	// perturbed are the latest things Factory.Perturb did.
	perturbed []string
}

// exec runs o and returns what could be observed.
func (r *runner) exec(t testing.TB, o op) outcome {
	switch o.kind {
	case opApply, opApplyInvalid:
		return outcome{err: r.e.Apply(o.batch)}
	case opGet:
		got, found, err := r.e.Get(o.key)
		g := normalGet(got, found)
		return outcome{err: err, get: &g}
	case opScan:
		rows, err := scan(r.e, o.lo, o.hi)
		return outcome{err: err, rows: rows, scanned: true}
	case opFlush:
		return outcome{err: r.e.Flush()}
	case opReopen:
		return r.reopen(t)
	case opIterOpen:
		it, err := r.e.NewIterator(o.lo, o.hi)
		r.iters[o.slot] = it
		return outcome{err: err}
	case opDeleteRange:
		return outcome{err: r.e.(engine.RangeDeleter).DeleteRange(o.lo, o.hi)}
	case opIterDrain:
		it := r.iters[o.slot]
		r.iters[o.slot] = nil
		if it == nil {
			return outcome{scanned: true} // NewIterator failed, as checked when opened
		}
		rows, err := collect(it)
		return outcome{err: err, rows: rows, scanned: true}
	}
	t.Fatalf("enginetest: unknown op %d", o.kind)
	return outcome{}
}

// reopen closes and reopens a persistent engine; the model and volatile engines flush.
func (r *runner) reopen(t testing.TB) outcome {
	if !r.f.Persistent {
		return outcome{err: r.e.Flush()}
	}
	if err := r.e.Close(); err != nil {
		return outcome{err: fmt.Errorf("close: %w", err)}
	}
	e, err := r.f.Open(r.dir, r.opts)
	if err != nil {
		t.Fatalf("%s: reopen: %v", r.name, err)
	}
	r.e = e
	return outcome{}
}

// close releases iterators before the engine: some engines' Close waits for them.
func (r *runner) close() {
	for i, it := range r.iters {
		if it != nil {
			it.Close()
			r.iters[i] = nil
		}
	}
	r.e.Close()
}

// outcome is what one operation let the caller observe.
type outcome struct {
	err     error
	get     *getResult
	rows    []kv
	scanned bool
}

// errClass reduces an error to what the contract fixes: success or ErrInvalid. Any other
// error never matches, since the model returns none.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, engine.ErrInvalid):
		return "invalid"
	}
	return "error: " + err.Error()
}

// diff describes how o differs from want, or returns "".
func (o outcome) diff(want outcome) string {
	if g, w := errClass(o.err), errClass(want.err); g != w || strings.HasPrefix(g, "error") {
		return fmt.Sprintf("result %s, model %s", g, w)
	}
	if o.get != nil && !o.get.equal(*want.get) {
		return fmt.Sprintf("got %s, model has %s", o.get, want.get)
	}
	if o.scanned {
		return diffScans(o.rows, want.rows)
	}
	return ""
}

// historyOf lists the earlier operations touching the keys o reads or writes, so a
// mismatch can be understood without rerunning.
func historyOf(ops []op, o op) string {
	var b strings.Builder
	for i, p := range ops {
		if p.kind == opAdvance || p.kind == opFlush || p.kind == opReopen || p.touches(o) {
			fmt.Fprintf(&b, "  %5d %s\n", i, p)
		}
	}
	const limit = 4000
	if s := b.String(); len(s) > limit {
		return "  ...\n" + s[len(s)-limit:]
	}
	return b.String()
}

// describeBatch renders a batch as key=row pairs.
func describeBatch(batch []row.Mutation) string {
	parts := make([]string, len(batch))
	for i, m := range batch {
		parts[i] = fmt.Sprintf("%q=%s", m.Key, FormatRow(m.Row))
	}
	return strings.Join(parts, " ")
}
