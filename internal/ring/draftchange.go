package ring

import (
	"fmt"
	"slices"
)

// A change to the draft is prepared (the ranges it touches, their new replica sets and the
// change in every node's held token space and in the score), then committed or, for an
// insertion being tried, aborted. Only the touched ranges are read: see draft's comment.

// try returns how much inserting token t for node s before vnode at would change the
// score, leaving the draft as it was.
func (d *draft) try(s int32, t Token, at int32) float64 {
	if d.ntok[s] > 0 {
		if delta, ok := d.cachedTry(s, t, at); ok {
			if d.checkCache {
				x, fresh := d.prepareInsert(s, t, at)
				d.abortInsert(s, x)
				if fresh != delta {
					panic(fmt.Sprintf("ring: cached evaluation of token %d for %s is %v, afresh %v", t, d.nodes[s].ID, delta, fresh))
				}
			}
			return delta
		}
	}
	x, delta := d.prepareInsert(s, t, at)
	d.remember(s, t, at)
	d.abortInsert(s, x)
	return delta
}

// insert adds token t for node s before vnode at, as the k-th of s's tokens.
func (d *draft) insert(s int32, t Token, at int32, k int) {
	x, _ := d.prepareInsert(s, t, at)
	d.invalidate()
	d.commit()
	d.widest.fix(at)
	d.widest.push(x)
	d.orderWidest()
	d.ntok[s]++
	d.nodes[s].Tokens = slices.Insert(d.nodes[s].Tokens, k, t)
	d.vids[s] = slices.Insert(d.vids[s], k, x)
}

// remove takes out node s's k-th token (one the draft gave it) and returns how much that
// changed the score. The draft keeps at least one vnode.
func (d *draft) remove(s int32, k int) float64 {
	x := d.vids[s][k]
	if d.live == 1 {
		panic("ring: balanced allocation took out the ring's last vnode")
	}
	d.begin(d.ntok[s] == 1, s, -1)
	at := d.nxt[x]
	d.spanAt = at
	if d.all {
		for v, n := d.nxt[x], 0; n < d.live-1; v, n = d.nxt[v], n+1 {
			d.addChange(v, true)
		}
	} else {
		d.addChange(at, false)
		d.collectBefore(x)
		if d.presence {
			for _, v := range d.openList {
				if v != x {
					d.addChange(v, true)
				}
			}
		}
	}
	d.addChange(x, false)
	for k := range d.chg {
		d.chg[k].oldW = d.width(d.chg[k].v)
	}
	d.chg[d.chgPos[x]].hasNew = false
	d.widest.remove(x)
	d.unlink(x)
	d.cache.head[x] = -1 // its range is gone, and its id will be reused
	delta := d.finish()
	d.invalidate()
	d.commit()
	d.widest.fix(at)
	d.ntok[s]--
	d.nodes[s].Tokens = slices.Delete(d.nodes[s].Tokens, k, k+1)
	d.vids[s] = slices.Delete(d.vids[s], k, k+1)
	return delta
}

// prepareInsert links the new vnode and prepares the change.
func (d *draft) prepareInsert(s int32, t Token, at int32) (int32, float64) {
	if d.live == 0 {
		panic("ring: balanced allocation inserted into an empty draft") // the first node's tokens are spaced evenly
	}
	d.begin(d.ntok[s] == 0, s, 1)
	d.spanAt = at
	if d.all {
		for v, n := d.head, 0; n < d.live; v, n = d.nxt[v], n+1 {
			d.addChange(v, true)
		}
	} else {
		d.addChange(at, false)
		d.collectBefore(at)
		if d.presence {
			for _, v := range d.openList {
				d.addChange(v, true)
			}
		}
	}
	for k := range d.chg {
		d.chg[k].oldW = d.width(d.chg[k].v)
	}
	x := d.link(s, t, at)
	d.addChange(x, true)
	d.chg[d.chgPos[x]].hasOld = false
	return x, d.finish()
}

// abortInsert unlinks the vnode a prepared insertion added and forgets the change.
func (d *draft) abortInsert(s int32, x int32) {
	d.unlink(x)
	if d.presence {
		d.g = d.saved
	}
	d.end()
}

