package memory_test

import (
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/engine/memory"
)

// factory is the engine as most nodes run it: nothing on disk.
func factory() enginetest.Factory {
	return enginetest.Factory{Name: "memory", Persistent: false, CrashSafe: false,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return memory.Open(dir, memory.Options{Options: o})
		}}
}

// snapshotFactory saves a snapshot in dir on Close, so data survives Close and Open; it is
// still not crash safe (a crash loses everything since the last snapshot).
func snapshotFactory() enginetest.Factory {
	return enginetest.Factory{Name: "memory-snapshot", Persistent: true, CrashSafe: false,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return memory.Open(dir, memory.Options{Options: o, SnapshotPath: "memory.snap"})
		}}
}

func TestMain(m *testing.M) { enginetest.Main(m, factory()) }

func TestConformance(t *testing.T)         { enginetest.RunConformance(t, factory()) }
func TestConformanceSnapshot(t *testing.T) { enginetest.RunConformance(t, snapshotFactory()) }
func TestMetamorphic(t *testing.T)         { enginetest.RunMetamorphic(t, factory(), snapshotFactory()) }
func TestCrash(t *testing.T)               { enginetest.RunCrash(t, factory()) }
func TestCorruption(t *testing.T)          { enginetest.RunCorruption(t, snapshotFactory()) }
func BenchmarkEngine(b *testing.B)         { enginetest.RunBenchmarks(b, factory()) }
