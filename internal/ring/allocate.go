package ring

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// ReplicatedOwnership returns the share of all replicated data (0 to 1) each node
// holds under strategy with rf replicas: every vnode range counts for each of its
// replicas, and the shares sum to 1. With equal nodes the ideal is 1/len(nodes) each.
func ReplicatedOwnership(r *Ring, s Strategy, rf int) map[NodeID]float64 {
	out := make(map[NodeID]float64, len(r.nodes))
	for _, n := range r.nodes {
		out[n.ID] = 0
	}
	total := 0.0
	for i, v := range r.vnodes {
		prev := r.vnodes[(i+len(r.vnodes)-1)%len(r.vnodes)].token
		width := widthShare(prev, v.token, len(r.vnodes))
		for _, id := range s.Replicas(r, v.token, rf) {
			out[id] += width
			total += width
		}
	}
	for id := range out {
		out[id] /= total
	}
	return out
}

// widthShare is the share of the token space in (from, to]; a lone vnode owns it all.
func widthShare(from, to Token, vnodes int) float64 {
	if vnodes == 1 {
		return 1
	}
	return float64(rangeWidth(from, to)) / math.Exp2(64)
}

// allocCandidates is how many of the widest ranges BalancedTokens tries splitting for
// each new token.
const allocCandidates = 64

// BalancedTokens chooses numTokens tokens for node joining ring (nil for the first
// node), placing each where it best evens out the replicated ownership of every node
// under strategy and rf: the idea of Cassandra's allocate_tokens_for_local_replication_factor,
// done greedily. For each token it tries the midpoints of the widest ranges and keeps the
// one that leaves the smallest spread (sum of squared deviations from the mean share).
// The first node of a cluster gets evenly spaced tokens from a random offset.
func BalancedTokens(ring *Ring, node Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand) []Token {
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
		for _, cand := range cur.widestMidpoints(allocCandidates) {
			trial := slices.Clone(nodes)
			trial[self].Tokens = append(slices.Clone(node.Tokens), cand)
			tr, err := New(trial)
			if err != nil {
				continue
			}
			if score := spread(ReplicatedOwnership(tr, strategy, rf)); score < bestScore {
				best, bestScore = cand, score
			}
		}
		node.Tokens = append(node.Tokens, best)
		nodes[self].Tokens = node.Tokens
	}
	return node.Tokens
}

// evenTokens spaces n tokens evenly around the ring from offset.
func evenTokens(n int, offset Token) []Token {
	step := math.MaxUint64 / uint64(n)
	out := make([]Token, n)
	for i := range out {
		out[i] = Token(uint64(offset) + uint64(i)*step)
	}
	return out
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

// spread is the sum of squared deviations of the shares from their mean. It sums in node
// ID order: floating-point addition is not associative, and a sum in map order could
// break a tie between two candidate tokens differently from one run to the next.
func spread(shares map[NodeID]float64) float64 {
	mean := 1 / float64(len(shares))
	s := 0.0
	for _, id := range slices.Sorted(maps.Keys(shares)) {
		v := shares[id]
		s += (v - mean) * (v - mean)
	}
	return s
}
