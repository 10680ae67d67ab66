package report

import (
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/bench"
)

// testSeed returns the seed for a randomized test, from KURA_SEED when set, and logs it
// so that a failure can be replayed.
func testSeed(t *testing.T) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("KURA_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with KURA_SEED=%d)", seed, seed)
	return seed
}

// synth describes a synthetic result.
type synth struct {
	label, workload, phase string
	ops                    []string // operation types; TOTAL is added
	rate                   float64  // operations per second over all types
	medianUs               float64  // median latency
	seconds                int
	errors                 int64 // failed operations, charged to the first op
}

// quantiles are the points of each synthetic latency distribution.
var quantiles = []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 1}

// makeResult builds a plausible result from s with rng: log-normal latencies, a rate
// that wobbles from second to second, and a stall in the middle of the run.
func makeResult(rng *rand.Rand, s synth) *bench.Result {
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC).Add(time.Duration(rng.Intn(3600)) * time.Second)
	r := &bench.Result{
		Version: bench.ResultVersion, Label: s.label, Workload: s.workload, Phase: s.phase,
		Target: "resp://127.0.0.1:6380", Mode: "closed", Threads: 8, Seed: 42, Start: start,
		DurationSeconds: float64(s.seconds),
		Properties: map[string]string{
			"recordcount": "100000", "fieldcount": "10", "fieldlength": "100",
			"requestdistribution": "zipfian", "workload": s.workload,
		},
		Machine: bench.Machine{Hostname: "bench1", NumCPU: 2, GOMAXPROCS: 2, LoadAvg1: 0.42,
			GoVersion: "go1.26.0", KuraVersion: "v0.1.0-test"},
	}
	if s.label == "redis" {
		r.Properties["requestdistribution"] = "uniform"
	}
	var all []float64
	perOp := s.rate / float64(len(s.ops))
	for oi, op := range s.ops {
		med := s.medianUs * (1 + 0.5*float64(oi))
		var samples []float64
		for i := 0; i < 4000; i++ {
			samples = append(samples, med*math.Exp(0.6*rng.NormFloat64()))
		}
		stats := opStats(op, samples, int64(perOp*float64(s.seconds)), float64(s.seconds))
		if oi == 0 {
			stats.Errors = s.errors
		}
		if op == "READ" {
			stats.NotFound = stats.Count / 100
		}
		r.Operations = append(r.Operations, stats)
		all = append(all, samples...)
		for t := 1; t <= s.seconds; t++ {
			n := int64(perOp * (0.85 + 0.3*rng.Float64()))
			p99 := med * (3 + rng.Float64())
			if t == s.seconds/2 {
				n /= 10 // a stall: few operations, and slow ones
				p99 *= 40
			}
			r.Series = append(r.Series, bench.Interval{T: t, Op: op, Count: n, AvgUs: med * 1.2,
				P50Us: med, P99Us: p99, MaxUs: p99 * 2})
		}
	}
	total := opStats(bench.Total, all, 0, float64(s.seconds))
	for _, o := range r.Operations {
		total.Count += o.Count
		total.Errors += o.Errors
		total.NotFound += o.NotFound
	}
	total.ThroughputOps = float64(total.Count) / float64(s.seconds)
	r.Operations = append(r.Operations, total)
	r.Ops, r.Errors, r.ThroughputOps = total.Count, total.Errors, total.ThroughputOps
	for t := 1; t <= s.seconds; t++ {
		var iv bench.Interval
		iv.T, iv.Op = t, bench.Total
		for _, x := range r.Series {
			if x.T == t && x.Op != bench.Total {
				iv.Count += x.Count
				iv.P99Us = max(iv.P99Us, x.P99Us)
				iv.P50Us, iv.AvgUs, iv.MaxUs = x.P50Us, x.AvgUs, max(iv.MaxUs, x.MaxUs)
			}
		}
		r.Series = append(r.Series, iv)
	}
	return r
}

// opStats summarizes samples, rounded to whole microseconds as the histograms are.
func opStats(op string, samples []float64, count int64, seconds float64) bench.OpStats {
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	at := func(q float64) float64 { return math.Round(s[int(q*float64(len(s)-1))]) }
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	st := bench.OpStats{Op: op, Count: count, ThroughputOps: float64(count) / seconds,
		AvgUs: math.Round(sum / float64(len(s))), MinUs: at(0), P50Us: at(0.5), P95Us: at(0.95),
		P99Us: at(0.99), P999Us: at(0.999), MaxUs: at(1)}
	for _, q := range quantiles {
		st.Percentiles = append(st.Percentiles, bench.Quantile{Q: q, Us: at(q)})
	}
	return st
}

// fixture is a set of results like a real comparison: three labels, two workloads with
// load and run phases, one run with errors.
func fixture(rng *rand.Rand) []*bench.Result {
	var out []*bench.Result
	for _, label := range []string{"kura-lsm", "redis", "kura-btree"} {
		speed := map[string]float64{"kura-lsm": 1, "kura-btree": 0.8, "redis": 2.5}[label]
		out = append(out,
			makeResult(rng, synth{label: label, workload: "read-heavy", phase: "run", ops: []string{"READ", "UPDATE"},
				rate: 9000 * speed, medianUs: 400 / speed, seconds: 20}),
			makeResult(rng, synth{label: label, workload: "read-heavy", phase: "load", ops: []string{"INSERT"},
				rate: 7000 * speed, medianUs: 500 / speed, seconds: 10}),
			makeResult(rng, synth{label: label, workload: "write-only", phase: "run", ops: []string{"UPDATE"},
				rate: 6000 * speed, medianUs: 700 / speed, seconds: 20}),
		)
	}
	out[1].Errors = 17 // kura-lsm read-heavy load
	out[1].Operations[0].Errors = 17
	out[1].Operations[len(out[1].Operations)-1].Errors = 17
	out[1].ErrorSamples = []bench.ErrorSample{{Message: "ERR timeout", Count: 15}, {Message: "EOF", Count: 2}}
	return out
}
