package tiered

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"
)

// keySizes maps keys to the bytes each takes, holding no pointers: the keys lie back to
// back in one byte slice, each followed by its size, and an open-addressed table of their
// offsets finds them. It is the fast-row map a tiered node keeps for every row at home on
// the fast tier (hundreds of thousands of them), where a map[string]int64 cost about 87
// bytes a row (a string header, a map slot and an allocation per key) and gave the
// collector a pointer a row to scan on every cycle; this costs about 54 bytes a row for
// 23-byte keys and none to scan (BenchmarkFastRowMapBytes).
//
// The zero value is empty and ready. It is not safe for concurrent use: the stripe's lock
// guards it.
type keySizes struct {
	// table has a power-of-two length, or is nil. An entry is 0 when empty, else the
	// key's hash in its high 32 bits and its record's offset in recs, plus one, in the
	// low 32; collisions probe linearly.
	table []uint64
	// recs holds a record per key, and the records of deleted keys until compact drops
	// them: the key's length (uvarint), the key, its size (8 bytes, little-endian).
	recs []byte
	n    int // keys held
	dead int // bytes of recs taken by deleted keys' records
}

// keySeed seeds the table's hash. It differs from stripeOf's FNV-1a so that the keys of
// one stripe, which share their FNV hash modulo the stripe count, spread over the table.
var keySeed = maphash.MakeSeed()

// maxRecs bounds recs so that an offset plus one fits the entry's low 32 bits.
const maxRecs = math.MaxUint32 - 1

func keyHash(key []byte) uint32 { return uint32(maphash.Bytes(keySeed, key) >> 32) }

// Len returns the number of keys held.
func (m *keySizes) Len() int { return m.n }

// record returns the key and size stored at offset at of recs, and the record's length.
func (m *keySizes) record(at int) (key []byte, size int64, length int) {
	kl, w := binary.Uvarint(m.recs[at:])
	start := at + w
	end := start + int(kl)
	return m.recs[start:end:end], int64(binary.LittleEndian.Uint64(m.recs[end:])), end + 8 - at
}

// find returns the table index holding key, or the empty index where it would go, and
// whether it was found.
func (m *keySizes) find(key []byte, h uint32) (int, bool) {
	mask := len(m.table) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := m.table[i]
		if e == 0 {
			return i, false
		}
		if uint32(e>>32) == h {
			if k, _, _ := m.record(int(uint32(e)) - 1); bytes.Equal(k, key) {
				return i, true
			}
		}
	}
}

// lookup returns the table index holding key and whether it is held.
func (m *keySizes) lookup(key []byte) (int, bool) {
	if m.n == 0 {
		return 0, false
	}
	return m.find(key, keyHash(key))
}

// Get returns key's size and whether key is held.
func (m *keySizes) Get(key []byte) (int64, bool) {
	i, ok := m.lookup(key)
	if !ok {
		return 0, false
	}
	_, size, _ := m.record(int(uint32(m.table[i])) - 1)
	return size, true
}

// Set holds key with size, replacing the size it had.
func (m *keySizes) Set(key []byte, size int64) {
	h := keyHash(key)
	if m.n > 0 {
		if i, ok := m.find(key, h); ok {
			at := int(uint32(m.table[i])) - 1
			_, _, length := m.record(at)
			binary.LittleEndian.PutUint64(m.recs[at+length-8:], uint64(size))
			return
		}
	}
	if (m.n+1)*4 > len(m.table)*3 {
		m.grow()
	}
	i, _ := m.find(key, h)
	need := binary.MaxVarintLen64 + len(key) + 8
	if len(m.recs)+need > cap(m.recs) && m.dead > 0 {
		// Full: drop the deleted keys' records rather than grow. A map whose keys churn
		// (a full fast tier swapping rows) then keeps its live records and an eighth
		// more, where growing until the dead were half of the slice kept up to twice
		// as many, and spare capacity on top (BenchmarkFastRowMapBytes, churned-B/key).
		m.compact(need)
	}
	if len(m.recs)+need > maxRecs {
		m.compact(0)
		if len(m.recs)+need > maxRecs {
			panic("tiered: the fast-row map outgrew 4 GiB of keys in one stripe")
		}
	}
	at := len(m.recs)
	m.recs = binary.AppendUvarint(m.recs, uint64(len(key)))
	m.recs = append(m.recs, key...)
	m.recs = binary.LittleEndian.AppendUint64(m.recs, uint64(size))
	m.table[i] = uint64(h)<<32 | uint64(at+1)
	m.n++
}

// Delete removes key and returns the size it had and whether it was held.
func (m *keySizes) Delete(key []byte) (int64, bool) {
	i, ok := m.lookup(key)
	if !ok {
		return 0, false
	}
	_, size, length := m.record(int(uint32(m.table[i])) - 1)
	m.dead += length
	m.n--
	// Backward-shift deletion: move later entries of the probe run into the hole, so that
	// no tombstones are needed and every key stays reachable from its home index.
	mask := len(m.table) - 1
	hole := i
	for j := (i + 1) & mask; m.table[j] != 0; j = (j + 1) & mask {
		home := int(uint32(m.table[j]>>32)) & mask
		// The entry at j may fill the hole if its home is not cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			m.table[hole] = m.table[j]
			hole = j
		}
	}
	m.table[hole] = 0
	if m.n == 0 {
		m.recs, m.dead = m.recs[:0], 0
	} else if m.dead > 4096 && m.dead*2 > len(m.recs) {
		m.compact(0)
	}
	return size, true
}

// All yields every key held and its size, in no particular order. The key is valid only
// until the yield returns; the map must not change during the walk.
func (m *keySizes) All() iter.Seq2[[]byte, int64] {
	return func(yield func([]byte, int64) bool) {
		for _, e := range m.table {
			if e == 0 {
				continue
			}
			k, size, _ := m.record(int(uint32(e)) - 1)
			if !yield(k, size) {
				return
			}
		}
	}
}

// grow doubles the table (to 8 entries from none) and rehashes the keys into it.
func (m *keySizes) grow() {
	old := m.table
	m.table = make([]uint64, max(8, 2*len(old)))
	mask := len(m.table) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(uint32(e>>32)) & mask
		for m.table[i] != 0 {
			i = (i + 1) & mask
		}
		m.table[i] = e
	}
}

// compact copies the live records into a fresh slice with room for them, extra bytes
// more and an eighth of them, dropping the deleted ones, and points the table at the
// copies.
func (m *keySizes) compact(extra int) {
	live := len(m.recs) - m.dead
	recs := make([]byte, 0, live+extra+live/8)
	for i, e := range m.table {
		if e == 0 {
			continue
		}
		at := int(uint32(e)) - 1
		_, _, length := m.record(at)
		m.table[i] = e&^math.MaxUint32 | uint64(len(recs)+1)
		recs = append(recs, m.recs[at:at+length]...)
	}
	m.recs, m.dead = recs, 0
}
