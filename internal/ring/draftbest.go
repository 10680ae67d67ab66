package ring

import "math"

// Choosing among candidate tokens, and ties.
//
// Many candidates tie exactly: a token splitting a range its node already holds all of
// changes nobody's share, and when RF is at least the number of nodes every share is the
// mean. The allocator before the draft scored every candidate's ring whole and kept the
// first strictly lowest score, so it broke such ties by rounding noise (about 1e-16 of a
// share). The draft's scores differ from those in the last bits, so it finds the near-ties
// first: candidates within tieTolerance of the lowest. On a ring of at most exactTieVnodes
// vnodes it then scores the tied candidates whole, as the old allocator did, and keeps the
// one it kept; a cluster that grew with the old allocator and package move's transcripts
// get the same tokens. On a larger ring (the old allocator could not run there) it keeps
// the first of equals: the widest range, then the lowest token.

// tieTolerance is how much a candidate must beat another by to be better, and a refinement
// move must lower the score by to be kept, as a fraction of the score plus the square of
// the mean share (the floor matters when the ring is as even as tokens allow and the score
// is about 0). A difference it ignores is a share off the mean by about a millionth of it.
const tieTolerance = 1e-12

// exactTieVnodes is the largest ring on which ties are broken as the old allocator broke
// them. Scoring a ring whole costs about a microsecond a vnode, and ties are common on the
// small, evenly spaced rings of a new cluster: a tie of 64 candidates on 4,096 vnodes costs
// about a third of a second.
const exactTieVnodes = 4096

// tieScale is what tieTolerance is a fraction of, for a ring of score s and n nodes.
func tieScale(s float64, n int) float64 { return s + 1/float64(n*n) }

// best returns the candidate whose insertion for node s lowers the score most, or panics
// when there is none (every range one token wide).
func (d *draft) best(s int32, cands []cand) cand {
	c, _ := d.bestDelta(s, cands)
	if c.at < 0 {
		panic("ring: balanced allocation found no range to split")
	}
	return c
}

// bestDelta is best without the panic, with the change in score: at is -1 when there is
// no candidate. Of candidates within tieTolerance of one another the first is kept, or on
// a small ring the one the old allocator kept.
func (d *draft) bestDelta(s int32, cands []cand) (cand, float64) {
	d.deltas = d.deltas[:0]
	for _, c := range cands {
		d.deltas = append(d.deltas, d.try(s, c.tok, c.at))
	}
	tol := d.tolerance()
	best := -1
	for k, delta := range d.deltas {
		if best < 0 || delta < d.deltas[best]-tol {
			best = k
		}
	}
	if best < 0 {
		return cand{at: -1}, math.Inf(1)
	}
	if d.live <= d.exactTies {
		best = d.breakTie(s, cands, best, tol)
	}
	return cands[best], d.deltas[best]
}

// tolerance is tieTolerance of the committed draft's score.
func (d *draft) tolerance() float64 { return tieTolerance * tieScale(d.baseScore(), len(d.nodes)) }

// breakTie returns, when candidates other than best are within tol of it, the one the old
// allocator kept: the first of the lowest whole scores among them (a candidate further
// off scores higher by more than rounding noise). Else best.
func (d *draft) breakTie(s int32, cands []cand, best int, tol float64) int {
	tied := 0
	for _, delta := range d.deltas {
		if delta <= d.deltas[best]+tol {
			tied++
		}
	}
	if tied < 2 {
		return best
	}
	keep, keepScore := best, math.Inf(1)
	for k, delta := range d.deltas {
		if delta > d.deltas[best]+tol {
			continue
		}
		if score := d.wholeScore(s, cands[k].tok); score < keepScore {
			keep, keepScore = k, score
		}
	}
	return keep
}

// wholeScore is the score of the draft's ring with token t added to node s (none when s is
// -1), computed whole as the old allocator computed it: joinScore, or the spread of
// ReplicatedOwnership.
func (d *draft) wholeScore(s int32, t Token) float64 {
	nodes := d.nodes
	if s >= 0 {
		nodes = withToken(d.nodes, s, t)
	}
	r, err := New(nodes)
	if err != nil {
		panic("ring: balanced allocation built an invalid ring: " + err.Error()) // tokens are chosen distinct
	}
	if d.join {
		return joinScore(r, d.strategy, d.rf)
	}
	return spread(ReplicatedOwnership(r, d.strategy, d.rf))
}

// withToken returns nodes with t added to node i's tokens.
func withToken(nodes []Node, i int32, t Token) []Node {
	out := make([]Node, len(nodes))
	copy(out, nodes)
	out[i].Tokens = append(append(make([]Token, 0, len(out[i].Tokens)+1), out[i].Tokens...), t)
	return out
}
