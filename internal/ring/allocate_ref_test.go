package ring

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The balanced allocator as it was before it kept a draft ring (commit b05593d): every
// candidate token built a Ring and scored every range. Kept as the reference its
// replacement is tested against. Each takes tie: 0 is the old code exactly, which breaks
// ties between equal candidates by rounding noise; tieTolerance makes it keep the first of
// equals as its replacement does (see tieTolerance).

// oldBalancedTokens is BalancedTokens as it was before the draft ring (commit b05593d),
// building a Ring for every candidate: the reference the allocator's tests compare with.
// It chooses numTokens tokens for node joining ring (nil for the first
// node), placing each where it best evens out the replicated ownership of every node
// under strategy and rf: the idea of Cassandra's allocate_tokens_for_local_replication_factor,
// done greedily. For each token it tries the midpoints of the widest ranges and keeps the
// one that leaves the smallest spread (sum of squared deviations from the mean share).
// The first node of a cluster gets evenly spaced tokens from a random offset.
func oldBalancedTokens(ring *Ring, node Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand, tie float64) []Token {
	if ring == nil {
		return evenTokens(numTokens, Token(rng.Uint64()))
	}
	nodes := slices.Clone(ring.nodes)
	node.Tokens = nil
	nodes = append(nodes, node)
	self := len(nodes) - 1
	for range numTokens {
		cur, err := New(nodes)
		if err != nil {
			panic("ring: BalancedTokens built an invalid ring: " + err.Error()) // tokens are chosen distinct
		}
		best, bestScore := Token(0), math.Inf(1)
		tol := tie * tieScale(spread(ReplicatedOwnership(cur, strategy, rf)), len(nodes))
		for _, cand := range cur.widestMidpoints(allocCandidates) {
			trial := slices.Clone(nodes)
			trial[self].Tokens = append(slices.Clone(node.Tokens), cand)
			tr, err := New(trial)
			if err != nil {
				continue
			}
			if score := spread(ReplicatedOwnership(tr, strategy, rf)); score < bestScore-tol {
				best, bestScore = cand, score
			}
		}
		node.Tokens = append(node.Tokens, best)
		nodes[self].Tokens = node.Tokens
	}
	return node.Tokens
}

// widestMidpoints returns the midpoints of the k widest vnode ranges.
func (r *Ring) widestMidpoints(k int) []Token {
	type rng struct {
		width uint64
		mid   Token
	}
	ranges := make([]rng, len(r.vnodes))
	for i, v := range r.vnodes {
		prev := r.vnodes[(i+len(r.vnodes)-1)%len(r.vnodes)].token
		w := rangeWidth(prev, v.token)
		if len(r.vnodes) == 1 {
			w = math.MaxUint64
		}
		ranges[i] = rng{w, Token(uint64(prev) + w/2)}
	}
	slices.SortFunc(ranges, func(a, b rng) int {
		switch {
		case a.width > b.width:
			return -1
		case a.width < b.width:
			return 1
		}
		return cmpToken(a.mid, b.mid)
	})
	var out []Token
	for _, x := range ranges[:min(k, len(ranges))] {
		if x.width > 1 {
			out = append(out, x.mid)
		}
	}
	return out
}

// oldBalancedJoinTokens is BalancedJoinTokens as it was before the draft ring (commit
// b05593d): the reference the allocator's tests compare with.
func oldBalancedJoinTokens(ring *Ring, joiners []Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand, tie float64) [][]Token {
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
			nodes[self].Tokens = append(slices.Clone(nodes[self].Tokens), oldBestToken(nodes, self, strategy, rf, func(r *Ring) []Token { return r.widestMidpoints(allocCandidates) }, tie))
		}
	}
	oldRefine(nodes, first, strategy, rf, tie)
	for k := range joiners {
		out[k] = nodes[first+k].Tokens
	}
	return out
}

// oldRefine takes each joiner's tokens out in turn and puts each back where it now best
// evens out ownership (among the quarter points of the refineCandidates widest ranges),
// keeping the move only when joinScore drops; at most refinePasses passes.
func oldRefine(nodes []Node, first int, strategy Strategy, rf int, tie float64) {
	score := func() float64 {
		r, err := New(nodes)
		if err != nil {
			return math.Inf(1)
		}
		return joinScore(r, strategy, rf)
	}
	cur := score()
	for range refinePasses {
		improved := false
		for self := first; self < len(nodes); self++ {
			for i := range nodes[self].Tokens {
				if tokenCount(nodes) == 1 {
					return // the only token of a new cluster: no ring is left without it
				}
				old := nodes[self].Tokens
				rest := slices.Delete(slices.Clone(old), i, i+1)
				nodes[self].Tokens = rest
				cand := oldBestToken(nodes, self, strategy, rf, func(r *Ring) []Token { return r.widestQuarters(refineCandidates) }, tie)
				nodes[self].Tokens = slices.Insert(slices.Clone(rest), i, cand)
				if after := score(); after < cur-tie*tieScale(cur, len(nodes)) {
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

func tokenCount(nodes []Node) int {
	n := 0
	for _, nd := range nodes {
		n += len(nd.Tokens)
	}
	return n
}

// oldBestToken returns the token, among the candidates of the ring of nodes, whose addition
// to nodes[self] gives the lowest joinScore.
func oldBestToken(nodes []Node, self int, strategy Strategy, rf int, candidates func(*Ring) []Token, tie float64) Token {
	cur, err := New(nodes)
	if err != nil {
		panic("ring: BalancedJoinTokens built an invalid ring: " + err.Error()) // tokens are chosen distinct
	}
	best, bestScore := Token(0), math.Inf(1)
	tol := tie * tieScale(joinScore(cur, strategy, rf), len(nodes))
	for _, cand := range candidates(cur) {
		trial := slices.Clone(nodes)
		trial[self].Tokens = append(slices.Clone(nodes[self].Tokens), cand)
		tr, err := New(trial)
		if err != nil {
			continue
		}
		if score := joinScore(tr, strategy, rf); score < bestScore-tol {
			best, bestScore = cand, score
		}
	}
	return best
}

// widestQuarters returns the points a quarter, half and three quarters into each of the k
// widest ranges. Refinement needs the finer choice: a token's place inside a range sets
// how much of it the node takes as primary, and midpoints alone leave a joiner of a
// small cluster with a share it cannot tune (1 joiner of 8 tokens on 3 nodes of RF 3
// ended at max/min 1.38).
func (r *Ring) widestQuarters(k int) []Token {
	var out []Token
	for _, mid := range r.widestMidpoints(k) {
		i := r.RangeIndex(mid)
		start := r.RangeStart(i)
		quarter := (uint64(r.RangeEnd(i)) - uint64(start)) / 4
		if len(r.vnodes) == 1 {
			quarter = 1 << 62
		}
		if quarter == 0 {
			out = append(out, mid)
			continue
		}
		out = append(out, Token(uint64(start)+quarter), mid, Token(uint64(mid)+quarter))
	}
	return out
}
