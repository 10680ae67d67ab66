package btree_test

import (
	"testing"
	"time"

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

// smallBuffer flushes its write buffer every few writes, so that the suites run with
// rows moving from the buffer to the tree all the time; largeBuffer holds every row a
// suite writes in the buffer (and the journal) until a Flush, or a reopen replays it.
func smallBuffer() enginetest.Factory { return bufferedWith("btree-small-write-buffer", 4<<10, 0) }
func largeBuffer() enginetest.Factory { return bufferedWith("btree-large-write-buffer", 64<<20, -1) }

func bufferedWith(name string, bufferBytes, rowCacheBytes int64) enginetest.Factory {
	return enginetest.Factory{Name: name, Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return btree.Open(dir, btree.Options{Options: o, RowCacheBytes: rowCacheBytes,
				WriteBufferBytes: bufferBytes, WriteBufferFlushInterval: time.Hour})
		}}
}

func TestMain(m *testing.M)        { enginetest.Main(m, factory(), smallBuffer(), largeBuffer()) }
func TestConformance(t *testing.T) { enginetest.RunConformance(t, factory()) }
func TestMetamorphic(t *testing.T) { enginetest.RunMetamorphic(t, factory()) }

func TestConformanceRowCache(t *testing.T) {
	enginetest.RunConformance(t, tinyRowCache())
	enginetest.RunConformance(t, noRowCache())
}

func TestMetamorphicRowCache(t *testing.T) {
	enginetest.RunMetamorphic(t, tinyRowCache(), noRowCache())
}
func TestConformanceWriteBuffer(t *testing.T) {
	enginetest.RunConformance(t, smallBuffer())
	enginetest.RunConformance(t, largeBuffer())
}

func TestMetamorphicWriteBuffer(t *testing.T) {
	enginetest.RunMetamorphic(t, smallBuffer(), largeBuffer())
}

func TestCrashWriteBuffer(t *testing.T) {
	enginetest.RunCrash(t, smallBuffer())
	enginetest.RunCrash(t, largeBuffer())
}

func TestCrash(t *testing.T)       { enginetest.RunCrash(t, factory()) }
func TestCorruption(t *testing.T)  { enginetest.RunCorruption(t, factory()) }
func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, factory()) }

// BenchmarkEngineWriteBuffer is BenchmarkEngine with a 64 MiB write buffer, to set beside
// it: go test -run XXX -bench 'BenchmarkEngine' ./internal/engine/btree.
func BenchmarkEngineWriteBuffer(b *testing.B) {
	enginetest.RunBenchmarks(b, bufferedWith("btree-write-buffer", 64<<20, 0))
}
