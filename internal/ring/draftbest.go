package ring

import (
	"math"
	"slices"
	"strings"
)

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
// the first of equals in the order widest tries the ranges: the widest, then, among equally
// wide ones, the first in midHash order.

// tieTolerance is how much a candidate must beat another by to be better, and a refinement
// move must lower the score by to be kept, as a fraction of the score plus the square of
// the mean share (the floor matters when the ring is as even as tokens allow and the score
// is about 0). A difference it ignores is a share off the mean by about a millionth of it.
const tieTolerance = 1e-12

// exactTieVnodes is the largest ring on which ties are broken as the old allocator broke
// them, and equally wide ranges tried lowest midpoint first as it tried them (see widest):
// 16 nodes at the default 16 tokens (every ring in kura's tests and transcripts is
// smaller). Scoring a ring whole takes a pass over every range, and ties are common on the
// small, evenly spaced rings of a new cluster: growing a cluster of 256-token nodes took
// 0.2 to 0.7 s a join while its ring had at most 1,024 vnodes, against 0.006 s a join past
// that.
const exactTieVnodes = 256

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
		if score := d.wholeScore(s, cands[k].tok, cands[k].at); score < keepScore {
			keep, keepScore = k, score
		}
	}
	return keep
}

// wholeScore is the score of the draft's ring with token t added to node s before vnode at
// (nothing added when s is -1), computed as the old allocator computed it on a Ring
// (joinScore, or the spread of ReplicatedOwnership): the same floating-point operations in
// the same order, so that it rounds the same, but from the replica sets the draft keeps.
func (d *draft) wholeScore(s int32, t Token, at int32) float64 {
	if s >= 0 {
		x, _ := d.prepareInsert(s, t, at)
		defer d.abortInsert(s, x)
	} else {
		d.end()
		d.epoch++ // no vnode is marked changed
	}
	first := d.head // the vnode of the smallest token: the Ring's first
	for v, k := d.nxt[d.head], 1; k < d.live; v, k = d.nxt[v], k+1 {
		if d.tok[v] < d.tok[first] {
			first = v
		}
	}
	if d.join {
		return d.wholeJoinScore(first)
	}
	return d.wholeSpread(first)
}

// repsNow is the replica set of the range ending at v with the prepared change.
func (d *draft) repsNow(v int32) []int32 {
	if d.mark[v] == d.epoch {
		c := d.chgPos[v]
		return d.newReps[int(c)*d.rf : int(c)*d.rf+d.chg[c].n]
	}
	return d.repsOf(v)
}

// wholeJoinScore is joinScore, reading the ranges from vnode first on.
func (d *draft) wholeJoinScore(first int32) float64 {
	rf := d.rf
	held := make([][]float64, rf)
	totals := make([]float64, rf)
	for l := range held {
		held[l] = make([]float64, len(d.nodes))
	}
	for v, k := first, 0; k < d.live; v, k = d.nxt[v], k+1 {
		w := widthShare(d.tok[d.prv[v]], d.tok[v], d.live)
		for j, i := range d.repsNow(v) {
			for l := j; l < rf; l++ {
				held[l][i] += w
				totals[l] += w
			}
		}
	}
	return heldScore(held, totals)
}

// wholeSpread is spread(ReplicatedOwnership), reading the ranges from vnode first on.
func (d *draft) wholeSpread(first int32) float64 {
	out := make([]float64, len(d.nodes))
	total := 0.0
	for v, k := first, 0; k < d.live; v, k = d.nxt[v], k+1 {
		w := widthShare(d.tok[d.prv[v]], d.tok[v], d.live)
		for _, i := range d.repsNow(v) {
			out[i] += w
			total += w
		}
	}
	byID := make([]int, len(d.nodes))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(a, b int) int { return strings.Compare(string(d.nodes[a].ID), string(d.nodes[b].ID)) })
	mean := 1 / float64(len(out))
	score := 0.0
	for _, i := range byID {
		v := out[i] / total
		score += (v - mean) * (v - mean)
	}
	return score
}
