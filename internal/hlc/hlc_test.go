package hlc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// Last is what a node stamps on its messages: the largest timestamp issued or observed,
// and it issues nothing (the next Now is not pushed up by it).
func TestLastCoversEveryTimestampWithoutIssuingOne(t *testing.T) {
	var wall atomic.Int64
	wall.Store(100)
	c := New(wall.Load)
	if got := c.Last(); got != 0 {
		t.Fatalf("Last on a fresh clock = %d, want 0: nothing issued", got)
	}
	c.Now()
	b := c.Now() // the logical path: 101
	if got := c.Last(); got != b {
		t.Fatalf("Last = %d after Now issued %d", got, b)
	}
	if c.Last() != c.Last() {
		t.Fatal("Last changed the clock")
	}
	c.Observe(5_000)
	if got := c.Last(); got != 5_000 {
		t.Fatalf("Last = %d after observing 5000", got)
	}
	if got := c.Now(); got != 5_001 {
		t.Fatalf("Now = %d after Last calls, want 5001", got)
	}
}

// Observe from many goroutines, racing Now: the clock ends at the largest observed, and
// Now afterwards exceeds it.
func TestConcurrentObserveKeepsTheLargest(t *testing.T) {
	c := New(func() int64 { return 1 })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				c.Observe(int64(g*1000 + i))
				c.Now()
			}
		})
	}
	wg.Wait()
	if got := c.Now(); got <= 7999 {
		t.Fatalf("Now = %d after observing up to 7999", got)
	}
}

func TestOutOfSyncWhenMostPeersAreFurtherOffThanTheMaximum(t *testing.T) {
	const maxOffset = 500 * time.Millisecond
	s := time.Second
	for _, c := range []struct {
		name    string
		offsets []time.Duration
		max     time.Duration
		want    bool
	}{
		{"no peers", nil, maxOffset, false},
		{"every peer close", []time.Duration{time.Millisecond, -3 * time.Millisecond}, maxOffset, false},
		{"exactly the maximum is within it", []time.Duration{maxOffset, -maxOffset}, maxOffset, false},
		{"the odd one out (behind): both peers ahead", []time.Duration{3 * s, 3 * s}, maxOffset, true},
		{"the odd one out (ahead): both peers behind", []time.Duration{-3 * s, -3 * s}, maxOffset, true},
		{"one peer of two far: that peer is the odd one", []time.Duration{-3 * s, 0}, maxOffset, false},
		{"two of three far", []time.Duration{-3 * s, 2 * s, 0}, maxOffset, true},
		{"half is not most", []time.Duration{3 * s, 3 * s, 0, 0}, maxOffset, false},
		{"a single peer far: both sides refuse", []time.Duration{-s}, maxOffset, true},
		{"no limit", []time.Duration{3 * s, 3 * s}, 0, false},
	} {
		if got := OutOfSync(c.offsets, c.max); got != c.want {
			t.Errorf("%s: OutOfSync(%v, %v) = %v, want %v", c.name, c.offsets, c.max, got, c.want)
		}
	}
}
