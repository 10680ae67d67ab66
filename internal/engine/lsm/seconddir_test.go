package lsm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/row"
)

// secondDir runs the suites with sstables placed in a second directory by policy p.
func secondDir(p lsm.SecondDirPolicy) enginetest.Factory {
	return enginetest.Factory{
		Name:       "lsm-second-dir-" + string(p),
		Persistent: true,
		CrashSafe:  true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return lsm.Open(dir, lsm.Options{Options: o, SecondDir: dir + ".second", SecondDirPolicy: p})
		},
	}
}

func TestConformanceSecondDir(t *testing.T) {
	for _, p := range []lsm.SecondDirPolicy{lsm.FreeSpace, lsm.LowerLevels} {
		t.Run(string(p), func(t *testing.T) { enginetest.RunConformance(t, secondDir(p)) })
	}
}

func TestMetamorphicSecondDir(t *testing.T) {
	enginetest.RunMetamorphic(t, secondDir(lsm.FreeSpace), secondDir(lsm.LowerLevels))
}

// fillAndCompact writes n keys in several flushed batches and returns the rows.
func fillAndCompact(t *testing.T, db *lsm.DB, n int) {
	t.Helper()
	for b := range 8 {
		var muts []row.Mutation
		for i := range n / 8 {
			k := fmt.Appendf(nil, "k%06d", b*n/8+i)
			muts = append(muts, row.Mutation{Key: k, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: k, Timestamp: 1}}}})
		}
		if err := db.Apply(muts); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// tables lists the sstable names in dir (links included) and how many are links.
func tables(t *testing.T, dir string) (names []string, links int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			names = append(names, e.Name())
			if e.Type()&os.ModeSymlink != 0 {
				links++
			}
		}
	}
	return names, links
}

// FreeSpace: with two directories on one file system (equal free space) about half the
// tables go to the second one, each with its link, and a table pebble deletes leaves
// nothing behind in either directory.
func TestFreeSpaceSpreadsTablesAndRemovesThemWhole(t *testing.T) {
	dir := t.TempDir()
	data, second := filepath.Join(dir, "data"), filepath.Join(dir, "second")
	db, err := lsm.Open(data, lsm.Options{SecondDir: second, SecondDirPolicy: lsm.FreeSpace})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillAndCompact(t, db, 4000)
	names, links := tables(t, data)
	far, _ := tables(t, second)
	// Each table picks its directory by a coin weighted by free space (here even), so
	// 8 tables all land on one side in about 1 run in 128: flush more until both
	// directories hold some, up to 40 more (a fair coin fails that once in 2^40).
	for extra := 0; (links == 0 || links == len(names)) && extra < 40; extra++ {
		k := fmt.Appendf(nil, "extra%02d", extra)
		if err := db.Apply([]row.Mutation{{Key: k, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: k, Timestamp: 1}}}}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		names, links = tables(t, data)
		far, _ = tables(t, second)
	}
	if links == 0 || links == len(names) || len(far) == 0 {
		t.Fatalf("%d tables, %d of them links, %d tables in the second directory: want some in each directory", len(names), links, len(far))
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	names, links = tables(t, data)
	far, _ = tables(t, second)
	for deadline := time.Now().Add(10 * time.Second); links != len(far) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // pebble deletes obsolete tables in the background
		names, links = tables(t, data)
		far, _ = tables(t, second)
	}
	if links != len(far) {
		t.Errorf("after compaction %d links for %d tables in the second directory: a deleted table was left behind", links, len(far))
	}
	for i := range 4000 {
		k := fmt.Appendf(nil, "k%06d", i)
		if r, ok, err := db.Get(k); err != nil || !ok || string(r.Cells[0].Value) != string(k) {
			t.Fatalf("get %s: %v %v %v", k, r, ok, err)
		}
	}
	t.Logf("%d tables after compaction, %d in the second directory", len(names), len(far))
}

