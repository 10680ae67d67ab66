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
// stands with every token chosen so far (the old nodes' and all joiners'), where it gives
// the lowest joinScore (the spread of replicated ownership under strategy and rf, with
// lower replication factors breaking ties). Then refinement passes take each joiner token
// out in turn and put it back where it now does best (a quarter, half or three quarters
// into one of the widest ranges), when that lowers the score: a token placed early was
// chosen before the later joiners had any. On a ring of more than exactTieVnodes vnodes,
// joiners of coarseTokens tokens or more are not refined: there it leaves ownership less
// even (see coarseTokens). The old nodes' tokens never move (that would move data).
//
// On a 3-node cluster of RF 3 and 16 tokens (10 seeds; internal/ring's tests), 1, 2 and 5
// joiners end at a max/min replicated ownership of at most 1.09, 1.02 and 1.02 (1.10,
// 1.07 and 1.04 without refinement); with 8 tokens, 1.18, 1.07 and 1.05.
//
// Choosing each joiner's tokens against the old ring alone makes joiners split the same
// wide ranges, and planning the movement of each join against the old ring fetches
// ranges twice (seed 004's over-fetch): package move plans them as one change. The result
// is in joiners' order; rng is drawn from only for a new cluster's first node, which gets
// evenly spaced tokens.
//
// It copies ring into a draft (O(vnodes)) and scores candidates there incrementally (see
// BalancedTokens); to grow a large cluster join after join, an Allocator keeps the draft.
func BalancedJoinTokens(ring *Ring, joiners []Node, numTokens int, strategy Strategy, rf int, rng *rand.Rand) [][]Token {
	return NewAllocator(ring, strategy, rf).Join(joiners, numTokens, rng)
}

// Allocator chooses balanced tokens for one join after another into a growing cluster: each
// Join gives exactly what BalancedJoinTokens gives for the ring the joins before it made,
// without copying that ring first. Building a large ring node by node (the cluster
// simulator's 1,000-node cluster, as a cluster whose nodes joined one at a time with
// balanced allocation) then costs the placements alone. On a 2-core Xeon shared with
// others' work (load 4 to 10), 1,000 nodes of 256 tokens over 25 racks, RF 3, rack-aware or
// host-aware: 2.6 to 3.2 s of CPU with Join (not refined: see coarseTokens), ending at a
// max/min replicated ownership of 1.08 and 1.04, a node's ranges sharing replica sets with
// 582 and 590 other nodes on average (random tokens: 1.30 and 1.27, 630 and 641;
// BenchmarkGrowRing, BenchmarkRandomRing); 10 more nodes joining together
// (BalancedJoinTokens on the result) 0.2 s (BenchmarkJoinTen). EngineDiverse placement
// takes about twice as long, 5.5 s (its walks are longer and allocate). Not safe for
// concurrent use.
type Allocator struct{ d *draft }

// NewAllocator starts from ring (nil: a new cluster) under strategy with rf replicas.
func NewAllocator(ring *Ring, strategy Strategy, rf int) *Allocator {
	return newAllocator(ring, strategy, rf, exactTieVnodes)
}

// newAllocator is NewAllocator breaking ties as the old allocator did on rings of at most
// exactTies vnodes (see exactTieVnodes).
func newAllocator(ring *Ring, strategy Strategy, rf int, exactTies int) *Allocator {
	d := newDraft(ring, nil, strategy, rf, exactTies)
	d.setWeights(true)
	return &Allocator{d: d}
}

// Join chooses numTokens tokens for each of joiners as BalancedJoinTokens does, adds the
// joiners with them and returns them in joiners' order. A joiner's ID must be new.
func (a *Allocator) Join(joiners []Node, numTokens int, rng *rand.Rand) [][]Token {
	return a.join(joiners, numTokens, rng, true)
}

// JoinGreedy is Join without the refinement passes: each token placed once, where it does
// best against every token placed before it. It is not how clusters join (package move uses
// BalancedJoinTokens). Refinement evens out the join it refines, but its moves leave later
// joiners worse ranges to split: grown node by node to 300 nodes of 16 tokens (rack-aware,
// BenchmarkGrowRing), a ring ends at a max/min replicated ownership of 1.34 with JoinGreedy
// throughout and 1.41 with Join. Joiners of coarseTokens or more into a ring of more than
// exactTieVnodes vnodes get the same tokens from both.
func (a *Allocator) JoinGreedy(joiners []Node, numTokens int, rng *rand.Rand) [][]Token {
	return a.join(joiners, numTokens, rng, false)
}

