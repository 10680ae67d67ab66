package lsm

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// OpenTable opens one sstable of a store, read-only, for the measurement tools under
// scripts/ (lsm-pieces, sst-layout). The caller closes the reader, which closes the file.
// The store's merger is named but never called: the tools read keys and layouts, not
// merged rows.
func OpenTable(path string) (*sstable.Reader, error) {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	merger := &pebble.Merger{Name: MergerName, Merge: pebble.DefaultMerger.Merge}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{Mergers: sstable.Mergers{merger.Name: merger}})
	if err != nil {
		readable.Close()
		return nil, err
	}
	return r, nil
}
