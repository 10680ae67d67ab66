// Command lsm-pieces measures how many sstables a point read of a kura lsm store must
// look into, for the keys a YCSB workload reads: every table that holds a version of the
// key (a merge operand, a value, a tombstone) is a data block the read needs, from the
// block cache, the page cache or the device. kura's writes are blind merge operands, so a
// row updated since its last compaction into the bottom level has versions in two or more
// tables until compactions merge them.
//
// It reads every sstable in the given directories (a copy of a store's directories: the
// tables do not change once written, so `cp -al` of a live store's directories is a
// snapshot that costs no I/O, give or take a table compacted away in between), counts the
// tables per key (memtables are not counted), then draws
// the workload's reads and reports, over the reads of keys held by the slow store and not
// by the fast one, the mean number of tables and the share of reads needing two or more.
//
//	go run ./scripts/lsm-pieces -slow SNAP/slow [-fast SNAP/fast] -records 3000000 -zipf 0.99
//
// The workload is `kura bench`'s write-heavy (YCSB A: 50/50 reads and updates) unless
// -w names another; its draws are the same as `kura bench run`'s for the same seed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/engine/lsm"
)

func main() {
	slow := flag.String("slow", "", "directories (comma-separated) of the slow (or only) store's sstables")
	fast := flag.String("fast", "", "directories of the fast tier's sstables: reads of keys found there are left out")
	workload := flag.String("w", "write-heavy", "named workload")
	records := flag.Int64("records", 0, "recordcount")
	zipf := flag.String("zipf", "0.99", "zipfianconstant")
	reads := flag.Int64("ops", 1_000_000, "operations to draw")
	seed := flag.Int64("seed", 42, "seed of the drawn operations")
	flag.Parse()
	if err := run(*slow, *fast, *workload, *records, *zipf, *reads, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "lsm-pieces:", err)
		os.Exit(1)
	}
}

func run(slowDir, fastDir, name string, records int64, zipf string, ops, seed int64) error {
	if slowDir == "" || records <= 0 {
		return fmt.Errorf("need -slow and -records")
	}
	slow, err := countTables(slowDir)
	if err != nil {
		return err
	}
	fast := map[string]int{}
	if fastDir != "" {
		if fast, err = countTables(fastDir); err != nil {
			return err
		}
	}
	w, err := bench.NamedWorkload(name)
	if err != nil {
		return err
	}
	w.RecordCount = records
	if err := w.Set("zipfianconstant", zipf); err != nil {
		return err
	}
	g, err := bench.NewGenerator(w, ops)
	if err != nil {
		return err
	}
	hist := map[int]int64{}
	var slowReads, fastReads, missing, tables int64
	s := g.Stream(seed)
	for range ops {
		op := s.Next()
		if op.Kind == bench.OpRead {
			switch n := slow[op.Key]; {
			case fast[op.Key] > 0:
				fastReads++
			case n == 0:
				missing++
			default:
				slowReads++
				tables += int64(n)
				hist[n]++
			}
		}
		s.Done(op)
	}
	fmt.Printf("%d keys in %s, %d in the fast tier's tables\n", len(slow), slowDir, len(fast))
	fmt.Printf("reads drawn: %d of keys in the fast tier, %d in neither, %d of keys in the slow store only\n", fastReads, missing, slowReads)
	if slowReads == 0 {
		return nil
	}
	fmt.Printf("tables per slow read: mean %.3f\n", float64(tables)/float64(slowReads))
	ns := make([]int, 0, len(hist))
	for n := range hist {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		fmt.Printf("  %d table(s): %.2f%% of slow reads\n", n, 100*float64(hist[n])/float64(slowReads))
	}
	var keyTables, twoPlus int64
	for _, n := range slow {
		keyTables += int64(n)
		if n >= 2 {
			twoPlus++
		}
	}
	fmt.Printf("over all keys (uniform): mean %.3f tables, %.2f%% in two or more\n",
		float64(keyTables)/float64(len(slow)), 100*float64(twoPlus)/float64(len(slow)))
	return nil
}

// countTables returns, per user key, how many sstables of dirs (a comma-separated list)
// hold a version of it. Symbolic links are skipped: the free-space placement leaves one
// in the data directory for each table in the second directory, so a store placed that
// way is read as "DATA,SECOND".
func countTables(dirs string) (map[string]int, error) {
	counts := map[string]int{}
	for _, dir := range strings.Split(dirs, ",") {
		names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if fi, err := os.Lstat(name); err != nil || fi.Mode()&os.ModeSymlink != 0 {
				continue
			}
			if err := countTable(name, counts); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return counts, nil
}

func countTable(name string, counts map[string]int) error {
	r, err := lsm.OpenTable(name)
	if err != nil {
		return err
	}
	defer r.Close()
	it, err := r.NewPointIter(context.Background(), sstable.IterOptions{})
	if err != nil {
		return err
	}
	defer it.Close()
	var last string
	for kv := it.First(); kv != nil; kv = it.Next() {
		k := string(kv.K.UserKey)
		if k != last { // versions of one key within one table count once
			counts[strings.Clone(k)]++
			last = k
		}
	}
	return it.Error()
}
