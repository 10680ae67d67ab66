package ring

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// The balanced allocator as it was before it kept a draft ring (commit b05593d): every
// candidate token built a Ring and scored every range. Kept as the reference its
// replacement is tested against. Each takes exactTies, the largest ring on which it runs as
// the old code did exactly, breaking ties between equal candidates by rounding noise and
// trying equally wide ranges lowest midpoint first; on a larger ring it keeps the first of
// equals (see tieTolerance) and orders equally wide ranges by midHash, as the replacement
// does (see widest). math.MaxInt is the old code exactly.

// oldBalancedTokens is BalancedTokens as it was before the draft ring (commit b05593d),
// building a Ring for every candidate: the reference the allocator's tests compare with.
// It chooses numTokens tokens for node joining ring (nil for the first
// node), placing each where it best evens out the replicated ownership of every node
// under strategy and rf: the idea of Cassandra's allocate_tokens_for_local_replication_factor,
// done greedily. For each token it tries the midpoints of the widest ranges and keeps the
// one that leaves the smallest spread (sum of squared deviations from the mean share).
// The first node of a cluster gets evenly spaced tokens from a random offset.
func oldBalancedTokens(ring *Ring, node Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand, exactTies int) []Token {
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
		tol := tieFor(len(cur.vnodes), exactTies) * tieScale(spread(ReplicatedOwnership(cur, strategy, rf)), len(nodes))
		for _, cand := range cur.widestMidpoints(allocCandidates, len(cur.vnodes) > exactTies) {
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

// tieFor is the tie tolerance the old allocator is run with on a ring of vnodes: 0 (the old
// code exactly) up to exactTies, else tieTolerance.
func tieFor(vnodes, exactTies int) float64 {
	if vnodes <= exactTies {
		return 0
	}
	return tieTolerance
}

// widestMidpoints returns the midpoints of the k widest vnode ranges, equally wide ones in
// midHash order when hashed (else lowest midpoint first).
func (r *Ring) widestMidpoints(k int, hashed bool) []Token {
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
	key := func(x rng) (uint64, uint64) { return x.width, uint64(x.mid) ^ 1<<63 } // the mid as a signed token
	if hashed {
		key = func(x rng) (uint64, uint64) { return roundWidth(x.width), midHash(x.mid) }
	}
	slices.SortFunc(ranges, func(a, b rng) int {
		wa, oa := key(a)
		wb, ob := key(b)
		switch {
		case wa != wb:
			return -cmp.Compare(wa, wb)
		case oa != ob:
			return cmp.Compare(oa, ob)
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
// Equally wide ranges are in midHash order once the ring has had more than exactTies vnodes
// (peak), as in the draft (see draft.orderWidest), and then joiners of coarseTokens or
// more are not refined.
func oldBalancedJoinTokens(ring *Ring, joiners []Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand, exactTies int) [][]Token {
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
	peak := 0
	midpoints := func(r *Ring) []Token { return r.widestMidpoints(allocCandidates, peak > exactTies) }
	for range numTokens {
		for k := range joiners {
			self := first + k
			if len(nodes[self].Tokens) == numTokens {
				continue // a new cluster's first node, placed evenly above
			}
			peak = max(peak, tokenCount(nodes))
			nodes[self].Tokens = append(slices.Clone(nodes[self].Tokens), oldBestToken(nodes, self, strategy, rf, midpoints, exactTies))
		}
	}
	if hashed := max(peak, tokenCount(nodes)) > exactTies; !hashed || numTokens < coarseTokens {
		oldRefine(nodes, first, strategy, rf, exactTies, hashed)
	}
	for k := range joiners {
		out[k] = nodes[first+k].Tokens
	}
	return out
}

// oldRefine takes each joiner's tokens out in turn and puts each back where it now best
// evens out ownership (among the quarter points of the refineCandidates widest ranges),
// keeping the move only when joinScore drops; at most refinePasses passes. Equally wide
// ranges are in midHash order when hashed.
func oldRefine(nodes []Node, first int, strategy Strategy, rf int, exactTies int, hashed bool) {
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
				cand := oldBestToken(nodes, self, strategy, rf, func(r *Ring) []Token { return r.widestQuarters(refineCandidates, hashed) }, exactTies)
				nodes[self].Tokens = slices.Insert(slices.Clone(rest), i, cand)
				tie := tieFor(tokenCount(nodes)-1, exactTies) // as the draft, with the token out
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
func oldBestToken(nodes []Node, self int, strategy Strategy, rf int, candidates func(*Ring) []Token, exactTies int) Token {
	cur, err := New(nodes)
	if err != nil {
		panic("ring: BalancedJoinTokens built an invalid ring: " + err.Error()) // tokens are chosen distinct
	}
	best, bestScore := Token(0), math.Inf(1)
	tol := tieFor(len(cur.vnodes), exactTies) * tieScale(joinScore(cur, strategy, rf), len(nodes))
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
// ended at max/min 1.38). Equally wide ranges are in midHash order when hashed.
func (r *Ring) widestQuarters(k int, hashed bool) []Token {
	var out []Token
	for _, mid := range r.widestMidpoints(k, hashed) {
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