// begin starts a change; presence is whether node s gains (delta 1) or loses (-1) its
// first or last token, which changes the strategy's globals and the open walks.
func (d *draft) begin(presence bool, s int32, delta int32) {
	d.end()
	d.epoch++
	d.presence, d.short = presence, false
	d.all = d.kind == otherPlacement
	d.spanAll = true // until collectBefore finds the span
	if presence {
		g := d.globalsCached(s, delta)
		d.all = d.all || d.globalsMatter(g)
		d.saved, d.g = d.g, g
	}
}

// globalsCached is globals, remembered until the next commit: every candidate token of a
// node's first asks the same.
func (d *draft) globalsCached(s int32, delta int32) globals {
	if c := &d.gCache; !c.ok || c.s != s || c.delta != delta || c.version != d.version {
		c.g = d.globals(s, delta)
		c.s, c.delta, c.version, c.ok = s, delta, d.version, true
	}
	return d.gCache.g
}

// end forgets the scratch of the last change.
func (d *draft) end() {
	for _, i := range d.dNodes {
		d.slot[i] = -1
	}
	d.dNodes, d.dHeld = d.dNodes[:0], d.dHeld[:0]
	d.chg, d.newReps = d.chg[:0], d.newReps[:0]
}

// addChange adds the range ending at v to the change (walk: recompute its replica set).
func (d *draft) addChange(v int32, walk bool) {
	if d.mark[v] == d.epoch {
		d.chg[d.chgPos[v]].walk = d.chg[d.chgPos[v]].walk || walk
		return
	}
	d.mark[v], d.chgPos[v] = d.epoch, int32(len(d.chg))
	d.chg = append(d.chg, change{v: v, walk: walk, hasOld: true, hasNew: true})
}

// collectBefore adds the ranges whose walk reads the point just before vnode at: the range
// ending k vnodes before at reads it when its extent is more than k.
// The span starts after the vnode before the last one looked at.
func (d *draft) collectBefore(at int32) {
	j, k := d.prv[at], int32(1)
	for ; k < d.maxExt && j != at; k++ {
		if d.ext[j] > k {
			d.addChange(j, true)
		}
		j = d.prv[j]
	}
	d.spanLo, d.spanLoV, d.spanBack, d.spanAll = d.tok[j], j, k, j == at
}

// finish computes the touched ranges' new replica sets and widths and the change in every
// node's held token space, and returns the change in score. It ends the span at the
// furthest vnode a walk read.
func (d *draft) finish() float64 {
	rf := d.rf
	far := d.spanAt
	d.spanFwd = 0
	for k := range d.chg {
		c := &d.chg[k]
		d.newReps = append(d.newReps, make([]int32, rf)...)
		out := d.newReps[k*rf : (k+1)*rf]
		var old []int32
		if c.hasOld {
			old = d.repsOf(c.v)
			d.short = d.short || len(old) < rf
		}
		if !c.hasNew {
			d.accum(old, u128{}.sub(c.oldW))
			continue
		}
		c.newW = d.width(c.v)
		if c.walk {
			c.n, c.ext, c.open = d.walkFrom(c.v, out)
			if c.open || int(c.ext) > d.live/4 { // it may have read round to the span's start
				d.spanAll = true
			} else if uint64(d.tok[d.walkEnd])-uint64(d.spanLo) > uint64(d.tok[far])-uint64(d.spanLo) {
				far = d.walkEnd
			}
			d.spanFwd = max(d.spanFwd, c.ext)
		} else {
			c.n = copy(out, old)
		}
		d.short = d.short || c.n < rf
		if c.hasOld && slices.Equal(old, out[:c.n]) {
			if c.newW != c.oldW { // the same replicas: only the width moves
				d.accum(old, c.newW.sub(c.oldW))
			}
			continue
		}
		if c.hasOld {
			d.accum(old, u128{}.sub(c.oldW))
		}
		d.accum(out[:c.n], c.newW)
	}
	d.spanHi, d.spanHiV = d.tok[far], far
	return d.deltaScore()
}

// accum adds w (a two's-complement difference) to what each replica holds at each level it
// counts at.
func (d *draft) accum(reps []int32, w u128) {
	rf := d.rf
	for p, i := range reps {
		sl := d.slot[i]
		if sl < 0 {
			sl = int32(len(d.dNodes))
			d.slot[i] = sl
			d.dNodes = append(d.dNodes, i)
			d.dHeld = append(d.dHeld, make([]u128, rf)...)
		}
		h := d.dHeld[int(sl)*rf : int(sl+1)*rf]
		for l := p; l < rf; l++ {
			h[l] = h[l].add(w)
		}
	}
}

