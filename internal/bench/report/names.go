package report

import (
	"fmt"
	"strings"

	"github.com/kuradb/kura/internal/bench"
)

// runNames names each result in reports by its label; a result that repeats the label,
// workload and phase of an earlier one is "label #2", "label #3", and so on.
func runNames(results []*bench.Result) []string {
	type key struct{ label, workload, phase string }
	seen := make(map[key]int)
	names := make([]string, len(results))
	for i, r := range results {
		k := key{r.Label, r.Workload, r.Phase}
		seen[k]++
		names[i] = r.Label
		if n := seen[k]; n > 1 {
			names[i] = fmt.Sprintf("%s #%d", r.Label, n)
		}
	}
	return names
}

// runDirs returns the subdirectory Render puts each result's charts in:
// label-workload-phase, reduced to letters, digits, '.', '_' and '-', and made unique
// with a -2, -3 suffix.
func runDirs(results []*bench.Result) []string {
	used := make(map[string]bool)
	dirs := make([]string, len(results))
	for i, r := range results {
		base := sanitize(r.Label + "-" + r.Workload + "-" + r.Phase)
		name := base
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		used[name] = true
		dirs[i] = name
	}
	return dirs
}

// sanitize keeps s usable as one path element on every system: runs of other
// characters become one '_', and names made only of dots are replaced.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_'
		switch {
		case ok:
			b.WriteRune(c)
			under = false
		case !under:
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.Trim(b.String(), "_")
	if strings.Trim(out, ".") == "" {
		return "run"
	}
	return out
}
