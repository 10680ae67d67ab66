package ring

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The expected tokens were read from a real Cassandra 5.0.9 (scripts/cassandra.sh) with
// `SELECT token(k) FROM t WHERE k = ?` on a blob partition key, 2026-11-21. They cover
// every tail length class, a full 16-byte block, and tail bytes >= 0x80, which Cassandra
// sign-extends.
var cassandraTokens = []struct {
	key   string
	token Token
}{
	{"a", -8839064797231613815},
	{"ab", -7815133031266706642},
	{"abc", -5434086359492102041},
	{"hello", -3758069500696749310},
	{"user6284781860667377211", 4844203595558397365},
	{"0123456789abcdef", 5467490433528156583},
	{"0123456789abcdefX", -3608559037187041545},
	{"The quick brown fox jumps over the lazy dog", -2068352364225029268},
	{"\xff\xfe\x80\x7f", -4757015132483201783},
	{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", -2195530867418009455},
}

func TestTokensMatchCassandra(t *testing.T) {
	for _, tc := range cassandraTokens {
		if got := TokenOf([]byte(tc.key)); got != tc.token {
			t.Errorf("TokenOf(%q) = %d, Cassandra says %d", tc.key, got, tc.token)
		}
	}
	if got := TokenOf(nil); got != MinToken {
		t.Errorf("empty key: %d, want MinToken", got)
	}
}

func TestTokensSpreadEvenly(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const keys, buckets = 100_000, 16
	var counts [buckets]int
	key := make([]byte, 12)
	for range keys {
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		tok := TokenOf(key)
		if tok == MinToken {
			t.Fatalf("key %x has MinToken", key)
		}
		counts[uint64(tok)>>60]++
	}
	// Each sixteenth of the ring expects 6,250 keys; 6 standard deviations is about 460.
	for b, n := range counts {
		if n < 6250-460 || n > 6250+460 {
			t.Errorf("ring sixteenth %d got %d of %d keys", b, n, keys)
		}
	}
}

func BenchmarkTokenOf(b *testing.B) {
	key := []byte("user6284781860667377211")
	for b.Loop() {
		TokenOf(key)
	}
}
