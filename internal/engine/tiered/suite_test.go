package tiered_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/row"
)

// openIn opens a tiered engine with its tiers in dir/fast and dir/slow.
func openIn(dir string, o engine.Options) (*tiered.DB, error) {
	return tiered.Open(filepath.Join(dir, "fast"), filepath.Join(dir, "slow"), tiered.Options{Options: o})
}

// factory runs the shared suites on the tiered engine, with the metamorphic run moving
// random keys between the tiers after every operation.
func factory() enginetest.Factory {
	return enginetest.Factory{Name: "tiered", Persistent: true, CrashSafe: true,
		Open:    func(dir string, o engine.Options) (engine.Engine, error) { return openIn(dir, o) },
		Perturb: moveRandomKeys,
	}
}

// moveRandomKeys moves, now and then, a random share of the stored keys (and a key that
// is not stored) each to a random tier.
func moveRandomKeys(e engine.Engine, rng *rand.Rand) (string, error) {
	db := e.(*tiered.DB)
	if rng.IntN(4) != 0 {
		return "", nil
	}
	it, err := db.NewIterator(nil, nil)
	if err != nil {
		return "", err
	}
	var toFast, toSlow [][]byte
	for it.Next() {
		if rng.IntN(2) == 0 {
			continue
		}
		k := slices.Clone(it.Key())
		if rng.IntN(2) == 0 {
			toFast = append(toFast, k)
		} else {
			toSlow = append(toSlow, k)
		}
	}
	if err := it.Close(); err != nil {
		return "", err
	}
	toFast = append(toFast, []byte("never-written"))
	if err := db.Move(toFast, tiered.Fast); err != nil {
		return "", err
	}
	if err := db.Move(toSlow, tiered.Slow); err != nil {
		return "", err
	}
	if err := db.Check(); err != nil {
		return "", err
	}
	return fmt.Sprintf("moved to fast %s, to slow %s", keyList(toFast), keyList(toSlow)), nil
}

func keyList(keys [][]byte) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = fmt.Sprintf("%q", k)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// churning runs the suites with a goroutine moving recently written keys between the
// tiers all the time, racing every write, read, iterator, close and crash.
func churning() enginetest.Factory {
	return enginetest.Factory{Name: "tiered-churning", Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			db, err := openIn(dir, o)
			if err != nil {
				return nil, err
			}
			return startChurn(db), nil
		}}
}

// churnDB is a tiered engine with a goroutine that keeps moving the keys written to it.
type churnDB struct {
	*tiered.DB
	mu   sync.Mutex
	keys [][]byte // the latest keys written, a ring of churnKeys
	next int

	stop, done chan struct{}
	once       sync.Once
}

const churnKeys = 1024

func startChurn(db *tiered.DB) *churnDB {
	c := &churnDB{DB: db, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *churnDB) Apply(batch []row.Mutation) error {
	err := c.DB.Apply(batch)
	c.mu.Lock()
	for i := range batch {
		if len(c.keys) < churnKeys {
			c.keys = append(c.keys, slices.Clone(batch[i].Key))
		} else {
			c.keys[c.next] = slices.Clone(batch[i].Key)
			c.next = (c.next + 1) % churnKeys
		}
	}
	c.mu.Unlock()
	return err
}

// loop moves a few of the latest keys at a time to a random tier. The seed is fixed: the
// goroutine's timing against the writers varies from run to run anyway.
func (c *churnDB) loop() {
	defer close(c.done)
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(200 * time.Microsecond):
		}
		c.mu.Lock()
		var pick [][]byte
		for range min(len(c.keys), 8) {
			pick = append(pick, c.keys[rng.IntN(len(c.keys))])
		}
		c.mu.Unlock()
		_ = c.DB.Move(pick, tiered.Tier(rng.IntN(2))) // fails once the engine is closed
	}
}

func (c *churnDB) Close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return c.DB.Close()
}

// The crash child churns: crash safety with moves in flight is the claim that matters.
func TestMain(m *testing.M) { enginetest.Main(m, churning()) }

func TestConformance(t *testing.T)         { enginetest.RunConformance(t, factory()) }
func TestConformanceChurning(t *testing.T) { enginetest.RunConformance(t, churning()) }
func TestMetamorphic(t *testing.T)         { enginetest.RunMetamorphic(t, factory()) }
func TestCrash(t *testing.T)               { enginetest.RunCrash(t, churning()) }
func TestCorruption(t *testing.T)          { enginetest.RunCorruption(t, factory()) }

// BenchmarkEngine measures the tiered engine's own cost per call (every row on the slow
// tier, so a read pays the home lookup and the tracker on top of the lsm engine's Get):
// compare with the lsm package's BenchmarkEngine in one run.
func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, tracked()) }

// tracked is the tiered engine counting its reads, as a node runs it.
func tracked() enginetest.Factory {
	f := factory()
	f.Name = "tiered-tracked"
	f.Open = func(dir string, o engine.Options) (engine.Engine, error) {
		return tiered.Open(filepath.Join(dir, "fast"), filepath.Join(dir, "slow"),
			tiered.Options{Options: o, Tracker: access.New(access.Config{})})
	}
	return f
}
