package route

import (
	"math"
	"sync/atomic"
	"time"
)

// ReadLatencies sets the read fallback's threshold from this coordinator's recent reads
// (--read-fallback-percentile; Cassandra's speculative_retry = '95p'): a read still
// waiting past the p-th percentile of the reads of the last window is likely waiting on a
// disk where the others answered from memory, and a spare replica is asked then rather
// than after a fixed --read-fallback-after, which is the threshold's cap and its value
// until a window has seen enough reads. On disks a fixed 20 ms is longer than a seek, so
// a read that missed a B+tree's cache waited for it in full.
//
// Reads are counted in buckets of latency growing by a quarter (100 µs to about 5 s), so
// the threshold is the upper bound of the percentile's bucket: up to 25% above the
// percentile itself. A read that races a window's roll may be counted in either window.
type ReadLatencies struct {
	p      float64       // the percentile, in (0, 100)
	limit  time.Duration // the threshold's cap, and its value before a window has enough reads
	window time.Duration
	counts [latencyBuckets]atomic.Uint64
	end    atomic.Int64 // when the current window ends, Unix ns; 0 before the first read
	after  atomic.Int64 // the threshold, ns
}

const (
	latencyBuckets  = 50
	latencyBase     = 100 * time.Microsecond
	latencyGrowth   = 1.25
	readWindow      = 2 * time.Second
	readWindowReads = 40 // fewer reads in a window leave the threshold as it was
)

// NewReadLatencies returns a threshold at the p-th percentile of recent reads, capped at
// (and starting at) limit.
func NewReadLatencies(p float64, limit time.Duration) *ReadLatencies {
	l := &ReadLatencies{p: p, limit: limit, window: readWindow}
	l.after.Store(int64(limit))
	return l
}

// Threshold returns how long a read waits before it asks spares.
func (l *ReadLatencies) Threshold() time.Duration { return time.Duration(l.after.Load()) }

// Observe counts a read that took d, finished at now, and rolls the window when it is
// over.
func (l *ReadLatencies) Observe(now time.Time, d time.Duration) {
	l.counts[latencyBucket(d)].Add(1)
	end := l.end.Load()
	if end == 0 {
		l.end.CompareAndSwap(0, now.Add(l.window).UnixNano())
		return
	}
	if now.UnixNano() < end || !l.end.CompareAndSwap(end, now.Add(l.window).UnixNano()) {
		return
	}
	var counts [latencyBuckets]uint64
	for i := range l.counts {
		counts[i] = l.counts[i].Swap(0)
	}
	if t, ok := percentileOf(counts[:], l.p, readWindowReads); ok {
		l.after.Store(int64(min(t, l.limit)))
	}
}

// latencyBucket returns the bucket of a read that took d: bucket i holds latencies up to
// latencyUpper(i), the last one everything longer.
func latencyBucket(d time.Duration) int {
	if d <= latencyBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(latencyBase)) / math.Log(latencyGrowth)))
	// Float rounding may put a bucket's own bound one bucket up.
	if i > 0 && d <= latencyUpper(i-1) {
		i--
	}
	return min(i, latencyBuckets-1)
}

// latencyUpper returns the largest latency bucket i holds.
func latencyUpper(i int) time.Duration {
	return time.Duration(float64(latencyBase) * math.Pow(latencyGrowth, float64(i)))
}

// percentileOf returns the upper bound of the bucket holding the p-th percentile of
// counts, or false when they count fewer than least reads.
func percentileOf(counts []uint64, p float64, least uint64) (time.Duration, bool) {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 || total < least {
		return 0, false
	}
	rank := uint64(math.Ceil(p / 100 * float64(total))) // the rank-th smallest read
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return latencyUpper(i), true
		}
	}
	return latencyUpper(len(counts) - 1), true
}
