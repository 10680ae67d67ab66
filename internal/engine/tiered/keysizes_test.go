package tiered

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestKeySizesAgreesWithAMap runs random sets, deletes and lookups against keySizes and
// a Go map side by side, over a key space small enough that keys come back after their
// deletion and the records are compacted many times, and checks every answer and the
// whole contents every so often.
func TestKeySizesAgreesWithAMap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	for _, space := range []int{1, 7, 300, 5000} {
		var m keySizes
		want := map[string]int64{}
		key := func() []byte {
			n := rng.IntN(space)
			// Keys of many lengths, the empty one and one past a one-byte length included.
			return []byte(fmt.Sprintf("%0*d", n%140, n))
		}
		for op := range 200_000 {
			k := key()
			switch r := rng.IntN(10); {
			case r < 4:
				size := rng.Int64N(1 << 40)
				if rng.IntN(4) == 0 {
					size = -size // sizes are int64s: negative ones round-trip too
				}
				m.Set(k, size)
				want[string(k)] = size
			case r < 7:
				got, ok := m.Delete(k)
				w, wok := want[string(k)]
				if ok != wok || got != w {
					t.Fatalf("space %d, op %d: Delete(%q) = %d, %v; want %d, %v", space, op, k, got, ok, w, wok)
				}
				delete(want, string(k))
			default:
				got, ok := m.Get(k)
				w, wok := want[string(k)]
				if ok != wok || got != w {
					t.Fatalf("space %d, op %d: Get(%q) = %d, %v; want %d, %v", space, op, k, got, ok, w, wok)
				}
			}
			if m.Len() != len(want) {
				t.Fatalf("space %d, op %d: Len() = %d, want %d", space, op, m.Len(), len(want))
			}
			if op%9973 == 0 {
				checkKeySizes(t, &m, want)
			}
		}
		checkKeySizes(t, &m, want)
		if m.dead*2 > len(m.recs) && m.dead > 4096 {
			t.Fatalf("space %d: %d of %d record bytes dead, not compacted", space, m.dead, len(m.recs))
		}
	}
}

// checkKeySizes checks that All yields exactly want.
func checkKeySizes(t *testing.T, m *keySizes, want map[string]int64) {
	t.Helper()
	seen := map[string]bool{}
	for k, size := range m.All() {
		if seen[string(k)] {
			t.Fatalf("All yields %q twice", k)
		}
		seen[string(k)] = true
		if w, ok := want[string(k)]; !ok || w != size {
			t.Fatalf("All yields %q with %d; want %d (held: %v)", k, size, w, ok)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("All yields %d keys, want %d", len(seen), len(want))
	}
}

func TestKeySizesAllStopsWhenAsked(t *testing.T) {
	var m keySizes
	for i := range 100 {
		m.Set(fmt.Appendf(nil, "k%d", i), int64(i))
	}
	n := 0
	for range m.All() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("walked %d keys after breaking at 3", n)
	}
}

// BenchmarkFastRowMapBytes reports the heap a stripe set of fast-row maps takes per key
// for YCSB's keys ("user" and up to 19 digits), held as keySizes and as the
// map[string]int64 it replaced. Run with -benchtime=1x.
func BenchmarkFastRowMapBytes(b *testing.B) {
	const keys = 286_000 // the fast tier's rows in the 3,000,000-row evaluation
	key := func(i int) []byte { return fmt.Appendf(nil, "user%d", uint64(i)*0x9E3779B97F4A7C15>>1) }
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for range b.N {
		before := heap()
		packed := make([]keySizes, stripeCount)
		for i := range keys {
			k := key(i)
			packed[stripeOf(k)].Set(k, 1100)
		}
		b.ReportMetric(float64(heap()-before)/keys, "packed-B/key")
		// Then churn as a full fast tier does, each promotion displacing a row: three
		// times as many keys replaced as held, oldest first.
		for i := range 3 * keys {
			k := key(i)
			packed[stripeOf(k)].Delete(k)
			k = key(keys + i)
			packed[stripeOf(k)].Set(k, 1100)
		}
		b.ReportMetric(float64(heap()-before)/keys, "churned-B/key")
		runtime.KeepAlive(packed)
		packed = nil

		before = heap()
		maps := make([]map[string]int64, stripeCount)
		for i := range maps {
			maps[i] = map[string]int64{}
		}
		for i := range keys {
			k := key(i)
			maps[stripeOf(k)][string(k)] = 1100
		}
		b.ReportMetric(float64(heap()-before)/keys, "map-B/key")
		runtime.KeepAlive(maps)
	}
}

// BenchmarkFastRowMapChurn times one swap on a full fast-row map: a key deleted, another
// set, as a promotion that displaces a row does.
func BenchmarkFastRowMapChurn(b *testing.B) {
	const keys = 286_000
	key := func(i int) []byte { return fmt.Appendf(nil, "user%d", uint64(i)*0x9E3779B97F4A7C15>>1) }
	packed := make([]keySizes, stripeCount)
	for i := range keys {
		k := key(i)
		packed[stripeOf(k)].Set(k, 1100)
	}
	ks := make([][]byte, keys+b.N)
	for i := range ks {
		ks[i] = key(i)
	}
	b.ResetTimer()
	for i := range b.N {
		k := ks[i]
		packed[stripeOf(k)].Delete(k)
		k = ks[keys+i]
		packed[stripeOf(k)].Set(k, 1100)
	}
}
