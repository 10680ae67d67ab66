// Command sst-layout prints where each kind of block lies in the sstables of the given
// directories, one line per block or run of data blocks:
//
//	FILE KIND OFFSET LENGTH
//
// KIND is data (a run of adjacent data blocks), index (a partition of a two-level index,
// or the only index block), top-index, filter, range-del, range-key, value, value-index,
// properties, meta-index, blob-ref or footer. OFFSET and LENGTH are bytes, the block's
// trailer included. scripts/io-trace.py joins these with the device's read requests (perf's
// block:block_rq_issue) and the files' extents (filefrag) to say which kinds of block a
// store's device reads fetch.
//
//	go run ./scripts/sst-layout DIR...
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/sstable/block"

	"github.com/kuradb/kura/internal/engine/lsm"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sst-layout DIR...")
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, dir := range os.Args[1:] {
		names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "sst-layout:", err)
			os.Exit(1)
		}
		for _, name := range names {
			if err := layout(out, name); err != nil {
				fmt.Fprintf(os.Stderr, "sst-layout: %s: %v\n", name, err) // compacted away, most likely
			}
		}
	}
}

func layout(out *bufio.Writer, name string) error {
	r, err := lsm.OpenTable(name)
	if err != nil {
		return err
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		return err
	}
	put := func(kind string, h block.Handle) {
		if h.Length > 0 {
			fmt.Fprintf(out, "%s %s %d %d\n", name, kind, h.Offset, h.Length+block.TrailerLen)
		}
	}
	// Data blocks are written back to back: print runs, not blocks.
	var runStart, runEnd uint64
	for i, d := range l.Data {
		end := d.Offset + d.Length + block.TrailerLen
		if i > 0 && d.Offset == runEnd {
			runEnd = end
			continue
		}
		if i > 0 {
			fmt.Fprintf(out, "%s data %d %d\n", name, runStart, runEnd-runStart)
		}
		runStart, runEnd = d.Offset, end
	}
	if len(l.Data) > 0 {
		fmt.Fprintf(out, "%s data %d %d\n", name, runStart, runEnd-runStart)
	}
	kind := "index"
	for _, h := range l.Index {
		put(kind, h)
	}
	put("top-index", l.TopIndex)
	for _, h := range l.Filter {
		put("filter", h.Handle)
	}
	put("range-del", l.RangeDel)
	put("range-key", l.RangeKey)
	for _, h := range l.ValueBlock {
		put("value", h)
	}
	put("value-index", l.ValueIndex)
	put("properties", l.Properties)
	put("meta-index", l.MetaIndex)
	put("blob-ref", l.BlobReferenceIndex)
	put("footer", l.Footer)
	return nil
}
