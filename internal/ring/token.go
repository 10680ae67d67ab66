package ring

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Token is a position on the ring: a key's 64-bit Murmur3 hash, ordered as a signed
// integer, as in Cassandra's Murmur3Partitioner.
type Token int64

// Bounds of the token space. MinToken is never a key's token: it is the ring's start,
// which Cassandra gives the empty key.
const (
	MinToken Token = math.MinInt64
	MaxToken Token = math.MaxInt64
)

// TokenOf returns key's token exactly as Cassandra's Murmur3Partitioner computes it, so
// that a key has the same token in kura and in Cassandra: the first 64 bits of
// MurmurHash3_x64_128 with seed 0 as Cassandra implements it, including its sign-extension
// of the tail bytes (a deviation from the reference MurmurHash3 that Cassandra keeps for
// compatibility), with math.MinInt64 moved to math.MaxInt64 and the empty key at MinToken.
func TokenOf(key []byte) Token {
	if len(key) == 0 {
		return MinToken
	}
	h1, _ := cassandraMurmur3(key)
	if h1 == math.MinInt64 {
		return MaxToken
	}
	return Token(h1)
}

const (
	murmurC1 = 0x87c37b91114253d5
	murmurC2 = 0x4cf5ad432745937f
)

// cassandraMurmur3 is org.apache.cassandra.utils.MurmurHash.hash3_x64_128 with seed 0.
func cassandraMurmur3(key []byte) (int64, int64) {
	var h1, h2 uint64
	n := len(key)
	nblocks := n / 16
	for i := range nblocks {
		k1 := binary.LittleEndian.Uint64(key[i*16:])
		k2 := binary.LittleEndian.Uint64(key[i*16+8:])
		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729
		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	tail := key[nblocks*16:]
	// Cassandra reads tail bytes as Java's signed byte and widens them to long, so a byte
	// of 0x80 or more sets every higher bit: signExtend reproduces that.
	signExtend := func(b byte) uint64 { return uint64(int64(int8(b))) }
	var k1, k2 uint64
	for i := len(tail) - 1; i >= 8; i-- {
		k2 ^= signExtend(tail[i]) << (8 * (i - 8))
	}
	if len(tail) > 8 {
		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
	}
	for i := min(len(tail), 8) - 1; i >= 0; i-- {
		k1 ^= signExtend(tail[i]) << (8 * i)
	}
	if len(tail) > 0 {
		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return int64(h1), int64(h2)
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
