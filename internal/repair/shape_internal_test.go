package repair

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// A leaf's token range (tokensOf) holds exactly the tokens leafOf puts in it: for random
// ranges (whole ring, wrapping or not) and depths, each token near a leaf's bounds is in
// the leaf tokensOf says, and the leaves tile the range.
func TestLeafTokenRangesHoldExactlyTheirTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(SeedForTest(t), 4))
	for trial := range 2000 {
		s := Shape{Start: ring.Token(rng.Uint64()), End: ring.Token(rng.Uint64())}
		switch trial % 4 {
		case 0:
			s.End = s.Start // the whole ring
		case 1:
			s.End = s.Start + ring.Token(1+rng.IntN(100)) // a narrow range
		}
		d := rng.IntN(MaxDepth + 1)
		leaf := func(tok ring.Token) int { return int(uint32(s.leafOf(s.offset(tok), MaxDepth)) >> (MaxDepth - d)) }
		for _, j := range []int{0, rng.IntN(1 << d), 1<<d - 1} {
			lo, hi := s.tokensOf(j, d)
			if j == 0 && lo != s.Start || j == 1<<d-1 && hi != s.End {
				t.Fatalf("trial %d: %+v depth %d: leaf %d is (%d, %d], the range (%d, %d]", trial, s, d, j, lo, hi, s.Start, s.End)
			}
			if j > 0 {
				if _, prevHi := s.tokensOf(j-1, d); prevHi != lo {
					t.Fatalf("trial %d: %+v depth %d: leaf %d ends at %d, leaf %d starts after %d", trial, s, d, j-1, prevHi, j, lo)
				}
			}
			if lo == hi && s.Start != s.End {
				continue // an empty leaf of a range narrower than its leaves
			}
			for _, tok := range []ring.Token{lo + 1, lo + 2, hi - 1, hi} {
				if (Shape{Start: lo, End: hi}).Contains(tok) {
					if got := leaf(tok); got != j {
						t.Fatalf("trial %d: %+v depth %d: token %d of leaf %d's (%d, %d] is in leaf %d", trial, s, d, tok, j, lo, hi, got)
					}
				}
			}
			if hi != s.End {
				if got := leaf(hi + 1); got <= j {
					t.Fatalf("trial %d: %+v depth %d: token %d, after leaf %d, is in leaf %d", trial, s, d, hi+1, j, got)
				}
			}
		}
	}
}

// A token lies in both of two ring ranges exactly when it lies in one piece of their
// Intersect, for random ranges (whole ring, wrapping or not) and tokens near their ends.
func TestIntersectHoldsTheTokensOfBothRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(SeedForTest(t), 5))
	shape := func() Shape {
		s := Shape{Start: ring.Token(rng.Uint64()), End: ring.Token(rng.Uint64())}
		switch rng.IntN(4) {
		case 0:
			s.End = s.Start
		case 1:
			s.End = s.Start + ring.Token(1+rng.IntN(1000))
		}
		return s
	}
	for trial := range 2000 {
		a, b := shape(), shape()
		parts := a.Intersect(b)
		for _, tok := range []ring.Token{a.Start, a.Start + 1, a.End, a.End + 1, b.Start, b.Start + 1, b.End, b.End + 1,
			ring.MinToken, ring.MaxToken, ring.Token(rng.Uint64())} {
			in := 0
			for _, p := range parts {
				if p.Contains(tok) {
					in++
				}
			}
			if want := a.Contains(tok) && b.Contains(tok); (in == 1) != want || in > 1 {
				t.Fatalf("trial %d: token %d in %d pieces of %+v ∩ %+v = %+v, want in both: %v", trial, tok, in, a, b, parts, want)
			}
		}
	}
}

// SeedForTest returns KURA_SEED or a fresh seed, logged so that a failure can be
// repeated. Exported from this internal test file for the package's external tests too.
func SeedForTest(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	return seed
}
