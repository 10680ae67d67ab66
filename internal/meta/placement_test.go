package meta

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

// RangeEnds cuts the token space into ranges over which placement is constant: in random
// states (the randomized test's generator), every token is written and read as the last
// token of its range is, the tokens on either side of each end included; and the ends are
// in strictly increasing order. Randomized; KURA_SEED repeats a run.
func TestRangeEndsCutWherePlacementChanges(t *testing.T) {
	rng := seededRand(t)
	checked := 0
	for run := range 20 {
		s := &State{}
		g := &gen{rng: rng, next: 1}
		for step := range 60 {
			var en Entry
			if s.Epoch == 0 {
				en = g.bootstrap()
			} else {
				en = g.entry(s)
			}
			if s.Apply(en) != nil {
				continue
			}
			p, err := NewPlacement(s)
			if err != nil {
				t.Fatal(err)
			}
			ends := p.RangeEnds()
			where := fmt.Sprintf("run %d step %d (%d ranges moving)", run, step, len(p.Moving()))
			for i := 1; i < len(ends); i++ {
				if ends[i-1] >= ends[i] {
					t.Fatalf("%s: ends %v out of order", where, ends)
				}
			}
			var tokens []ring.Token
			for _, e := range ends {
				tokens = append(tokens, e-1, e, e+1)
			}
			for range 50 {
				tokens = append(tokens, ring.Token(rng.Uint64()))
			}
			for _, tok := range tokens {
				i, _ := slices.BinarySearch(ends, tok)
				end := ends[i%len(ends)]
				if got, want := fmt.Sprint(p.WriteGroups(tok), p.ReadSet(tok)), fmt.Sprint(p.WriteGroups(end), p.ReadSet(end)); got != want {
					t.Fatalf("%s: token %d is placed %s, the end of its range %d %s", where, tok, got, end, want)
				}
			}
			checked += len(p.Moving())
		}
	}
	if checked == 0 {
		t.Fatal("no state had a change in flight")
	}
}
