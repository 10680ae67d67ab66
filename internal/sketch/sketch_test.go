package sketch

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// zipf draws ranks 0..n-1 with P(rank k) proportional to 1/(k+1)^s, like YCSB's zipfian
// with exponent s (0.99 by default there), by inverse CDF.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) *zipf {
	z := &zipf{cdf: make([]float64, n)}
	sum := 0.0
	for k := range n {
		sum += 1 / math.Pow(float64(k+1), s)
		z.cdf[k] = sum
	}
	for k := range z.cdf {
		z.cdf[k] /= sum
	}
	return z
}

func (z *zipf) next(r *rand.Rand) int { return sort.SearchFloat64s(z.cdf, r.Float64()) }

// keyHash stands in for the caller's hash of key k: any well-mixed 64-bit hash will do.
func keyHash(k int) uint64 { return remix(uint64(k) + 0x9e3779b97f4a7c15) }

func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d", s)
	return s
}

// The accuracy claim, on zipfian streams of the skews the tiering evaluation uses, with
// 8 counters per distinct key and no halving during the stream:
//   - no key is ever under-counted (below min(true count, MaxCount));
//   - at most 1% of keys are over-counted at all, and the mean over-count is below 0.05;
//   - a key seen at least MaxCount times outranks a key seen at most twice in at least 99%
//     of such pairs (what an admission or placement decision asks).
func TestEstimatesAgainstExactCountsOnZipfianStreams(t *testing.T) {
	s := seed(t)
	const keys, adds = 20_000, 200_000
	for _, skew := range []float64{0.90, 0.99} {
		r := rand.New(rand.NewPCG(s, uint64(skew*100)))
		z := newZipf(keys, skew)
		f := New(8*keys, adds+1)
		exact := make([]int, keys)
		for range adds {
			k := z.next(r)
			exact[k]++
			f.Add(keyHash(k))
		}
		var over, overSum int
		var hot, cold []int
		for k, n := range exact {
			est, want := f.Estimate(keyHash(k)), min(n, MaxCount)
			if est < want {
				t.Fatalf("skew %.2f: key %d seen %d times, estimate %d", skew, k, n, est)
			}
			if est > want {
				over++
				overSum += est - want
			}
			switch {
			case n >= MaxCount:
				hot = append(hot, est)
			case n <= 2:
				cold = append(cold, est)
			}
		}
		if over*100 > keys || float64(overSum)/keys >= 0.05 {
			t.Errorf("skew %.2f: %d of %d keys over-counted, by %d in all", skew, over, keys, overSum)
		}
		slices.Sort(cold)
		wrong := 0
		for _, h := range hot {
			wrong += len(cold) - sort.SearchInts(cold, h) // cold keys estimated >= h
		}
		if pairs := len(hot) * len(cold); pairs == 0 || wrong*100 > pairs {
			t.Errorf("skew %.2f: %d of %d hot/cold pairs misranked", skew, wrong, pairs)
		}
		t.Logf("skew %.2f: %d of %d keys over-counted (total %d); %d hot, %d cold keys, %d misranked pairs",
			skew, over, keys, overSum, len(hot), len(cold), wrong)
	}
}

func TestCountsSaturateAtMaxCount(t *testing.T) {
	f := New(64, 1000)
	for range 40 {
		f.Add(7)
	}
	if got := f.Estimate(7); got != MaxCount {
		t.Fatalf("40 additions: estimate %d, want %d", got, MaxCount)
	}
}

// Every sample additions the counts halve, so a key that stops being seen fades out and a
// key seen now catches up with one seen long ago.
func TestHalvingEverySampleAdditions(t *testing.T) {
	const sample = 20
	f := New(1024, sample)
	for range 12 {
		f.Add(1)
	}
	for range 7 {
		f.Add(2)
	}
	if a, b := f.Estimate(1), f.Estimate(2); a != 12 || b != 7 {
		t.Fatalf("before halving: %d, %d; want 12, 7", a, b)
	}
	f.Add(2) // the 20th addition: counts halve after it
	if a, b := f.Estimate(1), f.Estimate(2); a != 6 || b != 4 {
		t.Fatalf("after halving: %d, %d; want 6, 4", a, b)
	}
	for range 3 * sample {
		f.Add(2)
	}
	if a := f.Estimate(1); a != 0 {
		t.Fatalf("a key not seen for three halvings still estimated at %d", a)
	}
}

func TestSizeIsFixedByCounters(t *testing.T) {
	for _, c := range []struct{ ask, counters int }{{0, 64}, {64, 64}, {65, 128}, {1000, 1024}} {
		f := New(c.ask, 1)
		if f.Counters() != c.counters || f.Bytes() != c.counters/2 {
			t.Errorf("New(%d): %d counters, %d bytes; want %d, %d", c.ask, f.Counters(), f.Bytes(), c.counters, c.counters/2)
		}
	}
}
