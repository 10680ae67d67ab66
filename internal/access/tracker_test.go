package access

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pingcap/go-ycsb/pkg/generator"
)

// zipfian returns YCSB's zipfian generator over keys 0..n-1 with constant s, the one
// kura bench draws keys with (go-ycsb's; item 0 is the most popular).
func zipfian(n int, s float64) *generator.Zipfian { return generator.NewZipfianWithItems(int64(n), s) }

func key(k int) []byte { return fmt.Appendf(nil, "user%d", k) }

func seed(t testing.TB) uint64 {
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d", s)
	return s
}

// t0 is the start of a window (windows are aligned to multiples of W since the epoch).
var t0 = time.Unix(1_800_000_000, 0)

// The accuracy claim, on seeded zipfian streams of seed 001's skews (0.90 and 0.99), with
// 100,000 keys, 300,000 reads in the window and 16 counters per distinct key read:
//   - no key's count is ever below its true count (so no hot key is missed by Hot);
//   - at most 1% of the keys read are over-counted, and under 0.5% of the keys not read
//     at all count as hot (K=1);
//   - Top names at least 95% of the true 2,000 most-read keys, when it may remember 4,096.
func TestCountsAgainstExactCountsOnZipfianStreams(t *testing.T) {
	s := seed(t)
	const keys, reads, topKeys = 100_000, 300_000, 4096
	for _, skew := range []float64{0.90, 0.99} {
		r := rand.New(rand.NewSource(int64(s) + int64(skew*100)))
		z := zipfian(keys, skew)
		tr := New(Config{Window: 10 * time.Second, Counters: 16 * 64 * 1024, TopKeys: topKeys})
		exact := make([]int, keys)
		for i := range reads {
			k := int(z.Next(r))
			exact[k]++
			tr.Record(key(k), t0.Add(time.Duration(i)*(10*time.Second/reads)))
		}
		next := t0.Add(10 * time.Second) // the window above is now the last complete one
		var read, over, falseHot, unread int
		for k, n := range exact {
			est := tr.Count(key(k), next)
			if est < n {
				t.Fatalf("skew %.2f: key %d read %d times, counted %d", skew, k, n, est)
			}
			if n > 0 {
				read++
				if est > n {
					over++
				}
			} else {
				unread++
				if tr.Hot(key(k), next) {
					falseHot++
				}
			}
		}
		if over*100 > read || falseHot*200 > unread {
			t.Errorf("skew %.2f: %d of %d keys read were over-counted; %d of %d unread keys count as hot",
				skew, over, read, falseHot, unread)
		}
		top := tr.Top(next)
		named := map[string]bool{}
		for _, k := range top {
			named[k.Key] = true
		}
		ranks := make([]int, keys)
		for k := range ranks {
			ranks[k] = k
		}
		sort.SliceStable(ranks, func(i, j int) bool { return exact[ranks[i]] > exact[ranks[j]] })
		found := 0
		for _, k := range ranks[:2000] {
			if named[string(key(k))] {
				found++
			}
		}
		if found*100 < 95*2000 {
			t.Errorf("skew %.2f: Top named %d of the 2,000 most-read keys", skew, found)
		}
		t.Logf("skew %.2f: %d keys read, %d over-counted; %d of %d unread keys hot; Top has %d keys, %d of the top 2,000",
			skew, read, over, falseHot, unread, len(top), found)
	}
}

