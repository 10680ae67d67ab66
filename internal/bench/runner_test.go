package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is virtual time for single-threaded runs: sleeping jumps to the wake-up
// time, and the fake clients below advance it by their service time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(_ context.Context, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// stallTarget serves every operation in service time, except operation number stallAt
// (0-based, counted over all clients), which takes stall.
type stallTarget struct {
	clock   *fakeClock
	service time.Duration
	stall   time.Duration
	stallAt int
	mu      sync.Mutex
	ops     int
	keys    []string
	// errOf, when set, is the error operation number n (of key) fails with.
	errOf func(n int, key string) error
}

func (t *stallTarget) Name() string { return "stall" }
func (t *stallTarget) Open(context.Context, int, int) (Client, error) {
	return stallClient{t}, nil
}

type stallClient struct{ t *stallTarget }

func (c stallClient) serve(key string) error {
	c.t.mu.Lock()
	n := c.t.ops
	c.t.ops++
	c.t.keys = append(c.t.keys, key)
	c.t.mu.Unlock()
	if n == c.t.stallAt {
		c.t.clock.advance(c.t.stall)
	} else {
		c.t.clock.advance(c.t.service)
	}
	if c.t.errOf != nil {
		return c.t.errOf(n, key)
	}
	return nil
}

func (c stallClient) Read(_ context.Context, key string, _ []string) (bool, error) {
	return true, c.serve(key)
}
func (c stallClient) Scan(context.Context, string, int, []string) error { return ErrUnsupported }
func (c stallClient) Update(_ context.Context, key string, _ []Field) error {
	return c.serve(key)
}
func (c stallClient) Insert(_ context.Context, key string, _ []Field) error {
	return c.serve(key)
}
func (c stallClient) Ping(context.Context) error { return c.serve("") }
func (c stallClient) Close() error               { return nil }

