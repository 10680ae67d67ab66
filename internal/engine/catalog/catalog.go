// Package catalog opens kura's storage engines by name, so that the node, the tools and the
// cross-engine tests choose an engine with a string ("lsm", "btree", "memory") without each
// importing every engine package.
package catalog

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/engine/memory"
)

// Names lists the engines in the order the docs present them.
var Names = []string{"lsm", "btree", "memory"}

// Options are the settings of every engine; each engine reads its own and ignores the rest.
type Options struct {
	engine.Options
	// LSMCacheSizeBytes is the lsm engine's block cache (0: the engine's default).
	LSMCacheSizeBytes int64
	// LSMRowCacheBytes is the lsm engine's row cache (0: the engine's default, negative:
	// none).
	LSMRowCacheBytes int64
	// LSMMemTableSizeBytes is the lsm engine's memtable size (0: the engine's default).
	LSMMemTableSizeBytes int64
	// Logger receives engines' own log lines (the lsm engine's: pebble's write stalls,
	// background errors); nil discards them.
	Logger *slog.Logger
	// LSMWALDir is the lsm engine's write-ahead log directory ("": in its data directory).
	LSMWALDir string
	// MemorySnapshot makes the memory engine load a snapshot at open and write one at
	// close and every MemorySnapshotInterval.
	MemorySnapshot bool
	// MemorySnapshotInterval is the memory engine's snapshot period; 0 only at close.
	MemorySnapshotInterval time.Duration
}

// Open opens the engine called name with its files in dir.
func Open(name, dir string, o Options) (engine.Engine, error) {
	switch name {
	case "lsm":
		return lsm.Open(dir, lsm.Options{
			Options:           o.Options,
			CacheSizeBytes:    o.LSMCacheSizeBytes,
			RowCacheBytes:     o.LSMRowCacheBytes,
			MemTableSizeBytes: uint64(o.LSMMemTableSizeBytes),
			WALDir:            o.LSMWALDir,
			Logger:            o.Logger,
		})
	case "btree":
		return btree.Open(dir, btree.Options{Options: o.Options})
	case "memory":
		mo := memory.Options{Options: o.Options, SnapshotInterval: o.MemorySnapshotInterval}
		if o.MemorySnapshot {
			mo.SnapshotPath = filepath.Join(dir, "snapshot")
		}
		return memory.Open(dir, mo)
	}
	return nil, fmt.Errorf("%w: unknown engine %q (want lsm, btree or memory)", engine.ErrInvalid, name)
}

// Role returns the role of the engine called name without opening it.
func Role(name string) engine.Role {
	switch name {
	case "lsm":
		return engine.WriteOptimized
	case "btree":
		return engine.ReadOptimized
	case "memory":
		return engine.InMemory
	}
	return engine.RoleUnknown
}
