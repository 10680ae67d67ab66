package flowsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// testSeed returns the seed of a randomized test, KURA_SEED when set, and logs it.
func testSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	return seed
}

// randomCase is a random topology and workload: flows start at a time, or (as a scheduler
// would start the next transfer in a freed slot) the instant an earlier flow completes.
type randomCase struct {
	links []Link
	flows []randomFlow
}

type randomFlow struct {
	flow  Flow
	atSec float64
	after int // >= 0: starts when flows[after] completes, instead of at atSec
}

func newRandomCase(rng *rand.Rand) randomCase {
	var c randomCase
	// Capacities and sizes are drawn from small sets half the time, so that fair shares and
	// completion times tie, and from continuous ranges otherwise.
	discrete := rng.IntN(2) == 0
	for i := range 1 + rng.IntN(10) {
		capacity := 1 + 99*rng.Float64()
		if discrete {
			capacity = []float64{10, 20, 30, 60, 100}[rng.IntN(5)]
		}
		c.links = append(c.links, Link{Name: fmt.Sprintf("l%d", i), CapacityBytesPerSecond: capacity})
	}
	for i := range 1 + rng.IntN(30) {
		perm := rng.Perm(len(c.links))
		route := make([]LinkID, 1+rng.IntN(min(4, len(c.links))))
		for j := range route {
			route[j] = LinkID(perm[j])
		}
		size := 1000 * rng.Float64()
		if discrete {
			size = float64(60 * (1 + rng.IntN(5)))
		}
		if rng.IntN(20) == 0 {
			size = 0
		}
		f := randomFlow{flow: Flow{SizeBytes: size, Route: route}, after: -1}
		switch r := rng.IntN(3); {
		case r == 0 && i > 0:
			f.after = rng.IntN(i)
		case r == 1:
			f.atSec = 20 * rng.Float64()
			if discrete {
				f.atSec = math.Round(f.atSec)
			}
		}
		c.flows = append(c.flows, f)
	}
	return c
}

// randomDriver starts a randomCase's flows on one or more simulators in lockstep.
type randomDriver struct {
	c       randomCase
	ids     []FlowID // per case flow, its id once started, else -1
	doneAt  []float64
	started int
}

func newRandomDriver(c randomCase) *randomDriver {
	d := &randomDriver{c: c, ids: make([]FlowID, len(c.flows)), doneAt: make([]float64, len(c.flows))}
	for i := range d.ids {
		d.ids[i], d.doneAt[i] = -1, math.NaN()
	}
	return d
}

// startDue starts, on every sim, each flow whose time has come; ids agree across the sims
// since they all get the same starts.
func (d *randomDriver) startDue(t *testing.T, sims ...*Sim) {
	now := sims[0].Now()
	for i, f := range d.c.flows {
		if d.ids[i] >= 0 {
			continue
		}
		if (f.after < 0 && f.atSec <= now) || (f.after >= 0 && !math.IsNaN(d.doneAt[f.after])) {
			for _, s := range sims {
				id, err := s.Start(f.flow)
				if err != nil {
					t.Fatal(err)
				}
				d.ids[i] = id
			}
			d.started++
		}
	}
}

// until is the next time a flow is due to start by the clock.
func (d *randomDriver) until() float64 {
	u := math.Inf(1)
	for i, f := range d.c.flows {
		if d.ids[i] < 0 && f.after < 0 {
			u = min(u, f.atSec)
		}
	}
	return u
}

func (d *randomDriver) caseIndex(id FlowID) int { return slices.Index(d.ids, id) }

// TestRandomSchedulesAreMaxMinFair drives random cases and checks, at every instant: no link
// carries more than its capacity; every active flow crosses a saturated link on which no flow
// is faster (the definition of max-min fairness), and its rate is the one a textbook
// water-filling computes from scratch; the clock never goes back. At the end: every flow
// completed, the bytes its rates moved over time add up to its size, and each link carried
// the sizes of the flows that crossed it.
func TestRandomSchedulesAreMaxMinFair(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for run := range 400 {
		c := newRandomCase(rng)
		s, err := New(Config{Links: c.links})
		if err != nil {
			t.Fatal(err)
		}
		d := newRandomDriver(c)
		moved := make([]float64, len(c.flows))
		for steps := 0; ; steps++ {
			if steps > 10*len(c.flows)+10 {
				t.Fatalf("run %d: %d steps for %d flows", run, steps, len(c.flows))
			}
			d.startDue(t, s)
			rates := checkMaxMin(t, fmt.Sprintf("run %d at %v", run, s.Now()), s, d)
			if s.Active() == 0 && d.started == len(c.flows) {
				break
			}
			before := s.Now()
			now, done := s.Step(d.until())
			if now < before {
				t.Fatalf("run %d: clock went from %v back to %v", run, before, now)
			}
			for i, r := range rates {
				moved[i] += r * (now - before)
			}
			for _, id := range done {
				d.doneAt[d.caseIndex(id)] = now
			}
		}
		sizes := make([]float64, len(c.links))
		for i, f := range c.flows {
			start, end := s.Times(d.ids[i])
			if math.IsNaN(d.doneAt[i]) || end != d.doneAt[i] || end < start {
				t.Fatalf("run %d flow %d: start %v end %v, reported done at %v", run, i, start, end, d.doneAt[i])
			}
			if math.Abs(moved[i]-f.flow.SizeBytes) > 1e-6*f.flow.SizeBytes+1e-9 {
				t.Fatalf("run %d flow %d: its rates moved %v bytes of %v", run, i, moved[i], f.flow.SizeBytes)
			}
			for _, l := range f.flow.Route {
				sizes[l] += f.flow.SizeBytes
			}
		}
		for l := range c.links {
			if got := s.LinkBytes(LinkID(l)); math.Abs(got-sizes[l]) > 1e-9*sizes[l] {
				t.Fatalf("run %d link %d carried %v bytes, its flows' sizes add up to %v", run, l, got, sizes[l])
			}
		}
	}
}

