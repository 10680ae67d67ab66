package access

// depth is the number of counters a key maps to; its estimate is the least of them.
const depth = 4

// counter is the width of a sketch's counters.
type counter interface{ ~uint16 | ~uint32 }

// countMin is a count-min sketch with conservative update: an addition of n raises each
// of a key's counters only to the key's current estimate plus n, so an estimate never
// falls below the key's true count (until it saturates at the counters' maximum) and
// exceeds it less often than with plain updates. Unlike the 4-bit sketch of the row
// cache (internal/sketch), which only compares keys, these counts are read as counts: K
// can be more than 15, and a ranking needs room above it.
//
// The windows' sketches have 16-bit counters and count reads; the score's (history) has
// 32-bit counters in 1/scoreScale reads and is aged once a window. It is sized apart
// from the windows' sketches: they hold one window's keys, it holds every key read over
// many windows.
type countMin[T counter] struct {
	table []T
	mask  uint64 // len(table)-1; the length is a power of two
}

func newCountMin[T counter](counters int) *countMin[T] {
	n := 64
	for n < counters {
		n <<= 1
	}
	return &countMin[T]{table: make([]T, n), mask: uint64(n - 1)}
}

// index returns the position of h's i-th counter: double hashing over the two halves of
// h (an xxhash, well mixed), the upper bits of which also pick the shard.
func (c *countMin[T]) index(h uint64, i int) uint64 {
	lo, hi := h, (h>>32)|1
	return (lo + uint64(i)*hi) & c.mask
}

// add counts n occurrences of the key hashed to h, saturating, and returns its new
// estimate.
func (c *countMin[T]) add(h uint64, n T) T {
	var idx [depth]uint64
	least := ^T(0)
	for i := range idx {
		idx[i] = c.index(h, i)
		least = min(least, c.table[idx[i]])
	}
	to := least + min(n, ^T(0)-least)
	for _, i := range idx {
		c.table[i] = max(c.table[i], to)
	}
	return to
}

// estimate returns the key's estimated count.
func (c *countMin[T]) estimate(h uint64) T {
	least := ^T(0)
	for i := range depth {
		least = min(least, c.table[c.index(h, i)])
	}
	return least
}

func (c *countMin[T]) reset() { clear(c.table) }

// age takes 1/windows of every counter, rounded up so that counters do reach zero, times
// times over. The same non-decreasing step applied to every counter keeps each estimate
// at or above the key's aged count (v-⌈v/d⌉ is superadditive: aging a sum leaves at least
// the sum of the aged parts).
func (c *countMin[T]) age(windows int, times int64) {
	d := T(windows)
	for range times {
		for i, v := range c.table {
			c.table[i] = v - v/d - min(v%d, 1) // ⌈v/d⌉ without overflow
		}
	}
}
