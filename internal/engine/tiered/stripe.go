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
	fast map[string]int64
	// both holds the keys stored in both tiers, being moved to the tier given.
	both map[string]Tier
	// started and finished count the writes to the stripe's keys, begun and done (moves
	// do not count, see DB.mark): a read that saw them equal before and started unchanged after saw no write,
	// and the row it read is still the stored one while started has not moved (see
	// DB.Get's capture for promotion on read).
	started, finished atomic.Uint64
}

// home returns key's home tier and whether the key is in both tiers. The caller holds mu.
func (s *stripe) home(key []byte) (home Tier, inBoth bool) {
	if t, ok := s.both[string(key)]; ok {
		return t, true
	}
	if _, ok := s.fast[string(key)]; ok {
		return Fast, false
	}
	return Slow, false
}

// stripeOf hashes key to a stripe (FNV-1a).
func stripeOf(key []byte) int {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return int(h % stripeCount)
}

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