// checkMaxMin checks the rates of the active flows and returns them by case flow.
func checkMaxMin(t *testing.T, where string, s *Sim, d *randomDriver) []float64 {
	t.Helper()
	rates := make([]float64, len(d.c.flows))
	var active []int
	for i, id := range d.ids {
		if id >= 0 && math.IsNaN(d.doneAt[i]) {
			active = append(active, i)
			rates[i] = s.Rate(id)
		}
	}
	if len(active) != s.Active() {
		t.Fatalf("%s: %d flows active, the simulator says %d", where, len(active), s.Active())
	}
	load := make([]float64, len(d.c.links))
	fastest := make([]float64, len(d.c.links))
	routes := make([][]LinkID, len(active))
	for k, i := range active {
		routes[k] = d.c.flows[i].flow.Route
		for _, l := range routes[k] {
			load[l] += rates[i]
			fastest[l] = max(fastest[l], rates[i])
		}
	}
	for l, link := range d.c.links {
		if load[l] > link.CapacityBytesPerSecond*(1+1e-9) {
			t.Fatalf("%s: link %d carries %v, over its capacity %v", where, l, load[l], link.CapacityBytesPerSecond)
		}
	}
	want := referenceMaxMin(d.c.links, routes)
	for k, i := range active {
		if math.Abs(rates[i]-want[k]) > 1e-9*want[k] {
			t.Fatalf("%s: flow %d has rate %v, water-filling gives %v", where, i, rates[i], want[k])
		}
		bottlenecked := false
		for _, l := range routes[k] {
			c := d.c.links[l].CapacityBytesPerSecond
			if load[l] >= c*(1-1e-9) && rates[i] >= fastest[l]*(1-1e-9) {
				bottlenecked = true
			}
		}
		if !bottlenecked {
			t.Fatalf("%s: flow %d (rate %v) has no saturated link on which it is the fastest", where, i, rates[i])
		}
	}
	return rates
}

// referenceMaxMin is the textbook water-filling, written for clarity rather than speed: raise
// every unfrozen flow's rate together until some link is full, freeze the flows on full
// links, repeat.
func referenceMaxMin(links []Link, routes [][]LinkID) []float64 {
	rates := make([]float64, len(routes))
	frozen := make([]bool, len(routes))
	level := 0.0
	for {
		used := make([]float64, len(links))
		unfrozen := make([]int, len(links))
		for f, r := range routes {
			for _, l := range r {
				used[l] += rates[f]
				if !frozen[f] {
					unfrozen[l]++
				}
			}
		}
		raise := math.Inf(1)
		for l, link := range links {
			if unfrozen[l] > 0 {
				raise = min(raise, (link.CapacityBytesPerSecond-used[l])/float64(unfrozen[l]))
			}
		}
		if math.IsInf(raise, 1) {
			return rates
		}
		level += raise
		var full []bool = make([]bool, len(links))
		for l, link := range links {
			if unfrozen[l] > 0 {
				full[l] = used[l]+raise*float64(unfrozen[l]) >= link.CapacityBytesPerSecond*(1-1e-12)
			}
		}
		for f, r := range routes {
			if frozen[f] {
				continue
			}
			rates[f] = level
			for _, l := range r {
				if full[l] {
					frozen[f] = true
				}
			}
		}
	}
}

// TestIncrementalSolveMatchesASolveFromScratch runs random cases on two simulators in
// lockstep, one recomputing only what the changes reach and one recomputing every active
// flow at every instant: the same flows must complete at the same instants.
func TestIncrementalSolveMatchesASolveFromScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for run := range 400 {
		c := newRandomCase(rng)
		inc, err := New(Config{Links: c.links})
		if err != nil {
			t.Fatal(err)
		}
		full, _ := New(Config{Links: c.links})
		full.full = true
		d := newRandomDriver(c)
		for {
			d.startDue(t, inc, full)
			if inc.Active() == 0 && d.started == len(c.flows) {
				break
			}
			until := d.until()
			now, done := inc.Step(until)
			fullNow, fullDone := full.Step(until)
			if math.Abs(now-fullNow) > 1e-9*now || !slices.Equal(done, fullDone) {
				t.Fatalf("run %d: incremental completed %v at %v, from scratch %v at %v", run, done, now, fullDone, fullNow)
			}
			for _, id := range done {
				d.doneAt[d.caseIndex(id)] = now
			}
		}
		if full.Active() != 0 {
			t.Fatalf("run %d: %d flows still active from scratch", run, full.Active())
		}
	}
}