func stallRun(t *testing.T, rate float64) *Result {
	t.Helper()
	clock := newFakeClock()
	target := &stallTarget{clock: clock, service: 100 * time.Microsecond, stall: 500 * time.Millisecond, stallAt: 500}
	w, _ := NamedWorkload("read-only")
	res, err := Run(context.Background(), Config{Workload: w, Phase: PhaseRun, Target: target,
		Threads: 1, RateOps: rate, Operations: 2000, Clock: clock, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOpenLoopChargesAStallToEveryOperationThatWaited(t *testing.T) {
	// 1,000 ops/s, 100 µs each, and one operation that stalls for 500 ms. The ~500
	// operations scheduled during the stall started late; measured from their scheduled
	// start they took up to 500 ms. A closed loop sees only the one slow operation.
	open := stallRun(t, 1000)
	closed := stallRun(t, 0)
	o, _ := open.Op("READ")
	c, _ := closed.Op("READ")
	t.Logf("open loop: p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, max %.0f µs", o.P50Us, o.Percentiles[11].Us, o.P99Us, o.MaxUs)
	t.Logf("closed loop: p50 %.0f µs, p99 %.0f µs, max %.0f µs", c.P50Us, c.P99Us, c.MaxUs)
	if o.Count != 2000 || c.Count != 2000 {
		t.Fatalf("counts %d and %d, want 2000", o.Count, c.Count)
	}
	if o.P50Us > 200 {
		t.Errorf("open loop p50 %.0f µs: operations outside the stall should take 100 µs", o.P50Us)
	}
	// 20% of operations waited at least 100 ms: the p80 must show it.
	if p80 := quantile(o, 0.8); p80 < 100_000 {
		t.Errorf("open loop p80 %.0f µs: the stall is hidden", p80)
	}
	if o.MaxUs < 490_000 {
		t.Errorf("open loop max %.0f µs, want the 500 ms stall", o.MaxUs)
	}
	if c.P99Us > 200 || c.MaxUs < 490_000 {
		t.Errorf("closed loop p99 %.0f µs max %.0f µs: want one 500 ms outlier only", c.P99Us, c.MaxUs)
	}
	// Timed from their actual start, the same operations show only the one slow one:
	// what a closed loop (and YCSB by default) would report.
	svc := open.ServiceOperations[0]
	if svc.Op != "READ" || svc.Count != 2000 || quantile(svc, 0.8) > 200 || svc.MaxUs < 490_000 {
		t.Errorf("open loop service time %+v: want p80 100 µs and one 500 ms outlier", svc)
	}
	if closed.ServiceOperations != nil {
		t.Error("closed loop reports service times separately")
	}
	if open.Mode != "open" || closed.Mode != "closed" {
		t.Errorf("modes %q and %q", open.Mode, closed.Mode)
	}
	// The open loop kept its schedule: 2,000 operations at 1,000/s take 2 s plus the
	// slack of the last one.
	if d := open.DurationSeconds; d < 1.99 || d > 2.1 {
		t.Errorf("open loop lasted %.3f s, want about 2 s", d)
	}
}

func quantile(s OpStats, q float64) float64 {
	for _, p := range s.Percentiles {
		if p.Q >= q {
			return p.Us
		}
	}
	return s.MaxUs
}

func TestWarmUpIsExecutedButNotMeasured(t *testing.T) {
	clock := newFakeClock()
	target := &stallTarget{clock: clock, service: time.Millisecond, stallAt: -1}
	w, _ := NamedWorkload("read-heavy")
	res, err := Run(context.Background(), Config{Workload: w, Phase: PhaseRun, Target: target,
		Threads: 1, Operations: 300, WarmUp: 500 * time.Millisecond, Clock: clock, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 300 {
		t.Errorf("measured %d operations, want 300", res.Ops)
	}
	if target.ops != 300+500 {
		t.Errorf("target served %d operations, want 300 measured + 500 warm-up", target.ops)
	}
	if res.DurationSeconds < 0.299 || res.DurationSeconds > 0.302 {
		t.Errorf("measured %.3f s, want 0.3 s (warm-up excluded)", res.DurationSeconds)
	}
}

func TestDurationLimitAndPerSecondSeries(t *testing.T) {
	clock := newFakeClock()
	// 7 ms operations: the last one admitted before 3 s completes after it, and must be
	// counted in second 3, not in a fourth second of its own.
	target := &stallTarget{clock: clock, service: 7 * time.Millisecond, stallAt: -1}
	w, _ := NamedWorkload("write-heavy")
	res, err := Run(context.Background(), Config{Workload: w, Phase: PhaseRun, Target: target,
		Threads: 1, Duration: 3 * time.Second, Clock: clock, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 429 { // admitted at 0, 7, ..., 2996 ms
		t.Errorf("3 s of 7 ms operations measured %d, want 429", res.Ops)
	}
	var totals []Interval
	sum := map[string]int64{}
	for _, s := range res.Series {
		sum[s.Op] += s.Count
		if s.Op == Total {
			totals = append(totals, s)
		}
	}
	if len(totals) != 3 {
		t.Fatalf("series has %d seconds, want 3: %+v", len(totals), totals)
	}
	for i, s := range totals {
		if s.T != i+1 || s.Count < 142 || s.Count > 144 {
			t.Errorf("second %d: %+v, want T=%d with about 143 operations", i, s, i+1)
		}
	}
	for _, op := range res.Operations {
		if sum[op.Op] != op.Count {
			t.Errorf("%s: series sums to %d, summary says %d", op.Op, sum[op.Op], op.Count)
		}
	}
}

func TestLoadPhaseInsertsEveryRecordAcrossThreads(t *testing.T) {
	target := &stallTarget{clock: newFakeClock(), stallAt: -1}
	w := NewWorkload()
	w.RecordCount = 1000
	res, err := Run(context.Background(), Config{Workload: w, Phase: PhaseLoad, Target: target, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	ins, ok := res.Op("INSERT")
	if !ok || ins.Count != 1000 || res.Ops != 1000 {
		t.Fatalf("load measured %+v, want 1000 inserts", res.Operations)
	}
	keys := slices.Clone(target.keys)
	slices.Sort(keys)
	if len(slices.Compact(keys)) != 1000 {
		t.Errorf("load wrote %d distinct keys, want 1000", len(keys))
	}
}

func TestErrorsAreSampledByMessage(t *testing.T) {
	target := &stallTarget{clock: newFakeClock(), stallAt: -1, errOf: func(n int, key string) error {
		switch n % 10 {
		case 0:
			return errors.New("ERR timeout")
		case 5:
			return fmt.Errorf("ERR refused %s", key) // a message of its own per key
		}
		return nil
	}}
	w := NewWorkload()
	w.RecordCount = 1000
	res, err := Run(context.Background(), Config{Workload: w, Phase: PhaseLoad, Target: target, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 200 {
		t.Fatalf("%d errors, want 200", res.Errors)
	}
	s := res.ErrorSamples
	if len(s) != MaxErrorMessages+1 {
		t.Fatalf("%d samples, want %d distinct messages and the rest: %+v", len(s), MaxErrorMessages, s)
	}
	if s[0] != (ErrorSample{Message: "ERR timeout", Count: 100}) {
		t.Errorf("first sample %+v, want every timeout under one message", s[0])
	}
	var sum int64
	for i, e := range s {
		sum += e.Count
		if i > 0 && i < MaxErrorMessages && (e.Count != 1 || !strings.HasPrefix(e.Message, "ERR refused ")) {
			t.Errorf("sample %d: %+v, want one refusal", i, e)
		}
	}
	if last := s[len(s)-1]; last != (ErrorSample{Message: OtherErrors, Count: 100 - (MaxErrorMessages - 1)}) {
		t.Errorf("last sample %+v, want the other refusals", last)
	}
	if sum != res.Errors {
		t.Errorf("samples count %d errors, the result %d", sum, res.Errors)
	}
}

func TestUnsupportedOperationFailsTheRun(t *testing.T) {
	target := &stallTarget{clock: newFakeClock(), stallAt: -1}
	w, _ := NamedWorkload("e")
	_, err := Run(context.Background(), Config{Workload: w, Phase: PhaseRun, Target: target, Threads: 2, Operations: 100})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "SCAN") {
		t.Fatalf("workload e on a target without scans: %v", err)
	}
}

func TestNoopTargetRunProducesWellFormedOutputs(t *testing.T) {
	w, _ := NamedWorkload("a")
	w.RecordCount = 1000
	var progress bytes.Buffer
	res, err := Run(context.Background(), Config{Label: "noop", Workload: w, Phase: PhaseRun,
		Target: NoopTarget{}, Threads: 4, Operations: 20_000, Seed: 4, Progress: &progress,
		ProgressInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 20_000 || res.Errors != 0 || res.ThroughputOps <= 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(progress.String(), "20,000 ops") {
		t.Errorf("final progress line missing: %q", progress.String())
	}
	dir := t.TempDir()
	if err := res.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := LoadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Ops != res.Ops || len(back.Operations) != 3 || back.Operations[2].Op != Total ||
		back.Properties["readproportion"] != "0.5" || back.Machine.NumCPU == 0 {
		t.Errorf("result.json round trip lost data: %+v", back)
	}
	rows := readCSV(t, filepath.Join(dir, SummaryFile))
	if !slices.Equal(rows[0], SummaryHeader) || len(rows) != 1+len(res.Operations) {
		t.Errorf("summary.csv: %v", rows)
	}
	series := readCSV(t, filepath.Join(dir, SeriesFile))
	if !slices.Equal(series[0], SeriesHeader) || len(series) != 1+len(res.Series) {
		t.Errorf("series.csv has %d rows for %d intervals", len(series), len(res.Series))
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ResultFile))
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil || generic["version"] != float64(ResultVersion) {
		t.Errorf("result.json: %v %v", err, generic["version"])
	}
	raw = bytes.Replace(raw, []byte(`"version": 1`), []byte(`"version": 99`), 1)
	if err := os.WriteFile(filepath.Join(dir, ResultFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadResult(dir); !errors.Is(err, ErrResultVersion) {
		t.Errorf("version 99 loaded: %v", err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestCancelledRunReturnsPartialResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := NamedWorkload("c")
	done := make(chan struct{})
	var res *Result
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, Config{Workload: w, Phase: PhaseRun, Target: NoopTarget{Delay: time.Millisecond},
			Threads: 2, Duration: time.Hour})
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) || res == nil || res.Ops == 0 {
		t.Fatalf("cancelled run: %v, %+v", err, res)
	}
}

func TestBadConfigurationsAreRejected(t *testing.T) {
	w := NewWorkload()
	for name, cfg := range map[string]Config{
		"no target":  {Workload: w, Phase: PhaseRun},
		"bad phase":  {Workload: w, Phase: "warm", Target: NoopTarget{}},
		"bad rate":   {Workload: w, Phase: PhaseRun, Target: NoopTarget{}, RateOps: -1},
		"negative n": {Workload: w, Phase: PhaseRun, Target: NoopTarget{}, Operations: -1},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