// LowerLevels: once compacted to the bottom level, the tables live in the second directory.
func TestLowerLevelsPutsTheBottomInTheSecondDir(t *testing.T) {
	dir := t.TempDir()
	data, second := filepath.Join(dir, "data"), filepath.Join(dir, "second")
	db, err := lsm.Open(data, lsm.Options{SecondDir: second, SecondDirPolicy: lsm.LowerLevels})
	if err != nil {
		t.Fatal(err)
	}
	fillAndCompact(t, db, 4000)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// Pebble deletes obsolete tables in the background.
	deadline := time.Now().Add(10 * time.Second)
	for names, _ := tables(t, data); len(names) != 0; names, _ = tables(t, data) {
		if time.Now().After(deadline) {
			t.Fatalf("tables left in the data directory after a full compaction: %v", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
	far, _ := tables(t, second)
	if len(far) == 0 {
		t.Fatal("no table in the second directory after a full compaction")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = lsm.Open(data, lsm.Options{SecondDir: second, SecondDirPolicy: lsm.LowerLevels})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if r, ok, err := db.Get([]byte("k000123")); err != nil || !ok || string(r.Cells[0].Value) != "k000123" {
		t.Fatalf("after reopen: %v %v %v", r, ok, err)
	}
}

func TestSecondDirNeedsAPolicy(t *testing.T) {
	dir := t.TempDir()
	if _, err := lsm.Open(dir, lsm.Options{SecondDir: dir + ".2"}); err == nil {
		t.Error("a second directory without a policy was accepted")
	}
	if _, err := lsm.ParseSecondDirPolicy("round-robin"); err == nil {
		t.Error("an unknown policy parsed")
	}
}

// Stats count the block cache's lookups and the compactions' reads, which tell where a
// store's device reads go.
func TestStatsCountBlockCacheAndCompactionReads(t *testing.T) {
	db, err := lsm.Open(t.TempDir(), lsm.Options{RowCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillAndCompact(t, db, 800)
	before := db.Stats()
	if _, _, err := db.Get([]byte("k000001")); err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	if after.BlockCacheHits+after.BlockCacheMisses <= before.BlockCacheHits+before.BlockCacheMisses {
		t.Errorf("a read of a flushed key did not look up the block cache: %+v then %+v", before, after)
	}
	fillAndCompact(t, db, 800) // the same keys again: compacting must merge, not just move files
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := db.Stats().CompactionReadBytes; got <= 0 {
		t.Errorf("compaction read %d bytes", got)
	}
}

// Stats report the read amplification that stacked flushes leave and compactions remove,
// and no compaction debt once everything is compacted.
func TestStatsReportReadAmpAndCompactionDebt(t *testing.T) {
	db, err := lsm.Open(t.TempDir(), lsm.Options{RowCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if s := db.Stats(); s.ReadAmp != 0 || s.CompactionDebtBytes != 0 {
		t.Errorf("empty store: read amp %d, debt %d", s.ReadAmp, s.CompactionDebtBytes)
	}
	for v := range 3 { // the same keys in three flushes: three overlapping L0 files
		var muts []row.Mutation
		for i := range 100 {
			k := fmt.Appendf(nil, "k%06d", i)
			muts = append(muts, row.Mutation{Key: k, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: k, Timestamp: int64(v + 1)}}}})
		}
		if err := db.Apply(muts); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if s := db.Stats(); s.ReadAmp < 2 { // pebble may already have merged some of them
		t.Errorf("three overlapping flushes: read amp %d, want at least 2", s.ReadAmp)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.ReadAmp != 1 || s.CompactionDebtBytes != 0 {
		t.Errorf("compacted: read amp %d (want 1), debt %d (want 0)", s.ReadAmp, s.CompactionDebtBytes)
	}
}

// CacheSizeBytes is left for blocks: pebble reserves the memtables' size in its block
// cache, and a cache smaller than them used to cache nothing while writes filled them.
func TestBlockCacheKeepsItsSizeNextToFullMemtables(t *testing.T) {
	db, err := lsm.Open(t.TempDir(), lsm.Options{RowCacheBytes: -1, CacheSizeBytes: 1 << 20, MemTableSizeBytes: 4 << 20,
		Options: engine.Options{Durability: engine.Periodic}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillAndCompact(t, db, 800) // flushed: reads go through the block cache
	big := make([]byte, 1000)
	for i := range 3000 { // about 3 MB: the memtable grows toward its 4 MiB
		k := fmt.Appendf(nil, "w%06d", i)
		m := row.Mutation{Key: k, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: big, Timestamp: 1}}}}
		if err := db.Apply([]row.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Stats().BlockCacheHits
	for range 3 {
		if _, _, err := db.Get([]byte("k000001")); err != nil {
			t.Fatal(err)
		}
	}
	if hits := db.Stats().BlockCacheHits - before; hits == 0 {
		t.Error("three reads of one flushed key hit the block cache never: the memtable took it all")
	}
}
