package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Phases of a benchmark, as in YCSB and the papers. Warm-up is part of the run phase:
// operations before Config.WarmUp has passed are executed but not measured.
const (
	PhaseLoad = "load"
	PhaseRun  = "run"
)

// Config describes one phase of one benchmark run.
type Config struct {
	Label    string    // the run's name in results, e.g. "kura-lsm" (default: the target's name)
	Workload *Workload // required
	Phase    string    // PhaseLoad or PhaseRun
	Target   Target    // required
	Threads  int       // client threads, each with its own connection (default 1)
	// RateOps > 0 runs an open loop: operations are scheduled at this total rate and
	// latency is measured from each one's scheduled start, so a server that stalls is
	// charged for every operation that waited on it (no coordinated omission). 0 runs a
	// closed loop: every thread issues its next operation when the previous one returns.
	RateOps float64
	// Operations is the number of measured operations; 0 means the workload's
	// operationcount (run) or insertcount (load), or no limit when Duration is set.
	Operations int64
	Duration   time.Duration // measured time limit; 0 means none
	WarmUp     time.Duration // run phase: unmeasured time before measuring starts
	Seed       int64         // thread i draws from Seed+i
	Clock      Clock         // nil means the real clock
	// Progress receives a status line every ProgressInterval (default 1 s); nil for none.
	// With Live the line is redrawn in place, for a terminal.
	Progress         io.Writer
	ProgressInterval time.Duration
	Live             bool
	KuraVersion      string // recorded in the result's machine section
}

// Clock is the time source of a run, injected so that tests can drive an open loop and
// a stalling target in virtual time.
type Clock interface {
	Now() time.Time
	// SleepUntil blocks until t or until ctx is done.
	SleepUntil(ctx context.Context, t time.Time)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) SleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// run is the state of one phase in progress.
type run struct {
	cfg     Config
	clock   Clock
	gen     *Generator
	rec     *recorder
	svc     *recorder // open loop: latency from the actual start, as a closed loop measures
	start   time.Time // phase start; warm-up begins here
	measure time.Time // measuring begins here
	end     time.Time // measuring ends here (zero: no time limit)
	limit   int64     // measured operations to issue (0: no limit)
	issued  atomic.Int64
	next    atomic.Int64 // open loop: next schedule slot
	warmOps int64        // open loop: slots before measuring starts
	period  time.Duration

	errOnce sync.Once
	err     error
	cancel  context.CancelFunc

	samples errorSamples
}

// errorSamples counts the measured operations' errors by message, up to
// MaxErrorMessages distinct ones. Errors are rare, so one mutex serves every thread.
type errorSamples struct {
	mu     sync.Mutex
	counts map[string]int64
	order  []string
}

func (e *errorSamples) add(err error) {
	msg := err.Error()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = make(map[string]int64)
	}
	if _, ok := e.counts[msg]; !ok {
		if len(e.order) >= MaxErrorMessages {
			msg = OtherErrors
		}
		if _, ok := e.counts[msg]; !ok {
			e.order = append(e.order, msg)
		}
	}
	e.counts[msg]++
}

// list returns the messages in the order first seen, with their counts.
func (e *errorSamples) list() []ErrorSample {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ErrorSample
	for _, m := range e.order {
		out = append(out, ErrorSample{Message: m, Count: e.counts[m]})
	}
	return out
}

// Run executes one phase and returns what it measured. It returns an error, and no
// result, when the configuration is invalid, a client cannot connect, or the target
// cannot perform an operation the workload needs; failed operations are counted in the
// result instead. When ctx is cancelled the phase stops early and its partial result is
// returned with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	cfg = r.cfg // with defaults
	clients, err := openClients(ctx, cfg.Target, cfg.Threads)
	if err != nil {
		return nil, err
	}
	defer closeClients(clients)
	m := machine(cfg.KuraVersion) // before the load we add

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.cancel = cancel
	r.start = r.clock.Now()
	r.measure = r.start
	if cfg.Phase == PhaseRun {
		r.measure = r.start.Add(cfg.WarmUp)
		r.warmOps = int64(math.Ceil(cfg.WarmUp.Seconds() * cfg.RateOps))
	}
	if cfg.Duration > 0 {
		r.end = r.measure.Add(cfg.Duration)
	}
	r.rec = newRecorder(r.measure, min(cfg.Threads, 2*runtime.GOMAXPROCS(0)))
	if cfg.RateOps > 0 {
		r.svc = newRecorder(r.measure, len(r.rec.shards))
	}
	if cfg.Duration > 0 {
		r.rec.maxSec = secondOf(cfg.Duration)
	}

	stopProgress := r.startProgress()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { r.thread(ctx, i, c) })
	}
	wg.Wait()
	stopProgress()
	if r.err != nil {
		return nil, r.err
	}
	return r.result(m), context.Cause(ctx)
}

func newRun(cfg Config) (*run, error) {
	if cfg.Workload == nil || cfg.Target == nil {
		return nil, errors.New("bench: a workload and a target are required")
	}
	if cfg.Phase != PhaseLoad && cfg.Phase != PhaseRun {
		return nil, fmt.Errorf("bench: phase must be %q or %q, not %q", PhaseLoad, PhaseRun, cfg.Phase)
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	if cfg.RateOps < 0 || math.IsNaN(cfg.RateOps) || math.IsInf(cfg.RateOps, 0) {
		return nil, fmt.Errorf("bench: rate must be a positive number of operations per second")
	}
	if cfg.Operations < 0 || cfg.Duration < 0 || cfg.WarmUp < 0 {
		return nil, errors.New("bench: operations, duration and warm-up must not be negative")
	}
	if cfg.Label == "" {
		cfg.Label = cfg.Target.Name()
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = time.Second
	}
	limit := cfg.Operations
	if limit == 0 && cfg.Duration == 0 {
		limit = cfg.Workload.OperationCount
		if cfg.Phase == PhaseLoad {
			limit = cfg.Workload.insertCount()
		}
	}
	gen, err := NewGenerator(cfg.Workload, limit)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, clock: cfg.Clock, gen: gen, limit: limit}
	if cfg.RateOps > 0 {
		r.period = time.Duration(float64(time.Second) / cfg.RateOps)
	}
	return r, nil
}