// Reads count in the current window (Recent, and Hot at once), become the last window's
// (Count, Top) when it ends, and are forgotten one window later or after a gap.
func TestWindowsRollOver(t *testing.T) {
	tr := New(Config{Window: 10 * time.Second, MinCount: 2})
	k := []byte("k")
	tr.Record(k, t0.Add(time.Second))
	if got := tr.Recent(k, t0.Add(2*time.Second)); got != 1 {
		t.Fatalf("Recent after one read = %d", got)
	}
	if tr.Hot(k, t0.Add(2*time.Second)) {
		t.Fatal("hot after one read with K=2")
	}
	tr.Record(k, t0.Add(3*time.Second))
	if !tr.Hot(k, t0.Add(3*time.Second)) {
		t.Fatal("not hot after two reads in the current window")
	}
	if got := tr.Count(k, t0.Add(9*time.Second)); got != 0 {
		t.Fatalf("Count before the window ended = %d", got)
	}
	next := t0.Add(10 * time.Second)
	if got, top := tr.Count(k, next), tr.Top(next); got != 2 || len(top) != 1 || top[0] != (Key{"k", 2}) {
		t.Fatalf("after the window: Count %d, Top %v", got, top)
	}
	if got := tr.Recent(k, next); got != 0 || !tr.Hot(k, next) {
		t.Fatalf("a new window: Recent %d, Hot %v", got, tr.Hot(k, next))
	}
	if got := tr.Count(k, t0.Add(20*time.Second)); got != 0 {
		t.Fatalf("two windows later: Count %d", got)
	}
	tr.Record(k, t0.Add(21*time.Second))
	tr.Record(k, t0.Add(22*time.Second))
	if got := tr.Count(k, t0.Add(45*time.Second)); got != 0 || len(tr.Top(t0.Add(45*time.Second))) != 0 {
		t.Fatalf("after a gap of a whole window: Count %d", got)
	}
	tr.Record(k, t0.Add(50*time.Second))
	tr.Record(k, t0.Add(49*time.Second)) // the clock stepped back: still counted, in the current window
	if got := tr.Recent(k, t0.Add(50*time.Second)); got != 2 {
		t.Fatalf("after a step back: Recent %d", got)
	}
}

// Score counts the current window's reads in full and ages each complete window by
// 1/HistoryWindows (rounded up, so it reaches zero); it skips none: a window without
// reads ages the score too.
func TestScoreAgesPastWindows(t *testing.T) {
	tr := New(Config{Window: 10 * time.Second, HistoryWindows: 4})
	a, b := []byte("a"), []byte("b")
	for range 4 {
		tr.Record(a, t0)
	}
	tr.Record(b, t0)
	if ga, gb := tr.Score(a, t0.Add(5*time.Second)), tr.Score(b, t0.Add(5*time.Second)); ga != 4 || gb != 1 {
		t.Errorf("in the window: a %v, b %v; want 4 and 1", ga, gb)
	}
	// In 4096ths of a read, a quarter less a window: a 16384 -> 12288, b 4096 -> 3072.
	if ga, gb := tr.Score(a, t0.Add(10*time.Second)), tr.Score(b, t0.Add(10*time.Second)); ga != 3 || gb != 0.75 {
		t.Errorf("after one window: a %v, b %v; want 3 and 0.75", ga, gb)
	}
	tr.Record(b, t0.Add(15*time.Second))
	// a 12288 -> 9216; b 3072 + 4096 = 7168 -> 5376.
	if ga, gb := tr.Score(a, t0.Add(20*time.Second)), tr.Score(b, t0.Add(20*time.Second)); ga != 2.25 || gb != 1.3125 {
		t.Errorf("after two windows: a %v, b %v; want 2.25 and 1.3125", ga, gb)
	}
	// Three windows with no read at all: 9216 -> 6912 -> 5184 -> 3888.
	if got := tr.Score(a, t0.Add(50*time.Second)); got != 3888.0/4096 {
		t.Errorf("after a gap: a %v, want %v", got, 3888.0/4096)
	}
	if got := tr.Score(a, t0.Add(1000*time.Second)); got != 0 {
		t.Errorf("long after: a %v, want 0", got)
	}
}