// deltaScore is the score after the prepared change less the score before it.
//
// When every touched range has rf replicas before and after, each level's total is
// unchanged (the widths only move between ranges), so the score, the sum over levels of
// weight/total^2 times the sum of the squares of what nodes hold (less a constant), changes
// by weight/total^2 times the sum over changed nodes of (h'-h)(h'+h): exact differences,
// rounded once each. Otherwise the score is computed from every node's holdings.
func (d *draft) deltaScore() float64 {
	if d.short {
		return d.score(true) - d.baseScore()
	}
	d.dShares = d.dShares[:0]
	for _, x := range d.dHeld {
		d.dShares = append(d.dShares, x.signedShare())
	}
	return d.changeScore(d.dNodes, d.dShares)
}

// changeScore is deltaScore's sum for nodes whose holdings change by dh (shares, rf per
// node, in the nodes' order): over levels, weight/total^2 times the sum of dh(2h+dh).
func (d *draft) changeScore(nodes []int32, dh []float64) float64 {
	rf := d.rf
	delta := 0.0
	for l, f := range d.levelF {
		if f == 0 {
			continue
		}
		acc := 0.0
		for k, i := range nodes {
			if x := dh[k*rf+l]; x != 0 {
				acc += x * (2*d.heldF[int(i)*rf+l] + x)
			}
		}
		delta += f * acc
	}
	return delta
}

// baseScore is the score of the committed draft.
func (d *draft) baseScore() float64 {
	if !d.baseOK {
		d.base, d.baseOK = d.score(false), true
	}
	return d.base
}

// score is joinScore's function (weighted per level as d.weights says) of what nodes hold,
// with the prepared change when withChange.
func (d *draft) score(withChange bool) float64 {
	rf := d.rf
	mean := 1 / float64(len(d.nodes))
	out := 0.0
	for l, w := range d.weights {
		if w == 0 {
			continue
		}
		total := d.total[l]
		if withChange {
			for k := range d.dNodes {
				total = total.add(d.dHeld[k*rf+l])
			}
		}
		t := total.share()
		sum := 0.0
		for i := range d.nodes {
			h := d.held[i*rf+l]
			if sl := d.slot[i]; withChange && sl >= 0 {
				h = h.add(d.dHeld[int(sl)*rf+l])
			}
			dev := h.share()/t - mean
			sum += dev * dev
		}
		out += w * sum
	}
	return out
}

// commit applies the prepared change to the ranges and nodes (the caller links, unlinks
// and reorders the widest ranges).
func (d *draft) commit() {
	rf := d.rf
	for k := range d.chg {
		c := &d.chg[k]
		if c.hasOld && (c.walk || !c.hasNew) {
			d.clearExt(c.v)
		}
		if !c.hasNew || !c.walk {
			continue
		}
		r := d.reps[int(c.v)*rf : int(c.v+1)*rf]
		copy(r, d.newReps[k*rf:k*rf+c.n])
		for p := c.n; p < rf; p++ {
			r[p] = -1
		}
		d.setExt(c.v, c.ext, c.open)
	}
	for _, i := range d.dNodes {
		for l := range rf {
			dh := d.dHeld[int(d.slot[i])*rf+l]
			d.held[int(i)*rf+l] = d.held[int(i)*rf+l].add(dh)
			d.heldF[int(i)*rf+l] = d.held[int(i)*rf+l].share()
			d.total[l] = d.total[l].add(dh)
		}
	}
	if d.short {
		d.refreshLevels()
	}
	// The score moves by the change's delta; the rounding this accumulates over many
	// changes is far below tieTolerance, which is what the committed score is mostly
	// read for. A change that touched a short range recomputes it.
	d.base += d.delta
	d.baseOK = d.baseOK && !d.short
	d.version++
	d.end()
}

// ownership is the draft's ReplicatedOwnership, by node index.
func (d *draft) ownership() []float64 {
	out := make([]float64, len(d.nodes))
	t := d.total[d.rf-1].share()
	for i := range out {
		out[i] = d.held[i*d.rf+d.rf-1].share() / t
	}
	return out
}