func openClients(ctx context.Context, t Target, threads int) ([]Client, error) {
	threads = max(threads, 1)
	clients := make([]Client, 0, threads)
	for i := range threads {
		c, err := t.Open(ctx, i, threads)
		if err != nil {
			closeClients(clients)
			return nil, fmt.Errorf("bench: connecting thread %d to %s: %w", i, t.Name(), err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

func closeClients(clients []Client) {
	for _, c := range clients {
		_ = c.Close()
	}
}

// thread runs one client until the phase ends.
func (r *run) thread(ctx context.Context, i int, c Client) {
	s := r.gen.Stream(r.cfg.Seed + int64(i))
	for ctx.Err() == nil {
		begin, measured, ok := r.admit(ctx)
		if !ok {
			return
		}
		var op *Op
		if r.cfg.Phase == PhaseLoad {
			if op, ok = s.NextLoad(); !ok {
				return
			}
		} else {
			op = s.Next()
		}
		started := r.clock.Now()
		notFound, err := execute(ctx, c, op)
		end := r.clock.Now()
		s.Done(op)
		if errors.Is(err, ErrUnsupported) {
			r.fail(fmt.Errorf("bench: %s cannot %s (workload %s): %w",
				r.cfg.Target.Name(), op.Kind, r.cfg.Workload.Name, err))
			return
		}
		if ctx.Err() != nil && err != nil {
			return // interrupted, not a failure of the target
		}
		if measured {
			if err != nil {
				r.samples.add(err)
			}
			r.rec.record(i, op.Kind, end, end.Sub(begin), err != nil, notFound)
			if r.svc != nil {
				r.svc.record(i, op.Kind, end, end.Sub(started), err != nil, notFound)
			}
		}
	}
}

// admit decides whether the thread may issue another operation and when it counts
// from: now in a closed loop, the operation's scheduled start in an open loop (after
// sleeping until then).
func (r *run) admit(ctx context.Context) (begin time.Time, measured, ok bool) {
	if r.period == 0 {
		now := r.clock.Now()
		if now.Before(r.measure) {
			return now, false, true
		}
		if r.pastEnd(now) || (r.limit > 0 && r.issued.Add(1) > r.limit) {
			return now, false, false
		}
		return now, true, true
	}
	slot := r.next.Add(1) - 1
	begin = r.start.Add(time.Duration(slot) * r.period)
	measured = slot >= r.warmOps
	if measured && (r.pastEnd(begin) || (r.limit > 0 && slot-r.warmOps >= r.limit)) {
		return begin, false, false
	}
	r.clock.SleepUntil(ctx, begin)
	return begin, measured, ctx.Err() == nil
}

func (r *run) pastEnd(t time.Time) bool { return !r.end.IsZero() && !t.Before(r.end) }

func (r *run) fail(err error) {
	r.errOnce.Do(func() {
		r.err = err
		r.cancel()
	})
}

// execute performs op on c and reports whether a read found nothing.
func execute(ctx context.Context, c Client, op *Op) (notFound bool, err error) {
	switch op.Kind {
	case OpRead:
		found, err := c.Read(ctx, op.Key, op.Fields)
		return err == nil && !found, err
	case OpUpdate:
		return false, c.Update(ctx, op.Key, op.Values)
	case OpInsert:
		return false, c.Insert(ctx, op.Key, op.Values)
	case OpScan:
		return false, c.Scan(ctx, op.Key, op.ScanLength, op.Fields)
	case OpReadModifyWrite:
		found, err := c.Read(ctx, op.Key, op.Fields)
		if err != nil {
			return false, err
		}
		return !found, c.Update(ctx, op.Key, op.Values)
	case OpPing:
		return false, c.Ping(ctx)
	}
	return false, fmt.Errorf("bench: unknown operation %v", op.Kind)
}

func (r *run) result(m Machine) *Result {
	end := r.clock.Now()
	if !r.end.IsZero() && end.After(r.end) && r.period > 0 {
		end = r.end
	}
	elapsed := max(end.Sub(r.measure), 0)
	ops, series := r.rec.finish(secondOf(elapsed), elapsed)
	res := &Result{Version: ResultVersion, Label: r.cfg.Label, Workload: r.cfg.Workload.Name,
		Phase: r.cfg.Phase, Target: r.cfg.Target.Name(), Mode: "closed", Threads: max(r.cfg.Threads, 1),
		TargetRateOps: r.cfg.RateOps, Seed: r.cfg.Seed, Start: r.measure,
		DurationSeconds: elapsed.Seconds(), Properties: r.cfg.Workload.Properties(), Machine: m,
		Operations: ops, Series: series, ErrorSamples: r.samples.list()}
	if r.period > 0 {
		res.Mode = "open"
		res.ServiceOperations, _ = r.svc.finish(secondOf(elapsed), elapsed)
	}
	total := ops[len(ops)-1]
	res.Ops, res.Errors, res.ThroughputOps = total.Count, total.Errors, total.ThroughputOps
	return res
}

// machine describes this machine now.
func machine(kuraVersion string) Machine {
	host, _ := os.Hostname()
	m := Machine{Hostname: host, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadAvg1: -1, GoVersion: runtime.Version(), KuraVersion: kuraVersion}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				m.LoadAvg1 = v
			}
		}
	}
	return m
}
