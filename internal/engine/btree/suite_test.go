package btree_test

import (
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/enginetest"
)

func factory() enginetest.Factory { return factoryWith("btree", 0) }

// tinyRowCache holds a few rows per shard, so that the suites run with the row cache
// evicting all the time; noRowCache reads the file alone.
func tinyRowCache() enginetest.Factory { return factoryWith("btree-tiny-row-cache", 64*2048) }
func noRowCache() enginetest.Factory   { return factoryWith("btree-no-row-cache", -1) }

func factoryWith(name string, rowCacheBytes int64) enginetest.Factory {
	return enginetest.Factory{Name: name, Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return btree.Open(dir, btree.Options{Options: o, RowCacheBytes: rowCacheBytes})
		}}
}

func TestMain(m *testing.M)        { enginetest.Main(m, factory()) }
func TestConformance(t *testing.T) { enginetest.RunConformance(t, factory()) }
func TestMetamorphic(t *testing.T) { enginetest.RunMetamorphic(t, factory()) }

func TestConformanceRowCache(t *testing.T) {
	enginetest.RunConformance(t, tinyRowCache())
	enginetest.RunConformance(t, noRowCache())
}

func TestMetamorphicRowCache(t *testing.T) {
	enginetest.RunMetamorphic(t, tinyRowCache(), noRowCache())
}
func TestCrash(t *testing.T)       { enginetest.RunCrash(t, factory()) }
func TestCorruption(t *testing.T)  { enginetest.RunCorruption(t, factory()) }
func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, factory()) }
