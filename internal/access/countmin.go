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

// fold ages c by one window and adds w's counts in units of scoreScale, then ages c
// skipped more times (windows without reads). Aging takes 1/windows of each counter,
// rounded up so that counters do reach zero. A counter is the least over the key's
// depth, so every operation here is applied to all counters alike and the estimate
// stays an upper bound of the key's aged count.
func (c *countMin) fold(w *countMin, windows int, skipped int64) {
	d := uint32(windows)
	for i, x := range c.table {
		v := uint32(x)
		v -= (v + d - 1) / d
		v += uint32(w.table[i]) * scoreScale
		c.table[i] = uint16(min(v, math.MaxUint16))
	}
	for range skipped {
		for i, x := range c.table {
			v := uint32(x)
			c.table[i] = uint16(v - (v+d-1)/d)
		}
	}
}
