package catalog

import (
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/tiered"
)

// The tiers' stores share the caches by Tiers.FastCacheShare (a quarter to the fast tier
// unless set) and the memtable size three to one, so that the two take the memory one
// store would.
func TestTierStoresShareTheCachesAndMemtable(t *testing.T) {
	o := Options{LSMCacheSizeBytes: 1000, LSMRowCacheBytes: 400, LSMMemTableSizeBytes: 64 << 20, Tiers: &Tiers{}}
	for _, c := range []struct {
		share              float64
		fastBlock, fastRow int64
	}{{0, 250, 100}, {0.1, 100, 40}, {0.5, 500, 200}} {
		o.Tiers.FastCacheShare = c.share
		fast, slow := tierOptions(o, engine.Options{}, tiered.Fast), tierOptions(o, engine.Options{}, tiered.Slow)
		if fast.CacheSizeBytes != c.fastBlock || fast.RowCacheBytes != c.fastRow ||
			slow.CacheSizeBytes != 1000-c.fastBlock || slow.RowCacheBytes != 400-c.fastRow {
			t.Errorf("share %v: fast tier's caches %d and %d, slow tier's %d and %d", c.share,
				fast.CacheSizeBytes, fast.RowCacheBytes, slow.CacheSizeBytes, slow.RowCacheBytes)
		}
		if fast.MemTableSizeBytes != 16<<20 || slow.MemTableSizeBytes != 48<<20 {
			t.Errorf("share %v: memtables %d and %d, want 16 and 48 MiB", c.share, fast.MemTableSizeBytes, slow.MemTableSizeBytes)
		}
	}
}

// Only the fast tier's store drops its page cache, and only when asked: the page cache
// is for the slow tier, whose misses cost slow-device reads.
func TestOnlyTheFastTierDropsItsPageCache(t *testing.T) {
	for _, drop := range []bool{false, true} {
		o := Options{Tiers: &Tiers{DropFastPageCache: drop}}
		fast, slow := tierOptions(o, engine.Options{}, tiered.Fast), tierOptions(o, engine.Options{}, tiered.Slow)
		if fast.DropPageCache != drop || slow.DropPageCache {
			t.Errorf("DropFastPageCache %v: the fast store drops %v, the slow one %v", drop, fast.DropPageCache, slow.DropPageCache)
		}
	}
}
