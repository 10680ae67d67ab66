package tiered

import (
	"slices"
	"sync"
	"sync/atomic"
)

// stripeCount is the number of locks the keys are hashed over. Moves hold one stripe
// exclusively for a moment; readers and writers hold theirs shared.
const stripeCount = 1024

// stripe holds the placement of the keys that hash to it. Its maps change only under
// mu held exclusively.
type stripe struct {
	mu sync.RWMutex
	// fast holds the keys at home on the fast tier, with the bytes each is thought to take
	// there.
	fast keySizes
	// both holds the keys stored in both tiers, being moved to the tier given.
	both map[string]Tier
}

// home returns key's home tier and whether the key is in both tiers. The caller holds mu.
func (s *stripe) home(key []byte) (home Tier, inBoth bool) {
	if t, ok := s.both[string(key)]; ok {
		return t, true
	}
	if _, ok := s.fast.Get(key); ok {
		return Fast, false
	}
	return Slow, false
}

// writeSlotCount is the number of write counters (writeSlot) the keys are hashed over, a
// multiple of stripeCount so that a key's slot lies within its stripe.
const writeSlotCount = 64 * stripeCount

// writeSlot counts the writes to the keys that hash to it, begun and done (moves do not
// count, see DB.mark): a read that saw them equal before and started unchanged after saw
// no write, and the row it read is still the stored one while started has not moved (see
// DB.Get's capture for promotion on read). A capture is spoiled by a write to any key of
// its slot; the slots are finer than the stripes so that few are: with 1,024 stripes,
// captures waiting seconds for their promotion behind a busy slow device were mostly
// spoiled by writes to other keys of their stripe, and the promotions read the slow
// device again, row by row.
//
// ceiling bounds the timestamps the slow tier holds for the slot's keys: the slow tier's
// own bound when the engine opened (engine.TimestampBounded), raised by every write and
// move to the slow tier before its count is done. A write that replaces a whole row and
// whose row tombstone is at or above it shadows all the slow tier has of its key (see
// DB.captureWrites).
type writeSlot struct {
	started, finished atomic.Uint64
	ceiling           atomic.Int64
}

// raise makes the slot's ceiling at least ts and returns what it was.
func (ws *writeSlot) raise(ts int64) int64 {
	for {
		old := ws.ceiling.Load()
		if ts <= old || ws.ceiling.CompareAndSwap(old, ts) {
			return old
		}
	}
}

// hashKey is FNV-1a.
func hashKey(key []byte) uint32 {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return h
}

// stripeOf hashes key to a stripe.
func stripeOf(key []byte) int { return int(hashKey(key) % stripeCount) }

// slotOf hashes key to a write slot, one of its stripe's.
func slotOf(key []byte) int { return int(hashKey(key) % writeSlotCount) }

// stripeSet is the distinct stripes of a batch's keys, in order, so that any two callers
// lock them in the same order.
func stripeSet(keys func(yield func([]byte) bool)) []int {
	idx := make([]int, 0, 8)
	for k := range keys {
		idx = append(idx, stripeOf(k))
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}
