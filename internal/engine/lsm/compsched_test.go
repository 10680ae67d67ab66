package lsm

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/row"
)

// A store with LowPriorityCompactions compacts as pebble's default scheduler would (the
// data reads back after many flushes and a full compaction) and its compactions run on
// lowered threads; it closes without leaving the scheduler's goroutine behind (goleak in
// TestMain).
func TestLowPriorityCompactionsCompactOnLoweredThreads(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.LowPriorityCompactions = true; o.MemTableSizeBytes = 1 << 20 })
	before := lowprio.ThreadsLowered()
	const keys = 3000
	val := make([]byte, 512)
	for round := range 6 {
		var batch []row.Mutation
		for k := range keys {
			batch = append(batch, row.Mutation{Key: fmt.Appendf(nil, "key%05d", k),
				Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: val, Timestamp: testNow + int64(round)}}}})
			if len(batch) == 500 {
				mustApply(t, db, batch...)
				batch = batch[:0]
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	m := db.pdb.Metrics()
	if m.Compact.Count == 0 {
		t.Fatalf("no compaction ran")
	}
	for k := range keys {
		r, found, err := db.Get(fmt.Appendf(nil, "key%05d", k))
		if err != nil || !found || r.Cells[0].Timestamp != testNow+5 {
			t.Fatalf("key %d: found=%v err=%v row %v", k, found, err, r)
		}
	}
	if n, err := lowprio.Nice(); err != nil || n == 19 {
		t.Logf("thread priorities unknown or lowest already (nice %d, %v): not checked", n, err)
		return
	}
	if runtime.GOOS == "linux" && lowprio.ThreadsLowered() == before {
		t.Fatalf("%d compactions ran and no thread was lowered", m.Compact.Count)
	}
}
