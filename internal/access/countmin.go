package access

import "math"

// depth is the number of counters a key maps to; its estimate is the least of them.
const depth = 4

// countMin is a count-min sketch of 16-bit counters with conservative update: an
// addition raises only those of a key's counters that hold its current estimate, so an
// estimate never falls below the key's true count (until it saturates at 65,535) and
// exceeds it less often than with plain updates. Unlike the 4-bit sketch of the row
// cache (internal/sketch), which only compares keys, these counts are read as counts: K
// can be more than 15, and a ranking needs room above it.
type countMin struct {
	table []uint16
	mask  uint64 // len(table)-1; the length is a power of two
}

func newCountMin(counters int) *countMin {
	n := 64
	for n < counters {
		n <<= 1
	}
	return &countMin{table: make([]uint16, n), mask: uint64(n - 1)}
}

// index returns the position of h's i-th counter: double hashing over the two halves of
// h (an xxhash, well mixed), the upper bits of which also pick the shard.
func (c *countMin) index(h uint64, i int) uint64 {
	lo, hi := h, (h>>32)|1
	return (lo + uint64(i)*hi) & c.mask
}

// add counts one occurrence of the key hashed to h and returns its new estimate.
func (c *countMin) add(h uint64) int {
	var idx [depth]uint64
	least := uint16(math.MaxUint16)
	for i := range idx {
		idx[i] = c.index(h, i)
		least = min(least, c.table[idx[i]])
	}
	if least == math.MaxUint16 {
		return int(least)
	}
	for _, i := range idx {
		if c.table[i] == least {
			c.table[i]++
		}
	}
	return int(least) + 1
}

// estimate returns the key's estimated count.
func (c *countMin) estimate(h uint64) int {
	least := uint16(math.MaxUint16)
	for i := range depth {
		least = min(least, c.table[c.index(h, i)])
	}
	return int(least)
}

func (c *countMin) reset() { clear(c.table) }

// history is a count-min sketch of 32-bit counters in 1/scoreScale reads, aged once a
// window: the memory behind Tracker.Score. Reads go in as they happen, with conservative
// update (a read raises each of the key's counters only to its estimate plus the read),
// so that a key's estimate is raised by the keys it shares all its counters with only
// when they are read more. It is sized apart from the windows' sketches: they hold one
// window's keys, it holds every key read over many windows.
type history struct {
	table []uint32
	mask  uint64
}

func newHistory(counters int) *history {
	n := 64
	for n < counters {
		n <<= 1
	}
	return &history{table: make([]uint32, n), mask: uint64(n - 1)}
}

func (c *history) index(h uint64, i int) uint64 {
	lo, hi := h, (h>>32)|1
	return (lo + uint64(i)*hi) & c.mask
}

// add counts n units for the key hashed to h.
func (c *history) add(h uint64, n uint32) {
	var idx [depth]uint64
	least := uint32(math.MaxUint32)
	for i := range idx {
		idx[i] = c.index(h, i)
		least = min(least, c.table[idx[i]])
	}
	to := least + min(n, math.MaxUint32-least)
	for _, i := range idx {
		c.table[i] = max(c.table[i], to)
	}
}

func (c *history) estimate(h uint64) uint32 {
	least := uint32(math.MaxUint32)
	for i := range depth {
		least = min(least, c.table[c.index(h, i)])
	}
	return least
}

// age takes 1/windows of every counter, rounded up so that counters do reach zero, times
// times over. The same non-decreasing step applied to every counter keeps each estimate
// at or above the key's aged count (v-⌈v/d⌉ is superadditive: aging a sum leaves at least
// the sum of the aged parts).
func (c *history) age(windows int, times int64) {
	d := uint32(windows)
	for range times {
		for i, v := range c.table {
			c.table[i] = v - (v+d-1)/d
		}
	}
}
