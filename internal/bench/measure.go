package bench

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram limits: latencies are recorded in nanoseconds from 1 ns to a minute; longer
// operations are recorded as a minute. Whole-phase histograms keep 3 significant digits,
// per-second ones 2 (1% error), which keeps a long run's memory small.
const (
	histMaxNs       = int64(time.Minute)
	totalSigFigs    = 3
	intervalSigFigs = 2
)

// cdfQuantiles are the points of each operation's latency distribution kept in results.
var cdfQuantiles = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95,
	0.97, 0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1}

// recorder collects latencies from many threads. Threads are spread over shards, each
// with its own lock, so that recording does not serialize a fast target. Per-second
// figures are bucketed by completion time, not by a ticker, so that they are exact and
// follow an injected clock.
type recorder struct {
	start time.Time // second 1 starts here
	// maxSec, when positive, is the last second of a time-limited phase: operations
	// admitted before the limit that complete after it count in that second, so that the
	// series does not end with a sliver of a second that looks like a collapse.
	maxSec int
	shards []*shard
	done   atomic.Int64 // operations recorded, for progress lines
	errs   atomic.Int64

	mu       sync.Mutex
	seconds  map[int]*second // seconds not finalized yet
	series   []Interval      // finalized seconds
	finalSec int             // seconds <= finalSec are finalized
}

type shard struct {
	mu       sync.Mutex
	total    [numOpKinds]*hdr.Histogram
	errors   [numOpKinds]int64
	notFound [numOpKinds]int64
	sec      atomic.Int64 // the second interval holds
	interval [numOpKinds]*hdr.Histogram
	ierrors  [numOpKinds]int64
}

type second struct {
	hist   [numOpKinds]*hdr.Histogram
	errors [numOpKinds]int64
}

func newRecorder(start time.Time, shards int) *recorder {
	rec := &recorder{start: start, seconds: map[int]*second{}}
	for range max(shards, 1) {
		sh := &shard{}
		sh.sec.Store(1)
		rec.shards = append(rec.shards, sh)
	}
	return rec
}

func newTotalHist() *hdr.Histogram    { return hdr.New(1, histMaxNs, totalSigFigs) }
func newIntervalHist() *hdr.Histogram { return hdr.New(1, histMaxNs, intervalSigFigs) }

// record adds one completed operation. latency is clamped to the histogram's range.
func (rec *recorder) record(shardIdx int, kind OpKind, end time.Time, latency time.Duration, failed, notFound bool) {
	ns := min(max(int64(latency), 1), histMaxNs)
	sec := int64(secondOf(end.Sub(rec.start)))
	if rec.maxSec > 0 {
		sec = min(sec, int64(rec.maxSec))
	}
	sh := rec.shards[shardIdx%len(rec.shards)]
	sh.mu.Lock()
	if sec != sh.sec.Load() {
		rec.flush(sh)
		sh.sec.Store(sec)
	}
	if sh.total[kind] == nil {
		sh.total[kind] = newTotalHist()
	}
	if sh.interval[kind] == nil {
		sh.interval[kind] = newIntervalHist()
	}
	_ = sh.total[kind].RecordValue(ns)
	_ = sh.interval[kind].RecordValue(ns)
	if failed {
		sh.errors[kind]++
		sh.ierrors[kind]++
		rec.errs.Add(1)
	}
	if notFound {
		sh.notFound[kind]++
	}
	sh.mu.Unlock()
	rec.done.Add(1)
}

// flush moves sh's interval into its second and finalizes the seconds every shard has
// left behind. The caller holds sh.mu.
func (rec *recorder) flush(sh *shard) {
	sec := int(sh.sec.Load())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s := rec.seconds[sec]
	if s == nil && sec > rec.finalSec {
		s = &second{}
		rec.seconds[sec] = s
	}
	for k, h := range sh.interval {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		if s != nil {
			if s.hist[k] == nil {
				s.hist[k] = newIntervalHist()
			}
			s.hist[k].Merge(h)
			s.errors[k] += sh.ierrors[k]
		} else {
			rec.lateInto(sec, OpKind(k), h.TotalCount(), sh.ierrors[k])
		}
		h.Reset()
		sh.ierrors[k] = 0
	}
	oldest := sec
	for _, o := range rec.shards {
		oldest = min(oldest, int(o.sec.Load()))
	}
	for s := rec.finalSec + 1; s < oldest; s++ {
		rec.finalize(s)
	}
}

