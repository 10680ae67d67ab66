package ring

// The draft's cache of candidate evaluations.
//
// Placing a token tries the 64 widest ranges' midpoints (refinement the quarter points of
// the 16 widest), and the widest ranges change little from one placement to the next, so
// most candidates are tried again and again. What a candidate's insertion changes (which
// nodes' holdings, by how much) depends only on the ring around it: the ranges the
// evaluation read, from the furthest one the walk back looked at to the furthest vnode a
// replica walk read (its span, (lo, hi] in tokens). The change in score also depends on
// what those nodes hold now, which every placement changes for the node being placed. So
// the cache keeps the changes in holdings, drops an entry when a committed change writes or
// walks inside its span (the commit's own span: the ranges it changed and what their walks
// read), and recomputes the change in score from the entry with the arithmetic of a fresh
// evaluation: a hit is bit for bit a fresh evaluation. Evaluations that read the whole ring
// (globals, open walks, the first token of a node, ranges short of rf replicas) are not
// kept, and commits like them drop every entry.
//
// Entries hang off the vnode ending the candidate's range, so a lookup reads a short list
// and a commit visits only the vnodes whose entries could reach its span. A generation
// drops them all at once: a join's candidates are its joiners', which no later join asks
// about.

// verifyCache makes every draft compare each cache hit with a fresh evaluation and panic on
// a difference: tests set it (see checkingCache).
var verifyCache = false

// evalEntry is the evaluation of node s taking token tok: the nodes whose holdings it
// changes and by how much at each level, as shares (rf per node, from off in the pools), the
// span it read, and how many vnodes that span reaches back from and forward of the vnode the
// entry hangs off.
type evalEntry struct {
	s         int32
	tok       Token
	next      int32 // the next entry of the same vnode, -1
	off, n    int32
	lo, hi    Token
	back, fwd int32
}

// evalCache is the draft's cache.
type evalCache struct {
	head      []int32  // by vnode: its first entry, -1 (when headGen is gen)
	headGen   []uint32 // by vnode
	gen       uint32
	entries   []evalEntry
	nodes     []int32   // pool of the entries' nodes
	shares    []float64 // pool of the entries' changes, rf per node
	reachBack int32     // the most any entry's span reaches back, this generation
	reachFwd  int32
}

// grow makes room for vnode x.
func (c *evalCache) grow(x int32) {
	for int(x) >= len(c.head) {
		c.head, c.headGen = append(c.head, -1), append(c.headGen, 0)
	}
}

// first returns vnode v's first entry, -1.
func (c *evalCache) first(v int32) int32 {
	if c.headGen[v] != c.gen {
		return -1
	}
	return c.head[v]
}

// reset drops every entry.
func (c *evalCache) reset() {
	c.gen++
	c.entries, c.nodes, c.shares = c.entries[:0], c.nodes[:0], c.shares[:0]
	c.reachBack, c.reachFwd = 0, 0
}

// cachedTry returns the change in score of node s taking token t before vnode at, when
// remembered.
func (d *draft) cachedTry(s int32, t Token, at int32) (float64, bool) {
	c := &d.cache
	for e := c.first(at); e >= 0; e = c.entries[e].next {
		if en := &c.entries[e]; en.s == s && en.tok == t {
			return d.changeScore(c.nodes[en.off:en.off+en.n], c.shares[int(en.off)*d.rf:int(en.off+en.n)*d.rf]), true
		}
	}
	return 0, false
}

// remember keeps the prepared insertion of token t for node s before vnode at, when it read
// only its span.
func (d *draft) remember(s int32, t Token, at int32) {
	if d.spanAll || d.short || d.all || d.presence || d.wideSpan() {
		return
	}
	c := &d.cache
	e := evalEntry{s: s, tok: t, next: c.first(at), off: int32(len(c.nodes)), n: int32(len(d.dNodes)),
		lo: d.spanLo, hi: d.spanHi, back: d.spanBack + 1, fwd: d.spanFwd + 1}
	c.nodes = append(c.nodes, d.dNodes...)
	c.shares = append(c.shares, d.dShares...)
	c.head[at], c.headGen[at] = int32(len(c.entries)), c.gen
	c.entries = append(c.entries, e)
	c.reachBack, c.reachFwd = max(c.reachBack, e.back), max(c.reachFwd, e.fwd)
}

// invalidate drops what the prepared change (about to be committed) makes stale: the
// entries whose span it writes or walks in, or all of them when it read the whole ring.
// An entry hanging off vnode a reaches from a-back to a+fwd, so only the vnodes from
// reachFwd before the change's span to reachBack after it can hold one that overlaps.
func (d *draft) invalidate() {
	c := &d.cache
	if d.spanAll || d.short || d.all || d.presence || d.wideSpan() {
		c.reset()
		return
	}
	if len(c.entries) == 0 {
		return
	}
	v := d.spanLoV
	for range c.reachFwd {
		v = d.prv[v]
	}
	for k, past := 0, int32(-1); k < d.live && past < c.reachBack; k++ {
		prev := int32(-1)
		for e := c.first(v); e >= 0; e = c.entries[e].next {
			if en := &c.entries[e]; overlaps(en.lo, en.hi, d.spanLo, d.spanHi) {
				if prev < 0 {
					c.head[v] = en.next
				} else {
					c.entries[prev].next = en.next
				}
			} else {
				prev = e
			}
		}
		if v == d.spanHiV || past >= 0 {
			past++
		}
		v = d.nxt[v]
	}
}

// overlaps reports whether the circular token spans (a, b] and (c, e] share a token: one
// holds the other's end.
func overlaps(a, b, c, e Token) bool { return within(b, c, e) || within(e, a, b) }

// within reports whether x is in the circular span (lo, hi].
func within(x, lo, hi Token) bool { return uint64(x)-uint64(lo)-1 < uint64(hi)-uint64(lo) }

// wideSpan reports whether the prepared change's span reaches over half the ring or more
// (a few nodes holding many tokens, whose replica walks run long): circular spans that
// long can wrap past each other, which overlaps does not see, so such an evaluation is not
// kept and such a commit drops every entry. (A 3-node ring of 64 tokens and RF 3 returned a
// stale evaluation without it.)
func (d *draft) wideSpan() bool { return 2*(d.spanBack+d.spanFwd+2) >= int32(d.live) }
