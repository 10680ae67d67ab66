package tiered

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
)

// testRand returns a generator seeded by KURA_SEED when set, else by the clock, and logs
// the seed so that a failure can be replayed.
func testRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
	}
	t.Logf("seed %d (rerun with KURA_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, stream))
}

// A decision on the lowest-scored fast rows that listedFast asks for, with the rest's
// bytes as FastUnlistedBytes and the hot rows already on the fast tier left out, makes
// the same moves and offers the same pool as one on every fast row (the reference):
// seeded random tiers, some over their budget, hot rows of every score, some of them on
// the fast tier already.
func TestDecisionOnTheLowestFastRowsMatchesTheWholeList(t *testing.T) {
	rng := testRand(t, 1)
	for round := range 40 {
		fast := make([]Candidate, 2000+rng.IntN(8000))
		var used int64
		for i := range fast {
			reads := rng.IntN(20)
			fast[i] = Candidate{Key: fmt.Sprintf("f%06d", i), Reads: reads, Score: float64(reads) + rng.Float64(), Bytes: int64(800 + rng.IntN(600))}
			if rng.IntN(10) == 0 {
				fast[i].Score = float64(rng.IntN(3)) // ties, ordered by key
			}
			used += fast[i].Bytes
		}
		p := Policy{BudgetBytes: used + int64(rng.IntN(200_000)) - 150_000, MinReads: 1 + rng.IntN(2), Displace: 1 + 2*rng.Float64()}
		if rng.IntN(3) == 0 {
			p.MaxMoveBytes = int64(rng.IntN(2_000_000))
		}
		var hot, hotSlow []Candidate // hotSlow: those not on the fast tier
		for i := range rng.IntN(600) {
			c := Candidate{Key: fmt.Sprintf("h%06d", i), Bytes: 1100}
			onFast := rng.IntN(5) == 0
			if onFast {
				c = fast[rng.IntN(len(fast))]
			}
			c.Reads = rng.IntN(30)
			c.Score = float64(c.Reads) * (1 + rng.Float64())
			hot = append(hot, c)
			if !onFast {
				hotSlow = append(hotSlow, c)
			}
		}
		whole := p.Decide(Input{Fast: fast, Hot: hot})

		n := listedFast(p.BudgetBytes, used, int64(len(fast)), len(hotSlow))
		sorted := slices.Clone(fast)
		slices.SortFunc(sorted, lowestFirst)
		listed := sorted[:min(n, len(sorted))]
		in := Input{Fast: listed, Hot: hotSlow, FastUnlistedBytes: used}
		for _, c := range listed {
			in.FastUnlistedBytes -= c.Bytes
		}
		part := p.Decide(in)
		if !slices.Equal(whole, part) {
			t.Fatalf("round %d (%d fast rows, %d listed, %d hot): the decisions differ:\nwhole list: %d moves %v\nlowest rows: %d moves %v",
				round, len(fast), len(listed), len(hot), len(whole), head(whole), len(part), head(part))
		}
		if a, b := lowestKept(fast, whole, poolMax), lowestKept(listed, part, poolMax); !slices.Equal(a, b) {
			t.Fatalf("round %d: the pools differ (%d and %d rows)", round, len(a), len(b))
		}
		unlisted := int64(len(fast) - len(listed))
		if a, b := threshold(p, Input{Fast: fast, Hot: hot}, 0, whole), threshold(p, in, unlisted, part); a != b {
			t.Fatalf("round %d: thresholds %v and %v", round, a, b)
		}
	}
}

func head(moves []Move) []Move { return moves[:min(len(moves), 5)] }

// lowestFast keeps the n lowest-scored fast rows, as a sort of them all would list them.
func TestLowestFastListsTheLowestScoredRows(t *testing.T) {
	db, _, _ := openCapturing(t)
	rng := testRand(t, 2)
	score := map[string]float64{}
	var all []Candidate
	for i := range 3000 {
		k := fmt.Sprintf("k%05d", i)
		s := &db.stripes[stripeOf([]byte(k))]
		s.fast.Set([]byte(k), int64(i))
		score[k] = float64(rng.IntN(50)) // many ties
		all = append(all, Candidate{Key: k, Reads: int(score[k]), Score: score[k], Bytes: int64(i)})
	}
	db.fastKeys.Store(int64(len(all)))
	slices.SortFunc(all, lowestFirst)
	reads := func(k []byte) (int, float64) { return int(score[string(k)]), score[string(k)] }
	for _, n := range []int{0, 1, 7, 1000, 2999, 3000, 5000} {
		got := db.lowestFast(n, reads)
		if want := all[:min(n, len(all))]; !slices.Equal(got, want) {
			t.Errorf("lowestFast(%d): %d rows, first %v; want %d, first %v", n, len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
		}
	}
}

// A decision lists only the lowest-scored fast rows, so it must leave out of its hot rows
// those already on the fast tier: taken for rows to promote, they would displace rows
// that stay (here, with the budget full, the hottest fast row would push out a cold one
// to "promote" itself).
func TestDecisionDoesNotPromoteAFastRowItDidNotList(t *testing.T) {
	db, _, _ := openCapturing(t)
	now := time.Unix(1000, 0)
	const rows, size = poolMax + 1000, 1000
	for i := range rows {
		k := fmt.Sprintf("k%05d", i)
		db.stripes[stripeOf([]byte(k))].fast.Set([]byte(k), size)
	}
	db.fastKeys.Store(rows)
	db.fastBytes.Store(rows * size)
	tr := access.New(access.Config{Window: 10 * time.Second})
	hottest := fmt.Sprintf("k%05d", rows-1)
	for i := range 20 {
		tr.Record([]byte(hottest), now.Add(time.Duration(i)*time.Millisecond))
	}
	db.opts.Tracker = tr
	m, err := NewMigrator(db, MigratorConfig{BudgetBytes: rows * size, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	moves, err := m.Step(now.Add(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 || db.fastKeys.Load() != rows {
		t.Fatalf("the decision moved %v; %d rows left on the fast tier, want %d", head(moves), db.fastKeys.Load(), rows)
	}
}

// BenchmarkStep is one window's decision over a full fast tier of rows=N rows, nothing
// to move: what it allocates is garbage the node's heap must make room for.
func BenchmarkStep(b *testing.B) {
	for _, rows := range []int{100_000, 300_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			db, _, _ := openCapturing(b)
			const size = 1000
			for i := range rows {
				k := fmt.Sprintf("k%07d", i)
				db.stripes[stripeOf([]byte(k))].fast.Set([]byte(k), size)
			}
			db.fastKeys.Store(int64(rows))
			db.fastBytes.Store(int64(rows) * size)
			now := time.Unix(1000, 0)
			db.opts.Tracker = access.New(access.Config{Window: 10 * time.Second})
			m, err := NewMigrator(db, MigratorConfig{BudgetBytes: int64(rows) * size, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			m.started.Store(true)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Step(now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
