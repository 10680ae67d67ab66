package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
)

// Factory opens one engine kind for the suite.
type Factory struct {
	// Name names the engine in test output.
	Name string
	// Open opens the engine stored in dir (creating it if empty). opts carries the
	// suite's Clock, GracePeriod, Durability and SyncInterval; the factory adds its
	// engine-specific settings.
	Open func(dir string, opts engine.Options) (engine.Engine, error)
	// Persistent: data survives Close and Open of the same dir.
	Persistent bool
	// CrashSafe: writes acknowledged in engine.Sync survive SIGKILL of the process.
	CrashSafe bool
	// Perturb, if set, is called by RunMetamorphic after every operation with a random
	// source seeded from the run's seed, to make the engine do at that point what it
	// otherwise does on its own schedule (the tiered engine moves rows between tiers).
	// It returns what it did, shown when a later operation fails, or an error, which
	// fails the run. It must not change what the engine's contract lets callers observe.
	Perturb func(e engine.Engine, rng *rand.Rand) (string, error)
}

// StartMicros is where the suite's clocks start: a fixed instant (November 2023) so that
// runs are reproducible and timestamps look like the hybrid clock's.
const StartMicros int64 = 1_700_000_000_000_000

// ManualClock is a clock that only moves when a test moves it. Pass its Now method as
// engine.Options.Clock. It is safe for concurrent use.
type ManualClock struct{ now atomic.Int64 }

// NewManualClock returns a clock reading startMicros.
func NewManualClock(startMicros int64) *ManualClock {
	c := &ManualClock{}
	c.now.Store(startMicros)
	return c
}

// Now returns the clock's time in microseconds; it has the engine.Clock signature.
func (c *ManualClock) Now() int64 { return c.now.Load() }

// Advance moves the clock forward by d (microsecond resolution).
func (c *ManualClock) Advance(d time.Duration) { c.now.Add(d.Microseconds()) }

// Set moves the clock to micros.
func (c *ManualClock) Set(micros int64) { c.now.Store(micros) }

// suiteOptions are the options every check starts from: the manual clock, the default grace
// period (far longer than any check advances the clock, so nothing is purged unless a
// check shortens it), and Sync durability.
func suiteOptions(clk *ManualClock) engine.Options {
	return engine.Options{
		Clock:        clk.Now,
		GracePeriod:  engine.DefaultGracePeriod,
		Durability:   engine.Sync,
		SyncInterval: 10 * time.Millisecond,
	}
}

// periodicOptions are suiteOptions in Periodic durability: for checks that apply thousands
// of batches and test logic rather than durability.
func periodicOptions(clk *ManualClock) engine.Options {
	o := suiteOptions(clk)
	o.Durability = engine.Periodic
	return o
}

// openEngine opens f in dir and registers a Cleanup that closes it. Closing twice is part
// of the contract, so checks may also Close the engine themselves.
func openEngine(t testing.TB, f Factory, dir string, opts engine.Options) engine.Engine {
	t.Helper()
	e, err := f.Open(dir, opts)
	if err != nil {
		t.Fatalf("%s: open %s: %v", f.Name, dir, err)
	}
	t.Cleanup(func() { closeQuietly(t, e) })
	return e
}

// closeQuietly closes e at the end of a check; a second Close may report ErrClosed.
func closeQuietly(t testing.TB, e engine.Engine) {
	if err := e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
		t.Errorf("%s: close: %v", e.Name(), err)
	}
}

// reopen closes e and opens the same dir again; only for Persistent factories.
func reopen(t testing.TB, f Factory, e engine.Engine, dir string, opts engine.Options) engine.Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatalf("%s: close before reopen: %v", f.Name, err)
	}
	return openEngine(t, f, dir, opts)
}

// Main is called from an engine package's TestMain with every Factory the package's
// tests give RunCrash. When RunCrash re-executes the test binary as its crash child, Main
// runs the child's writers on the engine RunCrash was given and never returns; otherwise
// it runs the tests: os.Exit(m.Run()).
func Main(m *testing.M, f Factory, more ...Factory) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		name := os.Getenv(crashEngineEnv)
		for _, g := range append([]Factory{f}, more...) {
			if g.Name == name {
				os.Exit(runCrashChild(dir, g))
			}
		}
		fmt.Fprintf(os.Stderr, "enginetest: crash child: no factory named %q given to Main\n", name)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
