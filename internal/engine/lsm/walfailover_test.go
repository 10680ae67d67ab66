package lsm

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// A store with a WAL failover directory opens with pebble's failover configured there,
// keeps every synced write across a reopen, and holds the directory against a second
// store, as it holds its data directory.
func TestWALFailoverDirIsUsedAndLocked(t *testing.T) {
	dir, failover := t.TempDir(), filepath.Join(t.TempDir(), "failover")
	clk := newTestClock()
	db := openTest(t, dir, clk, func(o *Options) { o.WALFailoverDir = failover })
	if po := db.pebbleOptions(nil); po.WALFailover == nil || po.WALFailover.Secondary.Dirname != failover {
		t.Fatalf("pebble's WAL failover is %+v, want its secondary in %s", po.WALFailover, failover)
	}
	for i := range 100 {
		mustApply(t, db, row.Mutation{Key: []byte(fmt.Sprintf("k%03d", i)), Row: row.Row{Cells: []row.Cell{live("v", "x", 1)}}})
	}
	other := t.TempDir()
	if _, err := Open(other, Options{WALFailoverDir: failover}); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("a second store on the same failover directory: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk, func(o *Options) { o.WALFailoverDir = failover })
	for i := range 100 {
		if _, found, err := db.Get([]byte(fmt.Sprintf("k%03d", i))); err != nil || !found {
			t.Fatalf("after a reopen k%03d: found %v, %v", i, found, err)
		}
	}
}
