package bench

import (
	"cmp"
	"fmt"
	"slices"
)

// Oracle is what a placement that knows the true most-read keys would serve from a fast
// store holding a given number of them: the bound tiered storage is measured against
// (issue 6). It is computed from the workload's own request stream.
type Oracle struct {
	// Reads is the number of reads measured.
	Reads int64
	// Keys is the number of distinct keys the ranking saw.
	Keys int
	// Top is how many of the most-read keys the fast store may hold, and Share the share
	// of the reads they received.
	Top   int
	Share float64
}

// OracleShare estimates the share of w's reads that its top most-read keys receive. It
// draws ops run-phase operations twice, from streams seeded by seed and seed+1: the first
// ranks the keys by how often operations chose them (reads and updates draw keys alike),
// the second counts the share of its reads that hit the top keys of that ranking. Ranking
// and measuring on separate draws keeps the result an honest estimate of the keys' true
// probabilities: keys that came out on top of one sample by luck do not also get credit
// for the luck. Over a stationary distribution (zipfian, uniform) this is the share of
// reads a fast store holding exactly the true most-read keys serves.
func OracleShare(w *Workload, ops int64, top int, seed int64) (Oracle, error) {
	return LearnedShare(w, ops, ops, top, seed)
}

// LearnedShare is OracleShare with the ranking drawn from only learn operations: about
// the most that a placement which learns the hot keys from the requests it sees (tiered
// storage's access counts) can serve after learn of them. It can hold no key the
// requests have not named yet, so early in a run it is bounded by how many keys have been
// named, whatever its budget. (It is an estimate, not a strict bound: a policy may be
// luckier than the ranking.)
func LearnedShare(w *Workload, learn, ops int64, top int, seed int64) (Oracle, error) {
	if learn <= 0 || ops <= 0 || top < 0 {
		return Oracle{}, fmt.Errorf("bench: oracle needs positive operation counts and a non-negative top, got %d, %d and %d", learn, ops, top)
	}
	g, err := NewGenerator(w, max(learn, ops))
	if err != nil {
		return Oracle{}, err
	}
	counts := make(map[string]int64)
	s := g.Stream(seed)
	for range learn {
		op := s.Next()
		if op.Kind == OpRead || op.Kind == OpUpdate || op.Kind == OpReadModifyWrite {
			counts[op.Key]++
		}
		s.Done(op)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	hot := make(map[string]bool, top)
	for _, k := range keys[:min(top, len(keys))] {
		hot[k] = true
	}
	o := Oracle{Keys: len(counts), Top: top}
	var served int64
	s = g.Stream(seed + 1)
	for range ops {
		op := s.Next()
		if op.Kind == OpRead {
			o.Reads++
			if hot[op.Key] {
				served++
			}
		}
		s.Done(op)
	}
	if o.Reads > 0 {
		o.Share = float64(served) / float64(o.Reads)
	}
	return o, nil
}
