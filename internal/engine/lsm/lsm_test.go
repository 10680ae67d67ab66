package lsm_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/row"
)

func factory() enginetest.Factory { return factoryWith("lsm", 0, 0) }

// eagerCollapse collapses a key as soon as a read merges two operands, so that the
// shared suites run with collapses racing every write, read, crash and reopen.
func eagerCollapse() enginetest.Factory { return factoryWith("lsm-eager-collapse", 2, 0) }

// tinyRowCache holds a few rows per shard, so that the suites run with the row cache
// evicting all the time; noRowCache reads pebble alone.
func tinyRowCache() enginetest.Factory { return factoryWith("lsm-tiny-row-cache", 0, 64*2048) }
func noRowCache() enginetest.Factory   { return factoryWith("lsm-no-row-cache", 0, -1) }

func factoryWith(name string, collapseOperands int, rowCacheBytes int64) enginetest.Factory {
	return enginetest.Factory{
		Name:       name,
		Persistent: true,
		CrashSafe:  true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return lsm.Open(dir, lsm.Options{Options: o, CollapseOperands: collapseOperands, RowCacheBytes: rowCacheBytes})
		},
	}
}

// The crash child is the eager-collapse engine: crash safety with collapses in flight is
// the stronger claim.
func TestMain(m *testing.M) { enginetest.Main(m, eagerCollapse()) }

func TestConformance(t *testing.T) { enginetest.RunConformance(t, factory()) }
func TestMetamorphic(t *testing.T) { enginetest.RunMetamorphic(t, factory()) }
func TestCorruption(t *testing.T)  { enginetest.RunCorruption(t, factory()) }
func TestCrash(t *testing.T)       { enginetest.RunCrash(t, eagerCollapse()) }

func TestConformanceWithEagerCollapse(t *testing.T) { enginetest.RunConformance(t, eagerCollapse()) }
func TestMetamorphicWithEagerCollapse(t *testing.T) { enginetest.RunMetamorphic(t, eagerCollapse()) }

func TestConformanceRowCache(t *testing.T) {
	enginetest.RunConformance(t, tinyRowCache())
	enginetest.RunConformance(t, noRowCache())
}

func TestMetamorphicRowCache(t *testing.T) {
	enginetest.RunMetamorphic(t, tinyRowCache(), noRowCache())
}

func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, factory()) }

// walElsewhere keeps each engine's write-ahead log in a directory of its own, beside the
// data directory, as --lsm-wal-dir does.
func walElsewhere() enginetest.Factory {
	return enginetest.Factory{
		Name:       "lsm-wal-dir",
		Persistent: true,
		CrashSafe:  true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return lsm.Open(dir, lsm.Options{Options: o, WALDir: dir + ".wal"})
		},
	}
}

func TestConformanceWALDir(t *testing.T) { enginetest.RunConformance(t, walElsewhere()) }

// With WALDir the log files are written there, not in the data directory; a reopen
// replays them; a second engine cannot share the log directory; and moving the log
// directory of an existing store is refused, since its old logs would go unreplayed.
func TestWALDirHoldsTheLog(t *testing.T) {
	root := t.TempDir()
	data, walDir := filepath.Join(root, "data"), filepath.Join(root, "wal")
	open := func(dir, wal string) (*lsm.DB, error) {
		return lsm.Open(dir, lsm.Options{WALDir: wal, Options: engine.Options{Durability: engine.Sync}})
	}
	db, err := open(data, walDir)
	if err != nil {
		t.Fatal(err)
	}
	m := row.Mutation{Key: []byte("k"), Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}
	if err := db.Apply([]row.Mutation{m}); err != nil {
		t.Fatal(err)
	}
	logs := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		return m
	}
	if len(logs(walDir)) == 0 || len(logs(data)) != 0 {
		t.Fatalf("logs in the WAL directory %v, in the data directory %v", logs(walDir), logs(data))
	}
	if _, err := open(filepath.Join(root, "other"), walDir); !errors.Is(err, engine.ErrLocked) {
		t.Errorf("a second engine on the same WAL directory: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open(data, filepath.Join(root, "wal2")); err == nil {
		t.Error("the WAL directory moved without its logs, and the store opened")
	}
	db, err = open(data, walDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok, err := db.Get([]byte("k"))
	if err != nil || !ok || len(got.Cells) != 1 || string(got.Cells[0].Value) != "v" {
		t.Fatalf("after reopening: %v %v %v", got, ok, err)
	}
}

// A write of a cached key leaves it cached with the write merged in, so the next read hits
// and sees it; a write timestamped before the purge horizon invalidates it instead (the
// read that cached the row may have purged a tombstone that shadows the write).
func TestRowCacheKeepsWrittenKeysUpToDate(t *testing.T) {
	clk := enginetest.NewManualClock(enginetest.StartMicros)
	db, err := lsm.Open(t.TempDir(), lsm.Options{Options: engine.Options{Clock: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := clk.Now()
	put := func(v string, ts int64) {
		t.Helper()
		err := db.Apply([]row.Mutation{{Key: []byte("k"), Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte(v), Timestamp: ts}}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func(want string) {
		t.Helper()
		r, found, err := db.Get([]byte("k"))
		if err != nil || !found || string(r.Cells[0].Value) != want {
			t.Fatalf("get: %v %v %v, want %q", r, found, err, want)
		}
	}
	counts := func() (int64, int64) { s := db.Stats(); return s.RowCacheHits, s.RowCacheMisses }
	put("v1", now-2)
	get("v1") // a miss, cached
	put("v2", now-1)
	get("v2")
	if hits, misses := counts(); hits != 1 || misses != 1 {
		t.Fatalf("a read after a write of a cached key: %d hits, %d misses; want 1, 1", hits, misses)
	}
	put("old", now-2*int64(engine.DefaultGracePeriod/time.Microsecond)) // loses to v2, and is older than the horizon
	get("v2")
	if hits, misses := counts(); hits != 1 || misses != 2 {
		t.Fatalf("a read after a write older than the purge horizon: %d hits, %d misses; want 1, 2", hits, misses)
	}
}
