package elastic

import (
	"math"
	"testing"
	"time"
)

// The controller's factor, tick by tick, for a run of observations: down by Decrease over
// the target, never under Floor, up by Increase at or under it, never over 1.
func TestControllerTranscript(t *testing.T) {
	c := New(Config{Target: time.Millisecond, Floor: 0.25, Decrease: 0.5, Increase: 0.1})
	steps := []struct {
		latency time.Duration
		want    float64
	}{
		{500 * time.Microsecond, 1},  // room: stays at the limit
		{2 * time.Millisecond, 0.5},  // saturated: halved
		{time.Millisecond, 0.6},      // at the target counts as room
		{5 * time.Millisecond, 0.3},  // halved again
		{5 * time.Millisecond, 0.25}, // not under the floor
		{0, 0.35},                    // an idle tick is room
		{100 * time.Microsecond, 0.45},
		{100 * time.Microsecond, 0.55},
		{100 * time.Microsecond, 0.65},
		{100 * time.Microsecond, 0.75},
		{100 * time.Microsecond, 0.85},
		{100 * time.Microsecond, 0.95},
		{100 * time.Microsecond, 1}, // not over 1
	}
	for i, s := range steps {
		got := c.Observe(s.latency)
		if math.Abs(got-s.want) > 1e-9 || math.Abs(c.Factor()-got) > 1e-9 {
			t.Fatalf("tick %d: observed %v, factor %.4f, want %.4f", i, s.latency, got, s.want)
		}
	}
}

func TestControllerDefaults(t *testing.T) {
	c := New(Config{})
	cfg := c.Config()
	if cfg.Target != time.Millisecond || cfg.Floor != 0.25 || cfg.Decrease != 0.7 || cfg.Increase != 0.05 {
		t.Fatalf("defaults %+v", cfg)
	}
	for range 100 {
		c.Observe(time.Second)
	}
	if c.Factor() != 0.25 {
		t.Fatalf("a saturated CPU leaves the factor at %v, want the floor 0.25", c.Factor())
	}
	c.Reset()
	if c.Factor() != 1 || c.Observe(2*time.Millisecond) != 0.7 {
		t.Fatalf("after Reset the factor is %v", c.Factor())
	}
}

func TestApplyScalesALimitAndLeavesNoLimitAlone(t *testing.T) {
	for _, c := range []struct {
		limit  int64
		factor float64
		want   int64
	}{
		{1000, 1, 1000}, {1000, 0.25, 250}, {0, 0.5, 0}, {-1, 0.5, 0}, {1, 0.25, 1},
	} {
		if got := Apply(c.limit, c.factor); got != c.want {
			t.Errorf("Apply(%d, %v) = %d, want %d", c.limit, c.factor, got, c.want)
		}
	}
}

// Quantile on runtime/metrics' histogram form: buckets[i]..buckets[i+1] hold counts[i].
func TestQuantileOfAHistogram(t *testing.T) {
	inf := math.Inf(1)
	buckets := []float64{math.Inf(-1), 0.0001, 0.001, 0.01, inf}
	cases := []struct {
		counts []uint64
		q      float64
		want   time.Duration
	}{
		{[]uint64{0, 0, 0, 0}, 0.99, 0},
		{[]uint64{0, 99, 1, 0}, 0.99, time.Millisecond},            // the 99th of 100 (nearest rank) is in (0.1 ms, 1 ms]
		{[]uint64{0, 100, 0, 0}, 0.99, time.Millisecond},           // all in one bucket: its upper edge
		{[]uint64{0, 98, 1, 1}, 0.99, 10 * time.Millisecond},       // the 99th is in (1 ms, 10 ms]
		{[]uint64{0, 50, 0, 50}, 0.99, 10 * time.Millisecond},      // the last bucket open above: its lower edge
		{[]uint64{0, 50, 0, 50}, 0.5, time.Millisecond},            // the 50th of 100
		{[]uint64{0, 49, 0, 51}, 0.5, 10 * time.Millisecond},       // the 50th is in the last bucket
		{[]uint64{10, 0, 0, 0}, 0.99, time.Duration(0.0001 * 1e9)}, // (-Inf, 0.1 ms]: its upper edge
	}
	for i, c := range cases {
		if got := Quantile(c.counts, buckets, c.q); got != c.want {
			t.Errorf("case %d: Quantile(%v, q=%v) = %v, want %v", i, c.counts, c.q, got, c.want)
		}
	}
}

// The sampler reads the real runtime: goroutines that wake and run show as latencies in
// the next sample (the runtime records a sample of its goroutines' latencies, about one
// in eight), and a sample covers only what happened since the previous one.
func TestSamplerSeesTheSchedulingSinceItsLastSample(t *testing.T) {
	s := NewSampler(0.99)
	count := func() (n uint64) {
		delta, _ := s.read()
		for _, c := range delta {
			n += c
		}
		return n
	}
	done := make(chan struct{})
	for range 2000 {
		go func() { done <- struct{}{} }()
	}
	for range 2000 {
		<-done
	}
	first := count()
	second := count()
	if first < 100 {
		t.Fatalf("the sample counts %d scheduling latencies after 2000 goroutines ran, want at least 100", first)
	}
	if second*4 > first {
		t.Fatalf("an immediate second sample counts %d latencies against %d: it is not a delta", second, first)
	}
}