// lateInto counts operations that completed in a second already finalized (a thread
// that recorded a moment after another thread of its shard moved on). Only counts are
// added; that second's percentiles stay as they were.
func (rec *recorder) lateInto(sec int, kind OpKind, count, errors int64) {
	for i := range rec.series {
		if rec.series[i].T == sec && rec.series[i].Op == kind.String() {
			rec.series[i].Count += count
			rec.series[i].Errors += errors
			return
		}
	}
}

// finalize turns second sec into Intervals. The caller holds rec.mu.
func (rec *recorder) finalize(sec int) {
	s := rec.seconds[sec]
	delete(rec.seconds, sec)
	rec.finalSec = sec
	var all *hdr.Histogram
	var allErrors int64
	if s == nil {
		s = &second{}
	}
	for k, h := range s.hist {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		rec.series = append(rec.series, intervalOf(sec, OpKind(k).String(), h, s.errors[k]))
		if all == nil {
			all = newIntervalHist()
		}
		all.Merge(h)
		allErrors += s.errors[k]
	}
	if all == nil {
		all = newIntervalHist() // an empty second is a second with no throughput, not a gap
	}
	rec.series = append(rec.series, intervalOf(sec, Total, all, allErrors))
}

func intervalOf(sec int, op string, h *hdr.Histogram, errors int64) Interval {
	return Interval{T: sec, Op: op, Count: h.TotalCount(), Errors: errors,
		AvgUs: h.Mean() / 1e3, P50Us: us(h.ValueAtQuantile(50)), P99Us: us(h.ValueAtQuantile(99)),
		MaxUs: us(h.Max())}
}

// secondOf numbers the second of the phase that d falls in: (0, 1 s] is second 1.
// Operations before the start (never measured) would fall in second 1 too.
func secondOf(d time.Duration) int {
	if d <= 0 {
		return 1
	}
	return int((d-1)/time.Second) + 1
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// finish flushes every shard, finalizes every second up to lastSec and returns the
// per-operation stats and the series. No record may run concurrently.
func (rec *recorder) finish(lastSec int, elapsed time.Duration) ([]OpStats, []Interval) {
	for _, sh := range rec.shards {
		sh.mu.Lock()
		rec.flush(sh)
		sh.mu.Unlock()
	}
	if rec.maxSec > 0 {
		lastSec = min(lastSec, rec.maxSec)
	}
	rec.mu.Lock()
	for s := range rec.seconds {
		lastSec = max(lastSec, s)
	}
	for s := rec.finalSec + 1; s <= lastSec; s++ {
		rec.finalize(s)
	}
	rec.mu.Unlock()
	slices.SortStableFunc(rec.series, func(a, b Interval) int { return a.T - b.T })

	var stats []OpStats
	all := newTotalHist()
	var allErr, allNF int64
	for k := range numOpKinds {
		h := newTotalHist()
		var errs, nf int64
		for _, sh := range rec.shards {
			if sh.total[k] != nil {
				h.Merge(sh.total[k])
			}
			errs += sh.errors[k]
			nf += sh.notFound[k]
		}
		if h.TotalCount() == 0 {
			continue
		}
		stats = append(stats, opStatsOf(k.String(), h, errs, nf, elapsed))
		all.Merge(h)
		allErr += errs
		allNF += nf
	}
	stats = append(stats, opStatsOf(Total, all, allErr, allNF, elapsed))
	return stats, rec.series
}

func opStatsOf(op string, h *hdr.Histogram, errors, notFound int64, elapsed time.Duration) OpStats {
	s := OpStats{Op: op, Count: h.TotalCount(), Errors: errors, NotFound: notFound}
	if elapsed > 0 {
		s.ThroughputOps = float64(s.Count) / elapsed.Seconds()
	}
	if s.Count == 0 {
		return s
	}
	s.AvgUs = h.Mean() / 1e3
	s.MinUs = us(h.Min())
	s.P50Us = us(h.ValueAtQuantile(50))
	s.P95Us = us(h.ValueAtQuantile(95))
	s.P99Us = us(h.ValueAtQuantile(99))
	s.P999Us = us(h.ValueAtQuantile(99.9))
	s.MaxUs = us(h.Max())
	for _, q := range cdfQuantiles {
		s.Percentiles = append(s.Percentiles, Quantile{Q: q, Us: us(h.ValueAtQuantile(q * 100))})
	}
	return s
}