// Over seeded zipfian windows, no key's Score is below its exact aged count, and with
// about six counters per key read, under one key in a thousand scores over a read above
// it (with plain updates instead of conservative ones, about four in a thousand do).
func TestScoreIsNeverBelowTheExactAgedCount(t *testing.T) {
	sd := seed(t)
	r := rand.New(rand.NewSource(int64(sd)))
	z := zipfian(200000, 0.99)
	tr := New(Config{Window: time.Second, Counters: 1 << 16, HistoryWindows: 8, HistoryCounters: 1 << 18})
	exact := map[int]uint32{}
	for w := range 6 {
		for range 30000 {
			k := int(z.Next(r))
			exact[k] += scoreScale
			tr.Record(key(k), t0.Add(time.Duration(w)*time.Second))
		}
		for k, v := range exact { // the window ends
			exact[k] = v - (v+7)/8
		}
	}
	now := t0.Add(6 * time.Second)
	over := 0
	for k, v := range exact {
		got := tr.Score(key(k), now)
		if got < float64(v)/scoreScale {
			t.Fatalf("key %d: score %v below its exact aged count %v (seed %d)", k, got, float64(v)/scoreScale, sd)
		}
		if got > float64(v)/scoreScale+1 {
			over++
		}
	}
	if over*1000 > len(exact) {
		t.Errorf("%d of %d keys read score over a read above their aged count (seed %d)", over, len(exact), sd)
	}
	t.Logf("%d of %d keys read score over a read above their aged count", over, len(exact))
}

// Top ranks by count, most first, and leaves out keys read fewer than K times; when more
// keys are read than it may name, the least-read give way.
func TestTopRanksAndKeepsTheMostRead(t *testing.T) {
	tr := New(Config{Window: time.Second, MinCount: 2, TopKeys: shards * 2})
	now := t0
	for k := range 200 { // 200 keys read once each, then 5 keys read 3..7 times
		tr.Record(key(k), now)
	}
	for k := range 5 {
		for range 3 + k {
			tr.Record(key(1000+k), now)
		}
	}
	top := tr.Top(now.Add(time.Second))
	if len(top) != 5 {
		t.Fatalf("Top = %v, want the 5 keys read at least twice", top)
	}
	for i, k := range top {
		if want := (Key{fmt.Sprintf("user%d", 1004-i), 7 - i}); k != want {
			t.Errorf("Top[%d] = %v, want %v", i, k, want)
		}
	}
}

func TestConcurrentRecordsAreAllCounted(t *testing.T) {
	tr := New(Config{Window: time.Hour})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				tr.Record(key(i%10), t0.Add(time.Duration(g)))
			}
		})
	}
	wg.Wait()
	for k := range 10 {
		if got := tr.Recent(key(k), t0); got < 800 {
			t.Errorf("key %d: %d reads counted, want 800", k, got)
		}
	}
}

func TestMemoryIsFixedByTheConfig(t *testing.T) {
	small := New(Config{Counters: 1 << 16, HistoryCounters: 1 << 18})
	large := New(Config{Counters: 1 << 20, HistoryCounters: 1 << 22})
	if small.Bytes() != 2*2*(1<<16)+4*(1<<18) || large.Bytes() != 2*2*(1<<20)+4*(1<<22) {
		t.Errorf("Bytes: %d for 2^16 and 2^18 counters, %d for 2^20 and 2^22", small.Bytes(), large.Bytes())
	}
}

// The read path's cost: one Record per read, on a zipfian stream over a million keys.
func BenchmarkRecord(b *testing.B) {
	r := rand.New(rand.NewSource(42))
	z := zipfian(1_000_000, 0.99)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = key(int(z.Next(r)))
	}
	tr := New(Config{})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tr.Record(keys[i&(len(keys)-1)], t0)
	}
}

// A saturated counter still ages: the rounded-up fraction is taken without overflowing.
func TestASaturatedCounterAges(t *testing.T) {
	c := newCountMin[uint32](64)
	c.add(1, math.MaxUint32)
	if got := c.add(1, 5); got != math.MaxUint32 {
		t.Fatalf("a saturated estimate went to %d", got)
	}
	c.age(512, 1)
	// 4,294,967,295 / 512 is 8,388,607 remainder 511: a 512th rounded up is 8,388,608.
	if got, want := c.estimate(1), uint32(math.MaxUint32-8_388_608); got != want {
		t.Errorf("aged once: %d, want %d", got, want)
	}
}
