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
	return float64(rangeWidth(from, to)) / 0x1p64
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

// joinScore is what BalancedJoinTokens minimizes: the spread of replicated ownership
// under strategy and rf (the sum of squared deviations of the nodes' shares from their
// mean), plus a tenth of the spread of what the first l replicas of each range hold, for
// each l below rf. The lower terms break near-ties, which are common: when rf is at
// least the number of nodes, every node holds everything and the first term is flat, so
// without them a new cluster's nodes take tokens in any order (two of one node's side by
// side), and the next joiner cannot get an even share: one joiner of 16 tokens on 3
// nodes of RF 3 ended at max/min 1.40, and at 1.05-1.09 with them. Computed in one pass
// of placement (a set's first l replicas stand for its set at RF l; for every strategy
// but engine-diverse they are the same).
func joinScore(r *Ring, strategy Strategy, rf int) float64 {
	index := make(map[NodeID]int, len(r.nodes))
	for i, n := range r.nodes {
		index[n.ID] = i
	}
	held := make([][]float64, rf) // held[l][i]: the token space node i holds among the first l+1 replicas
	totals := make([]float64, rf)
	for l := range held {
		held[l] = make([]float64, len(r.nodes))
	}
	for i, v := range r.vnodes {
		prev := r.vnodes[(i+len(r.vnodes)-1)%len(r.vnodes)].token
		w := widthShare(prev, v.token, len(r.vnodes))
		for j, id := range strategy.Replicas(r, v.token, rf) {
			for l := j; l < rf; l++ {
				held[l][index[id]] += w
				totals[l] += w
			}
		}
	}
	return heldScore(held, totals)
}

// heldScore is joinScore from what each node holds among the first l+1 replicas (held[l])
// and the token space counted at each level (totals[l]). The draft's whole rescoring
// calls it too, so that the two agree bit for bit.
func heldScore(held [][]float64, totals []float64) float64 {
	score := 0.0
	for l, h := range held {
		weight := 0.1
		if l == len(held)-1 {
			weight = 1
		}
		mean := 1 / float64(len(h))
		for _, x := range h {
			d := x/totals[l] - mean
			score += weight * d * d
		}
	}
	return score
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
//
// The candidates are scored on a draft of the ring that only recomputes the few ranges a
// token changes (see draft), so a token costs about allocCandidates times a handful of
// replica walks rather than a ring's worth, after copying the ring into the draft.
func BalancedTokens(ring *Ring, node Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand) []Token {
	if ring == nil {
		return evenTokens(numTokens, Token(rng.Uint64()))
	}
	return balancedTokens(ring, node, numTokens, strategy, rf, exactTieVnodes)
}

// balancedTokens is BalancedTokens breaking ties as the old allocator did on rings of at
// most exactTies vnodes (see exactTieVnodes).
func balancedTokens(ring *Ring, node Node, numTokens int, strategy Strategy, rf int, exactTies int) []Token {
	d := newDraft(ring, []Node{node}, strategy, rf, exactTies)
	d.setWeights(false)
	self := int32(len(d.nodes) - 1)
	var cands []cand
	for range numTokens {
		cands = d.midpoints(allocCandidates, cands[:0])
		c := d.best(self, cands)
		d.insert(self, c.tok, c.at, len(d.nodes[self].Tokens))
	}
	return d.nodes[self].Tokens
}

// spreadWeights weighs only the last level: the spread of ReplicatedOwnership.
func spreadWeights(rf int) []float64 {
	w := make([]float64, rf)
	w[rf-1] = 1
	return w
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
