package bench

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ResultVersion is the format version written into every result.json; readers refuse
// other versions rather than misread them.
const ResultVersion = 1

// File names inside a run directory.
const (
	ResultFile  = "result.json"
	SummaryFile = "summary.csv"
	SeriesFile  = "series.csv"
)

// Total is the pseudo-operation that aggregates every operation of a phase.
const Total = "TOTAL"

// Result is one measured phase (load or run) of one benchmark run: what ran, against
// what, on which machine, and what it measured. It is what `kura bench` saves as
// result.json and what `kura bench report` reads back.
type Result struct {
	Version  int    `json:"version"`
	Label    string `json:"label"`    // the user's name for the run, e.g. "kura-lsm"
	Workload string `json:"workload"` // named workload or property file, e.g. "read-heavy"
	Phase    string `json:"phase"`    // "load" or "run"
	Target   string `json:"target"`   // e.g. "resp://127.0.0.1:6380" or "noop"
	Mode     string `json:"mode"`     // "closed" (N threads flat out) or "open" (fixed rate)
	Threads  int    `json:"threads"`
	// TargetRateOps is the open-loop rate in operations per second; 0 in closed loop.
	TargetRateOps float64   `json:"target_rate_ops,omitempty"`
	Seed          int64     `json:"seed"`
	Start         time.Time `json:"start"`
	// DurationSeconds is the measured time, warm-up excluded.
	DurationSeconds float64 `json:"duration_seconds"`
	Ops             int64   `json:"ops"`    // completed operations, errors included
	Errors          int64   `json:"errors"` // operations that failed
	ThroughputOps   float64 `json:"throughput_ops"`
	// Properties are the workload's settings under YCSB's property names.
	Properties map[string]string `json:"properties"`
	Machine    Machine           `json:"machine"`
	// Operations holds one entry per operation type that ran, then Total last.
	Operations []OpStats `json:"operations"`
	// ServiceOperations, in open loop only, are the same operations timed from their
	// actual start instead of their scheduled one: what YCSB reports by default and a
	// closed loop measures. Operations minus this is time spent waiting to start: queueing
	// behind a slow server, and the client's timer wake-up lag (up to about a millisecond
	// with Go's timers).
	ServiceOperations []OpStats `json:"service_operations,omitempty"`
	// Series holds one entry per operation type (and Total) per second of the phase.
	Series []Interval `json:"series"`
	// ErrorSamples says what the measured operations' errors were: up to
	// MaxErrorMessages distinct messages with how often each came, the rest counted
	// under OtherErrors, so that "11 errors" can be told apart as timeouts or refusals.
	ErrorSamples []ErrorSample `json:"error_samples,omitempty"`
}

// MaxErrorMessages bounds the distinct error messages a result keeps (a message that
// names its key would otherwise make every error distinct).
const MaxErrorMessages = 8

// OtherErrors is the message under which errors past MaxErrorMessages distinct ones
// are counted.
const OtherErrors = "(other messages)"

// ErrorSample is one error message and how many measured operations failed with it.
type ErrorSample struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// Machine records where a run was measured, because on a shared machine the load
// average at the start says how much to trust the figures.
type Machine struct {
	Hostname    string  `json:"hostname"`
	NumCPU      int     `json:"num_cpu"`
	GOMAXPROCS  int     `json:"gomaxprocs"`
	LoadAvg1    float64 `json:"loadavg_1m"` // at the start of the phase; -1 when unknown
	GoVersion   string  `json:"go_version"`
	KuraVersion string  `json:"kura_version"`
}

// OpStats summarizes one operation type over a whole phase. Latencies are in
// microseconds; in open loop they are measured from each operation's intended start.
type OpStats struct {
	Op            string  `json:"op"` // YCSB's names: READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, PING, TOTAL
	Count         int64   `json:"count"`
	Errors        int64   `json:"errors"`
	NotFound      int64   `json:"not_found"` // reads of a key that did not exist
	ThroughputOps float64 `json:"throughput_ops"`
	AvgUs         float64 `json:"avg_us"`
	MinUs         float64 `json:"min_us"`
	P50Us         float64 `json:"p50_us"`
	P95Us         float64 `json:"p95_us"`
	P99Us         float64 `json:"p99_us"`
	P999Us        float64 `json:"p999_us"`
	MaxUs         float64 `json:"max_us"`
	// Percentiles is the latency distribution at fixed quantiles (0 to 1), for CDF plots.
	Percentiles []Quantile `json:"percentiles"`
}

// Quantile is one point of a latency distribution: a share Q of operations took at most Us.
type Quantile struct {
	Q  float64 `json:"q"`
	Us float64 `json:"us"`
}

// Interval is one operation type over one second of a phase.
type Interval struct {
	T      int     `json:"t"` // seconds since the phase's measured start; 1 is the first second
	Op     string  `json:"op"`
	Count  int64   `json:"count"`
	Errors int64   `json:"errors"`
	AvgUs  float64 `json:"avg_us"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
}

// Op returns the stats of operation op, or false when it did not run.
func (r *Result) Op(op string) (OpStats, bool) {
	for _, s := range r.Operations {
		if s.Op == op {
			return s, true
		}
	}
	return OpStats{}, false
}

// Save writes result.json, summary.csv and series.csv into dir, creating it.
func (r *Result) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{ResultFile, r.WriteJSON},
		{SummaryFile, r.WriteSummaryCSV},
		{SeriesFile, r.WriteSeriesCSV},
	}
	for _, w := range writers {
		if err := writeFile(filepath.Join(dir, w.name), w.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// SummaryHeader is the header row of summary.csv.
var SummaryHeader = []string{"label", "workload", "phase", "op", "count", "errors", "not_found",
	"throughput_ops", "avg_us", "min_us", "p50_us", "p95_us", "p99_us", "p999_us", "max_us"}

// WriteSummaryCSV writes one row per operation type.
func (r *Result) WriteSummaryCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(SummaryHeader)
	for _, s := range r.Operations {
		_ = cw.Write([]string{r.Label, r.Workload, r.Phase, s.Op, itoa(s.Count), itoa(s.Errors),
			itoa(s.NotFound), ftoa(s.ThroughputOps), ftoa(s.AvgUs), ftoa(s.MinUs), ftoa(s.P50Us),
			ftoa(s.P95Us), ftoa(s.P99Us), ftoa(s.P999Us), ftoa(s.MaxUs)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// SeriesHeader is the header row of series.csv.
var SeriesHeader = []string{"t", "op", "count", "errors", "avg_us", "p50_us", "p99_us", "max_us"}

// WriteSeriesCSV writes one row per operation type per second.
func (r *Result) WriteSeriesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(SeriesHeader)
	for _, s := range r.Series {
		_ = cw.Write([]string{strconv.Itoa(s.T), s.Op, itoa(s.Count), itoa(s.Errors),
			ftoa(s.AvgUs), ftoa(s.P50Us), ftoa(s.P99Us), ftoa(s.MaxUs)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

func itoa(v int64) string   { return strconv.FormatInt(v, 10) }
func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// ErrResultVersion is returned by LoadResult for a result.json of another format version.
var ErrResultVersion = errors.New("bench: unsupported result version")

// LoadResult reads dir/result.json.
func LoadResult(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", dir, err)
	}
	if r.Version != ResultVersion {
		return nil, fmt.Errorf("%w %d in %s (want %d)", ErrResultVersion, r.Version, dir, ResultVersion)
	}
	return &r, nil
}
