package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kuradb/kura/internal/bench"
)

// ErrNoResults is returned when there is nothing to report: no paths, no result.json
// under a path, or an empty slice of results.
var ErrNoResults = errors.New("report: no benchmark results")

// workloadOrder is the order workloads appear in reports: the papers' four, then YCSB's
// core workloads. Other names follow alphabetically.
var workloadOrder = []string{"write-only", "write-heavy", "read-heavy", "read-only",
	"a", "b", "c", "d", "e", "f"}

// Load reads the results found under paths. Each path is a run directory holding
// result.json, a result.json file itself, or a directory searched recursively for
// result.json files. A path under which nothing is found is an error wrapping
// ErrNoResults; a result.json of another format version is an error wrapping
// bench.ErrResultVersion. A file found through two paths is read once.
//
// Results are sorted by workload, phase and label as the package documentation says.
func Load(paths ...string) ([]*bench.Result, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no paths given", ErrNoResults)
	}
	seen := make(map[string]bool)
	var results []*bench.Result
	for _, p := range paths {
		dirs, err := resultDirs(p)
		if err != nil {
			return nil, err
		}
		if len(dirs) == 0 {
			return nil, fmt.Errorf("%w: no %s under %s", ErrNoResults, bench.ResultFile, p)
		}
		for _, dir := range dirs {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return nil, fmt.Errorf("report: %w", err)
			}
			if seen[abs] {
				continue
			}
			seen[abs] = true
			r, err := bench.LoadResult(dir)
			if err != nil {
				return nil, fmt.Errorf("report: %w", err)
			}
			results = append(results, r)
		}
	}
	Sort(results)
	return results, nil
}

// resultDirs returns the directories under p that hold a result.json, in lexical walk
// order.
func resultDirs(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !info.IsDir() {
		if filepath.Base(p) != bench.ResultFile {
			return nil, fmt.Errorf("report: %s is neither a directory nor a %s", p, bench.ResultFile)
		}
		return []string{filepath.Dir(p)}, nil
	}
	var dirs []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == bench.ResultFile {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return dirs, nil
}

// Sort orders results in place by workload, then phase, then label (alphabetically),
// then start time. Results that tie on all four keep their order. Sorting is idempotent,
// so WriteMarkdown and PlotCompare can sort whatever slice they are given and agree.
func Sort(results []*bench.Result) {
	sort.SliceStable(results, func(i, j int) bool {
		a, b := results[i], results[j]
		if c := compareWorkloads(a.Workload, b.Workload); c != 0 {
			return c < 0
		}
		if c := comparePhases(a.Phase, b.Phase); c != 0 {
			return c < 0
		}
		if a.Label != b.Label {
			return a.Label < b.Label
		}
		return a.Start.Before(b.Start)
	})
}

// sorted returns a sorted copy of results.
func sorted(results []*bench.Result) []*bench.Result {
	out := append([]*bench.Result(nil), results...)
	Sort(out)
	return out
}

// labels returns the distinct labels, sorted.
func labels(results []*bench.Result) []string {
	out := distinct(results, func(r *bench.Result) string { return r.Label })
	sort.Strings(out)
	return out
}

// distinct returns the distinct values of key over results, in first-seen order.
func distinct(results []*bench.Result, key func(*bench.Result) string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, r := range results {
		if k := key(r); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// workloads returns the distinct workloads in report order.
func workloads(results []*bench.Result) []string {
	out := distinct(results, func(r *bench.Result) string { return r.Workload })
	sort.SliceStable(out, func(i, j int) bool { return compareWorkloads(out[i], out[j]) < 0 })
	return out
}

func compareWorkloads(a, b string) int { return compareRanked(workloadOrder, a, b) }

func comparePhases(a, b string) int { return compareRanked([]string{"load", "run"}, a, b) }

// compareRanked orders names by their place in order, names not in it last and
// alphabetically.
func compareRanked(order []string, a, b string) int {
	if ra, rb := rank(order, a), rank(order, b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

// rank is the index of s in order, or len(order) for names not in it.
func rank(order []string, s string) int {
	for i, o := range order {
		if o == s {
			return i
		}
	}
	return len(order)
}