func (a *Allocator) join(joiners []Node, numTokens int, rng *rand.Rand, refine bool) [][]Token {
	d := a.d
	d.cache.reset() // no later join asks about earlier joiners' candidates
	first := len(d.nodes)
	fresh := d.live == 0
	for _, j := range joiners {
		j.Tokens = nil
		d.addNode(j)
	}
	if fresh && len(joiners) > 0 {
		d.placeEvenly(int32(first), evenTokens(numTokens, Token(rng.Uint64())))
	}
	var cands []cand
	for range numTokens {
		for k := range joiners {
			self := int32(first + k)
			if len(d.nodes[self].Tokens) == numTokens {
				continue // a new cluster's first node, placed evenly above
			}
			cands = d.midpoints(allocCandidates, cands[:0])
			c := d.best(self, cands)
			d.insert(self, c.tok, c.at, len(d.nodes[self].Tokens))
		}
	}
	if refine && (!d.widest.hashed || numTokens < coarseTokens) {
		d.refine(first)
	}
	out := make([][]Token, len(joiners))
	for k := range joiners {
		out[k] = slices.Clone(d.nodes[first+k].Tokens)
	}
	return out
}

// Ring returns the cluster's ring as the joins so far made it.
func (a *Allocator) Ring() (*Ring, error) { return New(a.d.nodes) }

// joinWeights is joinScore's: the spread at rf, and a tenth of it at each lower rf.
func joinWeights(rf int) []float64 {
	w := make([]float64, rf)
	for l := range w {
		w[l] = 0.1
	}
	w[rf-1] = 1
	return w
}

// refine takes each joiner's tokens (nodes from first on) out in turn and puts each back
// where it now best evens out ownership (among the quarter points of the refineCandidates
// widest ranges), keeping the move only when the score drops (by more than tieTolerance);
// at most refinePasses passes.
func (d *draft) refine(first int) {
	var cands []cand
	for range refinePasses {
		improved := false
		for self := int32(first); int(self) < len(d.nodes); self++ {
			for i := range len(d.nodes[self].Tokens) {
				if d.live == 1 {
					return // the only token of a new cluster: no ring is left without it
				}
				old, at := d.nodes[self].Tokens[i], d.nxt[d.vids[self][i]]
				tol := d.tolerance()
				removed := d.remove(self, i)
				cands = d.quarters(refineCandidates, cands[:0])
				c, delta := d.bestDelta(self, cands)
				keep := removed+delta < -tol
				if c.at >= 0 && d.live <= d.exactTies && math.Abs(removed+delta) <= tol {
					// A tie: decide as the old allocator did, by the two rings' whole scores.
					keep = d.wholeScore(self, c.tok, c.at) < d.wholeScore(self, old, at)
				}
				if c.at >= 0 && keep {
					d.insert(self, c.tok, c.at, i)
					improved = true
				} else {
					d.insert(self, old, at, i)
				}
			}
		}
		if !improved {
			return
		}
	}
}

// coarseTokens is the fewest tokens a joiner has for refinement to be left out on a ring of
// more than exactTieVnodes vnodes. Refinement's moves let a joiner tune its share finely,
// which a joiner of few tokens needs, but they break up the widths that midpoint splits
// keep within a factor of two of one another, and later joiners then have worse ranges to
// choose from. Growing 300 nodes over 25 racks, RF 3, rack-aware (BenchmarkGrowRing's
// layout; refinement always on the first rings, of at most exactTieVnodes vnodes, whose
// tokens are fixed), refinement on the larger rings brings the max/min replicated ownership
// from 1.60 to 1.41 at 16 tokens a node and from 1.52 to 1.33 at 32, leaves it at 1.34 at
// 64, and takes it from 1.25 to 1.33 at 128; 1,000 nodes end at 1.30 without it against
// 1.57 with it at 64 tokens, and at 1.08 against 1.61 at 256, where it is also two thirds
// of the work. What it costs: a small cluster of many tokens ends its join less even (one
// joiner of 128 tokens on 3 nodes, simple placement: max/min 1.18 against 1.06 refined, 5
// seeds; of 256 tokens, 1.22 against 1.14), and refining those joins would leave the
// cluster's later joiners the worse ranges (refining the first 16 nodes of 256 tokens took
// 1,000 nodes to 1.97).
const coarseTokens = 64

// Refinement's effort: two passes over 48 candidates (16 ranges) each cost a little more
// than the greedy placement (64 candidates, one pass) and give nearly all of the gain
// of more.
const (
	refinePasses     = 2
	refineCandidates = 16
)

// placeEvenly gives node s, in an empty draft, tokens (the first node of a new cluster).
func (d *draft) placeEvenly(s int32, tokens []Token) {
	order := make([]int, len(tokens))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return cmpToken(tokens[a], tokens[b]) })
	d.vids[s] = make([]int32, len(tokens))
	first := int32(-1)
	for _, k := range order {
		x := d.link(s, tokens[k], first)
		if first < 0 {
			first = x
		}
		d.vids[s][k] = x
	}
	d.nodes[s].Tokens = slices.Clone(tokens)
	d.ntok[s] = int32(len(tokens))
	d.recomputeAll()
}
