package hlc

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestNowIsStrictlyIncreasingWhenTheWallClockStepsBack(t *testing.T) {
	var wall atomic.Int64
	wall.Store(1_000)
	c := New(wall.Load)
	a := c.Now()
	wall.Store(500) // an NTP step backwards
	b := c.Now()
	if b <= a {
		t.Fatalf("timestamp went from %d to %d after the clock stepped back", a, b)
	}
	wall.Store(2_000)
	if got := c.Now(); got != 2_000 {
		t.Fatalf("after the clock caught up, Now = %d, want the physical 2000", got)
	}
}

func TestObserveMakesLaterTimestampsLarger(t *testing.T) {
	c := New(func() int64 { return 10 })
	c.Observe(1_000_000) // a node whose clock runs ahead
	if got := c.Now(); got <= 1_000_000 {
		t.Fatalf("Now = %d after observing 1000000", got)
	}
	c.Observe(5) // older timestamps change nothing
	if got := c.Now(); got != 1_000_002 {
		t.Fatalf("Now = %d, want 1000002", got)
	}
}

func TestConcurrentCallersNeverShareATimestamp(t *testing.T) {
	c := New(func() int64 { return 42 }) // a frozen clock forces the logical path
	const goroutines, each = 8, 1000
	seen := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				seen[g] = append(seen[g], c.Now())
			}
		}()
	}
	wg.Wait()
	all := map[int64]bool{}
	for _, ts := range seen {
		for _, v := range ts {
			if all[v] {
				t.Fatalf("timestamp %d issued twice", v)
			}
			all[v] = true
		}
	}
}
