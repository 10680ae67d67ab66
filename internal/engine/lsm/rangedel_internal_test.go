package lsm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// loadRows writes n rows of about 1 KB under keys "k%06d", in batches of 100.
func loadRows(t *testing.T, db *DB, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1000)
	batch := make([]row.Mutation, 0, 100)
	for i := range n {
		for j := range value {
			value[j] = byte(rng.Uint32()) // incompressible
		}
		batch = append(batch, row.Mutation{Key: fmt.Appendf(nil, "k%06d", i),
			Row: row.Row{Cells: []row.Cell{live("c", string(value), testNow)}}})
		if len(batch) == cap(batch) {
			mustApply(t, db, batch...)
			batch = batch[:0]
		}
	}
	mustApply(t, db, batch...)
}

// A range deletion gives its space back with no Flush or Compact from the caller: its
// memtable is flushed after flushDelayDeleteRange, and the tables it covers are dropped.
// The test waits for that (a background job), with a generous deadline.
func TestDeleteRangeGivesSpaceBackWithoutAFlush(t *testing.T) {
	db := openTest(t, t.TempDir(), newTestClock(), func(o *Options) {
		o.MemTableSizeBytes = 1 << 20
		o.flushDelayDeleteRange = 100 * time.Millisecond
	})
	const rows = 20_000
	loadRows(t, db, rows)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := db.Stats()
	start := time.Now()
	if err := db.DeleteRange([]byte("k001000"), []byte("k019000")); err != nil {
		t.Fatal(err)
	}
	deadline := start.Add(time.Minute)
	var s engine.Stats
	for {
		s = db.Stats()
		if s.DiskBytes < before.DiskBytes/4 && s.RowsEstimate < before.RowsEstimate/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after deleting 90%% of the rows: %d of %d bytes on disk, %d of %d rows estimated\n%s",
				s.DiskBytes, before.DiskBytes, s.RowsEstimate, before.RowsEstimate, db.Report())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("after %v: %d of %d bytes on disk, %d of %d rows estimated", time.Since(start).Round(time.Millisecond),
		s.DiskBytes, before.DiskBytes, s.RowsEstimate, before.RowsEstimate)
	for _, k := range []string{"k000999", "k019000", "k019999"} {
		if _, found, err := db.Get([]byte(k)); err != nil || !found {
			t.Errorf("%s, outside the range: found %t, %v", k, found, err)
		}
	}
}

// A collapse that read a key before a range deletion does not write the row back after
// it: DeleteRange holds the collapser's stripes. Hot keys are read and written while the
// range is deleted again and again; afterwards each key holds only what was written after
// the last deletion.
func TestDeleteRangeRacesNoCollapseBack(t *testing.T) {
	db := openTest(t, t.TempDir(), newTestClock(), func(o *Options) {
		o.CollapseOperands = 2
		o.Durability = engine.Periodic
	})
	const keys, rounds = 8, 200
	key := func(i int) []byte { return fmt.Appendf(nil, "hot%d", i) }
	done := make(chan struct{})
	go func() { // readers merge operands, which queues collapses
		defer close(done)
		for r := range rounds * 4 {
			if _, _, err := db.Get(key(r % keys)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := range rounds {
		batch := make([]row.Mutation, keys)
		for i := range batch {
			batch[i] = row.Mutation{Key: key(i), Row: row.Row{Cells: []row.Cell{live(fmt.Sprintf("r%03d", r), "x", testNow)}}}
		}
		mustApply(t, db, batch...)
		if r%10 == 9 && r < rounds-1 {
			if err := db.DeleteRange([]byte("hot"), []byte("hou")); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-done
	for i := range keys {
		r, _, err := db.Get(key(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Cells) != 10 || string(r.Cells[0].Name) != fmt.Sprintf("r%03d", rounds-10) {
			t.Errorf("%s holds %+v, want the 10 cells written after the last deletion", key(i), r)
		}
	}
	t.Logf("%d keys collapsed", db.Collapsed())
}
