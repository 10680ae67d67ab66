package elastic

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatencies is the runtime's histogram of the time goroutines spent runnable before
// they ran.
const schedLatencies = "/sched/latencies:seconds"

// Sampler reads the Go scheduler's latency histogram and returns a quantile of the
// latencies recorded since its previous call. Not safe for concurrent use.
type Sampler struct {
	q      float64
	sample []metrics.Sample
	prev   []uint64
}

// NewSampler returns a sampler of quantile q (0.99: the p99), positioned at now: its
// first Sample covers what happens after this call.
func NewSampler(q float64) *Sampler {
	s := &Sampler{q: q, sample: []metrics.Sample{{Name: schedLatencies}}}
	s.read()
	return s
}

// read takes the histogram and returns the counts since the previous read.
func (s *Sampler) read() (delta []uint64, buckets []float64) {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, nil // a runtime without the metric: no signal
	}
	h := s.sample[0].Value.Float64Histogram()
	delta = make([]uint64, len(h.Counts))
	for i, n := range h.Counts {
		if i < len(s.prev) {
			delta[i] = n - s.prev[i]
		} else {
			delta[i] = n
		}
	}
	s.prev = append(s.prev[:0], h.Counts...)
	return delta, h.Buckets
}

// Sample returns the quantile of the scheduler latencies since the last call (0 when no
// goroutine was scheduled).
func (s *Sampler) Sample() time.Duration {
	delta, buckets := s.read()
	return Quantile(delta, buckets, s.q)
}

// Quantile returns quantile q of a histogram in runtime/metrics' form (counts[i] between
// buckets[i] and buckets[i+1]): the upper bound of the bucket holding it, or its lower
// bound when that bucket is open above. 0 when the histogram is empty.
func Quantile(counts []uint64, buckets []float64, q float64) time.Duration {
	var total uint64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	// The nearest rank: the ceil(q × total)-th latency, counted from 1.
	rank := uint64(math.Ceil(q*float64(total))) - 1
	rank = min(max(rank, 0), total-1)
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen > rank {
			edge := buckets[i+1]
			if edge > 1e9 || edge != edge { // +Inf above the last bucket
				edge = buckets[i]
			}
			return time.Duration(edge * float64(time.Second))
		}
	}
	return 0
}
