package lsm_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/row"
)

// The report is pebble's account of the store: after two flushes and a manual compaction
// it counts the flushes and the compaction and shows tables in the bottom level.
func TestReportShowsTheLevelsFlushesAndCompactions(t *testing.T) {
	db, err := lsm.Open(t.TempDir(), lsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var _ engine.Reporter = db
	now := time.Now().UnixMicro()
	for round := range 2 {
		for i := range 100 {
			m := row.Mutation{Key: fmt.Appendf(nil, "key%03d", i),
				Row: row.Row{Cells: []row.Cell{{Name: []byte("f"), Value: fmt.Appendf(nil, "v%d", round), Timestamp: now + int64(round)}}}}
			if err := db.Apply([]row.Mutation{m}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Report()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	after := db.Report()
	// pebble's table and lines: "Flushes: N", "Compactions: N ...", one row per level.
	count := func(report, pattern string) int {
		m := regexp.MustCompile(`(?m)` + pattern).FindStringSubmatch(report)
		if m == nil {
			t.Fatalf("no match for %q in:\n%s", pattern, report)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := count(before, `Flushes: (\d+)`); got != 2 {
		t.Errorf("flushes = %d, want 2", got)
	}
	if got := count(after, `Compactions: (\d+)`); got < 1 {
		t.Errorf("compactions after a manual compaction = %d, want some", got)
	}
	if got := count(after, `^\s*6 \|\s+(\d+)`); got < 1 {
		t.Errorf("tables in level 6 after a manual compaction = %d, want some", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := db.Report(); !strings.Contains(got, "closed") {
		t.Errorf("report of a closed store = %q, want it to say so", got)
	}
}
