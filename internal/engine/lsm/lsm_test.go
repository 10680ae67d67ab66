package lsm_test

import (
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/lsm"
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
