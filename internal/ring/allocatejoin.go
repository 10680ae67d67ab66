package ring

import (
	"math"
	"math/rand/v2"
	"slices"
)

// BalancedJoinTokens chooses numTokens tokens for each of several nodes joining ring
// together (ring nil: a new cluster), planning the joiners against one another rather
// than each against ring alone. The joiners take one token each in turn, each placed as
// BalancedTokens places one: at the midpoint of one of the widest ranges of the ring as it
// stands with every token chosen so far (the old nodes' and all joiners'), where it leaves
// the smallest spread of replicated ownership under strategy and rf. Then refinement
// passes take each joiner token out in turn and put it back where it now does best, when
// that shrinks the spread: a token placed early was chosen before the later joiners had
// any, and greedy placement alone leaves 5 joiners of 16 tokens on a 3-node cluster at a
// max/min replicated ownership of 1.07-1.12, which refinement brings to 1.01-1.02. The
// old nodes' tokens never move (that would move data).
//
// Choosing each joiner's tokens against the old ring alone makes joiners split the same
// wide ranges, and planning the movement of each join against the old ring fetches
// ranges twice (seed 004's over-fetch): package move plans them as one change. The result
// is in joiners' order; rng is drawn from only for a new cluster's first node, which gets
// evenly spaced tokens.
func BalancedJoinTokens(ring *Ring, joiners []Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand) [][]Token {
	out := make([][]Token, len(joiners))
	var nodes []Node
	if ring != nil {
		nodes = slices.Clone(ring.nodes)
	}
	first := len(nodes)
	for _, j := range joiners {
		j.Tokens = nil
		nodes = append(nodes, j)
	}
	if ring == nil && len(joiners) > 0 {
		nodes[first].Tokens = evenTokens(numTokens, Token(rng.Uint64()))
	}
	for range numTokens {
		for k := range joiners {
			self := first + k
			if len(nodes[self].Tokens) == numTokens {
				continue // a new cluster's first node, placed evenly above
			}
			nodes[self].Tokens = append(slices.Clone(nodes[self].Tokens), bestToken(nodes, self, strategy, rf, allocCandidates))
		}
	}
	refine(nodes, first, strategy, rf)
	for k := range joiners {
		out[k] = nodes[first+k].Tokens
	}
	return out
}

// refine takes each joiner's tokens out in turn and puts each back where it now best
// evens out ownership (among the midpoints of the refineCandidates widest ranges),
// keeping the move only when the spread shrinks; at most refinePasses passes.
func refine(nodes []Node, first int, strategy Strategy, rf int) {
	score := func() float64 {
		r, err := New(nodes)
		if err != nil {
			return math.Inf(1)
		}
		return spread(ReplicatedOwnership(r, strategy, rf))
	}
	cur := score()
	for range refinePasses {
		improved := false
		for self := first; self < len(nodes); self++ {
			for i := range nodes[self].Tokens {
				old := nodes[self].Tokens
				rest := slices.Delete(slices.Clone(old), i, i+1)
				nodes[self].Tokens = rest
				cand := bestToken(nodes, self, strategy, rf, refineCandidates)
				nodes[self].Tokens = slices.Insert(slices.Clone(rest), i, cand)
				if after := score(); after < cur {
					cur, improved = after, true
				} else {
					nodes[self].Tokens = old
				}
			}
		}
		if !improved {
			return
		}
	}
}

// Refinement's effort: two passes over 16 candidates each cost about as much as the
// greedy placement (64 candidates, one pass) and give nearly all of the gain of more.
const (
	refinePasses     = 2
	refineCandidates = 16
)

// bestToken returns the token, among the midpoints of the widest ranges of the ring of
// nodes, that best evens out replicated ownership when added to nodes[self].
func bestToken(nodes []Node, self int, strategy Strategy, rf, candidates int) Token {
	cur, err := New(nodes)
	if err != nil {
		panic("ring: BalancedJoinTokens built an invalid ring: " + err.Error()) // tokens are chosen distinct
	}
	best, bestScore := Token(0), math.Inf(1)
	for _, cand := range cur.widestMidpoints(candidates) {
		trial := slices.Clone(nodes)
		trial[self].Tokens = append(slices.Clone(nodes[self].Tokens), cand)
		tr, err := New(trial)
		if err != nil {
			continue
		}
		if score := spread(ReplicatedOwnership(tr, strategy, rf)); score < bestScore {
			best, bestScore = cand, score
		}
	}
	return best
}
