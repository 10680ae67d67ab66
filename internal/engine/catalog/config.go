package catalog

import (
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
)

// OptionsFor returns the engine options cfg configures (cfg validated), leaving Logger
// and Tiers to the caller.
func OptionsFor(cfg config.Config) Options {
	durability, _ := engine.ParseDurability(cfg.Durability) // validated by config
	return Options{
		Options: engine.Options{
			GracePeriod:      cfg.TombstoneGrace,
			Durability:       durability,
			SyncInterval:     cfg.SyncInterval,
			DiskReserveBytes: cfg.EngineDiskReserve(),
		},
		LSMCacheSizeBytes:         cfg.LSMCacheSizeBytes,
		LSMRowCacheBytes:          rowCache(cfg.LSMRowCacheBytes),
		BTreeRowCacheBytes:        rowCache(cfg.BTreeRowCacheBytes),
		BTreeWriteBufferBytes:     cfg.BTreeWriteBufferBytes,
		LSMMemTableSizeBytes:      cfg.LSMMemTableSizeBytes,
		LSMBlockSizeBytes:         int(cfg.LSMBlockSizeBytes),
		LSMLowPriorityCompactions: cfg.BackgroundPriority == "low",
		LSMWALDir:                 cfg.LSMWALDir,
		LSMWALFailoverDir:         cfg.LSMWALFailoverDir,
		LSMSecondDir:              cfg.LSMSecondDir,
		LSMSecondDirPolicy:        lsm.SecondDirPolicy(cfg.LSMSecondDirPolicy),
		MemorySnapshot:            cfg.MemorySnapshot,
		MemorySnapshotInterval:    cfg.MemorySnapshotInterval,
	}
}

// rowCache maps a configured row cache size, where 0 disables the cache, to the engine's
// option, where 0 means the default.
func rowCache(configured int64) int64 {
	if configured == 0 {
		return -1
	}
	return configured
}
