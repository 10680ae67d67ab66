package lsm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// dataBlocks writes rows of about 1 KB to a store opened with blockSize, flushes it and
// returns the data blocks of its tables.
func dataBlocks(t *testing.T, blockSize, rows int) uint64 {
	t.Helper()
	db := openTest(t, t.TempDir(), newTestClock(), func(o *Options) { o.BlockSizeBytes = blockSize })
	val := make([]byte, 1000)
	for i := range val {
		val[i] = byte('a' + (i*7+i/13)%26) // not all one byte, so that compression keeps some size
	}
	var batch []row.Mutation
	for i := range rows {
		batch = append(batch, row.Mutation{Key: fmt.Appendf(nil, "user%08d", i),
			Row: row.Row{Cells: []row.Cell{{Name: []byte("v"), Value: val, Timestamp: testNow}}}})
	}
	if err := db.Apply(batch); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	tables, err := db.pdb.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var blocks uint64
	for _, level := range tables {
		for _, tb := range level {
			blocks += tb.Properties.NumDataBlocks
		}
	}
	return blocks
}

func TestBlockSizeSetsTheTablesDataBlocks(t *testing.T) {
	const rows = 2000 // about 2 MB of rows
	small, large := dataBlocks(t, 0, rows), dataBlocks(t, 32<<10, rows)
	// Pebble's default 4 KiB blocks hold 3-4 rows of 1 KB; 32 KiB blocks about 30.
	if small < rows/5 {
		t.Errorf("default block size: %d data blocks for %d rows, want at least %d", small, rows, rows/5)
	}
	if large > rows/20 {
		t.Errorf("32 KiB blocks: %d data blocks for %d rows, want at most %d", large, rows, rows/20)
	}
}

func TestOpenRejectsABlockSizeOutOfBounds(t *testing.T) {
	for _, size := range []int{-1, MinBlockSizeBytes - 1, MaxBlockSizeBytes + 1} {
		db, err := Open(t.TempDir(), Options{BlockSizeBytes: size})
		if err == nil {
			db.Close()
			t.Errorf("block size %d: opened, want an error", size)
			continue
		}
		if !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("block size %d: %v, want engine.ErrInvalid", size, err)
		}
	}
}
