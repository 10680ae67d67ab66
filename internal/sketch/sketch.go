// Package sketch estimates how often keys were seen recently, in memory that does not grow
// with the number of keys: a count-min sketch of 4-bit counters that halves every counter
// after a fixed number of additions, the frequency estimator of TinyLFU (Einziger, Friedman
// and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", 2017), as Caffeine uses
// it.
//
// Callers hash keys themselves (any well-mixed 64-bit hash) and pass the hash. A Frequency
// is not safe for concurrent use: callers that share one hold a lock (the lsm row cache
// keeps one per shard, under the shard's lock).
package sketch

// Depth is the number of counters a key maps to; its estimate is the least of them.
const Depth = 4

// MaxCount is the largest count a counter holds: counts saturate there.
const MaxCount = 15

// Frequency is a count-min sketch of 4-bit counters, Depth per key in one table, with
// conservative update: an addition increments only those of a key's counters that hold its current
// estimate, so a key's estimate never falls below its true count (capped at MaxCount and
// until the next halving) and exceeds it less often than with plain updates.
//
// Every sample additions, all counters are halved (the "reset" of TinyLFU), so the
// estimates reflect recent additions: a count of c before a halving is c/2 after it, and
// keys that stop being seen fade out.
type Frequency struct {
	table  []uint64 // 16 counters per word
	mask   uint64   // counters-1; counters is a power of two
	sample int      // additions between halvings
	adds   int      // additions since the last halving
}

// New returns a Frequency of at least counters counters (rounded up to a power of two, at
// least 64; a key's Depth counters are spread over all of them) that halves every sample
// additions (at least 1). The memory is counters/2 bytes. A width of several counters per distinct key
// in a window keeps collisions rare; TinyLFU uses a sample of ten times the number of
// entries it ranks.
func New(counters, sample int) *Frequency {
	n := uint64(64)
	for n < uint64(counters) {
		n <<= 1
	}
	return &Frequency{table: make([]uint64, n/16), mask: n - 1, sample: max(sample, 1)}
}

// index returns the position of h's i-th counter: double hashing over two halves of a
// remix of h, so that callers that also use h's low bits (to pick a shard, say) do not
// skew the counters.
func (f *Frequency) index(h uint64, i int) uint64 {
	h = remix(h)
	lo, hi := h, (h>>32)|1
	return (lo + uint64(i)*hi) & f.mask
}

// remix is the finalizer of SplitMix64.
func remix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func (f *Frequency) get(i uint64) uint64 {
	return (f.table[i>>4] >> ((i & 15) * 4)) & 15
}

// Add counts one occurrence of the key hashed to h.
func (f *Frequency) Add(h uint64) {
	var idx [Depth]uint64
	least := uint64(MaxCount)
	for i := range idx {
		idx[i] = f.index(h, i)
		least = min(least, f.get(idx[i]))
	}
	if least < MaxCount {
		for _, i := range idx {
			if f.get(i) == least { // conservative update
				f.table[i>>4] += 1 << ((i & 15) * 4)
			}
		}
	}
	f.adds++
	if f.adds >= f.sample {
		f.halve()
	}
}

// SetSample sets the number of additions between halvings (at least 1), for a caller
// whose window should follow the number of entries it ranks. A sample smaller than the
// additions made since the last halving halves at the next addition.
func (f *Frequency) SetSample(sample int) { f.sample = max(sample, 1) }

// Estimate returns the key's estimated count of recent occurrences, at most MaxCount.
func (f *Frequency) Estimate(h uint64) int {
	least := uint64(MaxCount)
	for i := range Depth {
		least = min(least, f.get(f.index(h, i)))
	}
	return int(least)
}

// halve halves every counter (each 4-bit field shifted right by one, the bit that would
// cross into the next field dropped).
func (f *Frequency) halve() {
	for i, w := range f.table {
		f.table[i] = (w >> 1) & 0x7777777777777777
	}
	f.adds = 0
}

// Bytes returns the memory the counters take.
func (f *Frequency) Bytes() int { return len(f.table) * 8 }

// Counters returns the number of counters (the Depth counters of a key are among them).
func (f *Frequency) Counters() int { return int(f.mask) + 1 }
