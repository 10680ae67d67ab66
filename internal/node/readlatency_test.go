package node

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/row"
)

func TestLatencyBucketsHoldTheirLatencies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for range 10000 {
		d := time.Duration(rng.Int64N(int64(3 * time.Second)))
		i := latencyBucket(d)
		if i < latencyBuckets-1 && d > latencyUpper(i) {
			t.Fatalf("%v in bucket %d, whose bound is %v", d, i, latencyUpper(i))
		}
		if i > 0 && d <= latencyUpper(i-1) {
			t.Fatalf("%v in bucket %d, but bucket %d holds up to %v", d, i, i-1, latencyUpper(i-1))
		}
	}
	for i := range latencyBuckets - 1 { // every bound is its own bucket's
		if b := latencyBucket(latencyUpper(i)); b != i {
			t.Fatalf("bound %v of bucket %d lands in %d", latencyUpper(i), i, b)
		}
	}
}

// The threshold follows the percentile of the last window's reads, within a bucket's
// quarter above it, is capped, and stays as it was over a window of too few reads.
func TestReadFallbackThresholdFollowsThePercentileOfRecentReads(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	const limit = 20 * time.Millisecond
	for _, tc := range []struct {
		p        float64
		min, max time.Duration
	}{
		{90, time.Millisecond, 1250 * time.Microsecond}, // the 1 ms reads
		{99, limit, limit}, // the 50 ms reads, capped
	} {
		l := newReadLatencies(tc.p, limit)
		if got := l.threshold(); got != limit {
			t.Fatalf("before any window: %v, want the cap %v", got, limit)
		}
		at := t0
		for i := range 100 { // a window: 95 reads of 1 ms, 5 of 50 ms
			d := time.Millisecond
			if i%20 == 0 {
				d = 50 * time.Millisecond
			}
			l.observe(at, d)
			at = at.Add(10 * time.Millisecond)
		}
		l.observe(t0.Add(readWindow+time.Second), time.Millisecond) // rolls it
		if got := l.threshold(); got < tc.min || got > tc.max {
			t.Fatalf("p%g: threshold %v, want %v to %v", tc.p, got, tc.min, tc.max)
		}
		// A window of a few slow reads changes nothing.
		before := l.threshold()
		at = t0.Add(readWindow + 2*time.Second)
		for range readWindowReads / 2 {
			l.observe(at, 500*time.Millisecond)
		}
		l.observe(at.Add(2*readWindow), time.Millisecond)
		if got := l.threshold(); got != before {
			t.Fatalf("p%g: %d reads moved the threshold from %v to %v", tc.p, readWindowReads/2, before, got)
		}
	}
}

// toggledCaller delays every call by delay while it is set.
type toggledCaller struct {
	next  caller
	delay *atomic.Int64 // ns
}

func (d toggledCaller) Call(ctx context.Context, m uint16, p []byte) ([]byte, error) {
	time.Sleep(time.Duration(d.delay.Load()))
	return d.next.Call(ctx, m, p)
}

func (d toggledCaller) Go(ctx context.Context, m uint16, p []byte, done func([]byte, error)) {
	p = append([]byte(nil), p...)
	go func() { done(d.Call(ctx, m, p)) }()
}

// A read-optimized replica 150 ms late, under a fixed fallback of 400 ms: the read waits
// for it. With the threshold at the 90th percentile of recent reads (all quick), the read
// asks the write-optimized replica within a few milliseconds instead.
func TestReadFallbackAtAPercentileAsksASpareLongBeforeTheFixedThreshold(t *testing.T) {
	const late, fixed = 150 * time.Millisecond, 400 * time.Millisecond
	for _, percentile := range []float64{0, 90} {
		var delay atomic.Int64
		c := heteroTestCluster(t, coord.EngineAware{}, "n2", func(p caller) caller { return toggledCaller{p, &delay} })
		c.store.readSlowAfter = fixed
		if percentile > 0 {
			c.store.readLatencies = newReadLatencies(percentile, fixed)
			c.store.readLatencies.window = 20 * time.Millisecond
		}
		if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}}); err != nil {
			t.Fatal(err)
		}
		// Quick reads, over several windows.
		for start, n := time.Now(), 0; n < 2*readWindowReads || time.Since(start) < 100*time.Millisecond; n++ {
			if _, found, err := c.store.Get([]byte("k")); err != nil || !found {
				t.Fatalf("read: %v %v", found, err)
			}
		}
		if c.store.readLatencies != nil {
			t.Logf("threshold after the quick reads: %v", c.store.readLatencies.threshold())
		}
		delay.Store(int64(late))
		start := time.Now()
		r, found, err := c.store.Get([]byte("k"))
		took := time.Since(start)
		if err != nil || !found || string(r.Cells[0].Value) != "v" {
			t.Fatalf("read: %v %v %v", r, found, err)
		}
		t.Logf("percentile %g: the read took %v with the read-optimized replica %v late", percentile, took.Round(time.Millisecond), late)
		if percentile == 0 && took < late {
			t.Fatalf("with a fixed %v fallback the read took %v: it did not wait for the %v late replica", fixed, took, late)
		}
		if percentile > 0 && took >= late/2 {
			t.Fatalf("at the %gth percentile of quick reads the read took %v (the late replica answers after %v)", percentile, took, late)
		}
	}
}
