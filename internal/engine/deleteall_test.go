package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/row"
)

// DeleteAll tombstones every row at ts, more than a batch of them: reads see none of the
// cells older than ts, and those written later (here at ts+1, before and after the
// delete) stay.
func TestDeleteAllTombstonesEveryRowAtItsTimestamp(t *testing.T) {
	for _, name := range []string{"memory", "lsm", "btree"} {
		t.Run(name, func(t *testing.T) {
			e, err := catalog.Open(name, t.TempDir(), catalog.Options{Options: engine.Options{DiskReserveBytes: -1}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			testDeleteAll(t, e)
		})
	}
}

func testDeleteAll(t *testing.T, e engine.Engine) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	// Timestamps near now: the engine purges tombstones older than its grace period.
	const rows, span = 2500, int64(1000)
	ts := time.Now().UnixMicro()
	later := map[string]bool{}
	for i := range rows {
		key := fmt.Appendf(nil, "k%05d", i)
		cell := row.Cell{Name: []byte("c"), Value: []byte("old"), Timestamp: ts - 1 - rng.Int64N(span)}
		if err := e.Apply([]row.Mutation{{Key: key, Row: row.Row{Cells: []row.Cell{cell}}}}); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(10) == 0 { // written after the flush's timestamp
			later[string(key)] = true
			cell := row.Cell{Name: []byte("d"), Value: []byte("new"), Timestamp: ts + 1}
			if err := e.Apply([]row.Mutation{{Key: key, Row: row.Row{Cells: []row.Cell{cell}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := engine.DeleteAll(e, ts)
	if err != nil || n != rows {
		t.Fatalf("DeleteAll: %d rows, %v; want %d", n, err, rows)
	}
	for i := range rows {
		key := fmt.Sprintf("k%05d", i)
		r, _, err := e.Get([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		v := r.Visible(ts + 2)
		switch {
		case r.Deleted != ts:
			t.Fatalf("%s: row tombstone %d, want %d", key, r.Deleted, ts)
		case later[key] && (len(v) != 1 || string(v[0].Value) != "new"):
			t.Fatalf("%s: the write after ts did not survive: %+v", key, v)
		case !later[key] && len(v) != 0:
			t.Fatalf("%s: cells older than ts survived: %+v", key, v)
		}
	}
	// Again at the same ts: every row is already deleted then.
	if n, err := engine.DeleteAll(e, ts); err != nil || n != 0 {
		t.Fatalf("DeleteAll again: %d rows, %v; want 0", n, err)
	}
}
