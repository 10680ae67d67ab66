// Package catalog opens kura's storage engines by name, so that the node, the tools and the
// cross-engine tests choose an engine with a string ("lsm", "btree", "memory") without each
// importing every engine package.
package catalog

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/engine/memory"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/ring"
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
	// BTreeRowCacheBytes is the btree engine's row cache (0: the engine's default,
	// negative: none).
	BTreeRowCacheBytes int64
	// BTreeWriteBufferBytes is the btree engine's write buffer (0: none; see
	// btree.Options.WriteBufferBytes).
	BTreeWriteBufferBytes int64
	// LSMMemTableSizeBytes is the lsm engine's memtable size (0: the engine's default).
	LSMMemTableSizeBytes int64
	// LSMLowPriorityCompactions runs the lsm engine's compactions and flushes at the
	// lowest CPU priority (lsm.Options.LowPriorityCompactions).
	LSMLowPriorityCompactions bool
	// LSMBlockSizeBytes is the lsm engine's sstable block size (0: the engine's default;
	// lsm.Options.BlockSizeBytes).
	LSMBlockSizeBytes int
	// Logger receives engines' own log lines (the lsm engine's: pebble's write stalls,
	// background errors); nil discards them.
	Logger *slog.Logger
	// LSMWALDir is the lsm engine's write-ahead log directory ("": in its data directory).
	LSMWALDir string
	// LSMWALFailoverDir is where the lsm engine's log fails over while its own is slow
	// ("": no failover; lsm.Options.WALFailoverDir).
	LSMWALFailoverDir string
	// LSMSecondDir and LSMSecondDirPolicy place some of the lsm engine's sstables in a
	// second directory (lsm.Options.SecondDir).
	LSMSecondDir       string
	LSMSecondDirPolicy lsm.SecondDirPolicy
	// MemorySnapshot makes the memory engine load a snapshot at open and write one at
	// close and every MemorySnapshotInterval.
	MemorySnapshot bool
	// MemorySnapshotInterval is the memory engine's snapshot period; 0 only at close.
	MemorySnapshotInterval time.Duration
	// Tiers, if set, splits the lsm engine over a fast and a slow directory (package
	// tiered). The caches and the memtable size are shared out between the tiers' stores
	// (Tiers.FastCacheShare, tierMemShare).
	Tiers *Tiers
}

// Tiers place the lsm engine's rows on two devices.
type Tiers struct {
	// FastDir holds the fast tier.
	FastDir string
	// SlowDir holds the slow tier; empty means the engine's directory.
	SlowDir string
	// Tracker counts reads for the migrator; nil counts nothing.
	Tracker *access.Tracker
	// FastCacheShare is the fast tier's share of the block and row caches (0: 0.25).
	FastCacheShare float64
	// CountWrites counts writes in Tracker too (tiered.Options.CountWrites).
	CountWrites bool
	// DropFastPageCache drops the fast tier's file pages from the operating system's
	// page cache once read or synced (lsm.Options.DropPageCache), so that the page cache
	// holds the slow tier's pages, whose misses cost slow-device reads.
	DropFastPageCache bool
}

// Open opens the engine called name with its files in dir.
func Open(name, dir string, o Options) (engine.Engine, error) {
	switch name {
	case "lsm":
		if o.Tiers != nil {
			return openTiered(dir, o)
		}
		return lsm.Open(dir, lsmOptions(o, o.Options, 1, 1))
	case "btree":
		return btree.Open(dir, btree.Options{Options: o.Options, RowCacheBytes: o.BTreeRowCacheBytes,
			WriteBufferBytes: o.BTreeWriteBufferBytes})
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
func Role(name string) ring.Role {
	switch name {
	case "lsm":
		return ring.WriteOptimized
	case "btree":
		return ring.ReadOptimized
	case "memory":
		return ring.InMemory
	}
	return ring.RoleUnknown
}

// lsmOptions are the lsm engine's settings from o, with eo as the shared ones, the
// caches scaled by cacheShare and the memtable by memShare (1 for a plain lsm engine).
func lsmOptions(o Options, eo engine.Options, cacheShare, memShare float64) lsm.Options {
	return lsm.Options{
		Options:                eo,
		CacheSizeBytes:         scale(o.LSMCacheSizeBytes, cacheShare),
		RowCacheBytes:          scale(o.LSMRowCacheBytes, cacheShare),
		MemTableSizeBytes:      uint64(scale(o.LSMMemTableSizeBytes, memShare)),
		BlockSizeBytes:         o.LSMBlockSizeBytes,
		LowPriorityCompactions: o.LSMLowPriorityCompactions,
		WALDir:                 o.LSMWALDir,
		WALFailoverDir:         o.LSMWALFailoverDir,
		SecondDir:              o.LSMSecondDir,
		SecondDirPolicy:        o.LSMSecondDirPolicy,
		Logger:                 o.Logger,
	}
}

// scale takes a share of a cache size, leaving 0 (the default) and negative (none) as
// they are.
func scale(size int64, share float64) int64 {
	if size <= 0 || share == 1 {
		return size
	}
	return max(1, int64(float64(size)*share))
}

// tierMemShare is the share of the memtable size each tier's store gets, so that the two
// take the memory one store would: the slow tier most, since a flush there is slower.
// The caches are shared out by Tiers.FastCacheShare, defaultFastCacheShare unless set:
// the slow tier gets most, since a miss there costs a slow-device read.
var tierMemShare = [2]float64{tiered.Slow: 0.75, tiered.Fast: 0.25}

const defaultFastCacheShare = 0.25

// tierOptions are the lsm settings of tier t's store.
func tierOptions(o Options, eo engine.Options, t tiered.Tier) lsm.Options {
	fast := o.Tiers.FastCacheShare
	if fast <= 0 || fast >= 1 {
		fast = defaultFastCacheShare
	}
	cacheShare := [2]float64{tiered.Slow: 1 - fast, tiered.Fast: fast}
	lo := lsmOptions(o, eo, cacheShare[t], tierMemShare[t])
	lo.DropPageCache = t == tiered.Fast && o.Tiers.DropFastPageCache
	return lo
}

// openTiered opens the lsm engine split over o.Tiers' directories.
func openTiered(dir string, o Options) (engine.Engine, error) {
	if o.LSMWALDir != "" || o.LSMSecondDir != "" || o.LSMWALFailoverDir != "" {
		return nil, fmt.Errorf("%w: a tiered lsm engine keeps each tier's files in its directory: no WAL or second directory", engine.ErrInvalid)
	}
	slow := o.Tiers.SlowDir
	if slow == "" {
		slow = dir
	}
	return tiered.Open(o.Tiers.FastDir, slow, tiered.Options{
		Options:     o.Options,
		Tracker:     o.Tiers.Tracker,
		CountWrites: o.Tiers.CountWrites,
		OpenTier: func(d string, t tiered.Tier, eo engine.Options) (engine.Tierable, error) {
			return lsm.Open(d, tierOptions(o, eo, t))
		},
	})
}
