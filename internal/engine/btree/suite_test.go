package btree_test

import (
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/enginetest"
)

func factory() enginetest.Factory {
	return enginetest.Factory{Name: "btree", Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return btree.Open(dir, btree.Options{Options: o})
		}}
}

func TestMain(m *testing.M)        { enginetest.Main(m, factory()) }
func TestConformance(t *testing.T) { enginetest.RunConformance(t, factory()) }
func TestMetamorphic(t *testing.T) { enginetest.RunMetamorphic(t, factory()) }
func TestCrash(t *testing.T)       { enginetest.RunCrash(t, factory()) }
func TestCorruption(t *testing.T)  { enginetest.RunCorruption(t, factory()) }
func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, factory()) }
