package ring

import "math"

// widest keeps the draft's ranges (by the vnode ending each) in a binary heap, widest
// first and, among equally wide ones, the lower midpoint first: the order in which the
// balanced allocator tries splitting them. A range's key is computed from the draft when
// compared, so a caller that changes a range's width calls fix.
type widest struct {
	d   *draft
	ids []int32 // the heap
	pos []int32 // by vnode: its index in ids, -1
	aux []int32 // scratch of top
}

// key is the width of the range ending at v (a lone vnode's counts as the largest) and its
// midpoint, as widestMidpoints computed them on a Ring.
func (h *widest) key(v int32) (uint64, Token) {
	d := h.d
	start := d.tok[d.prv[v]]
	w := uint64(d.tok[v]) - uint64(start)
	if d.nxt[v] == v {
		w = math.MaxUint64
	}
	return w, Token(uint64(start) + w/2)
}

func (h *widest) less(a, b int32) bool {
	wa, ma := h.key(a)
	wb, mb := h.key(b)
	if wa != wb {
		return wa > wb
	}
	return ma < mb
}

func (h *widest) swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.pos[h.ids[i]], h.pos[h.ids[j]] = int32(i), int32(j)
}

func (h *widest) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.ids[i], h.ids[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *widest) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h.ids) {
			return
		}
		if c+1 < len(h.ids) && h.less(h.ids[c+1], h.ids[c]) {
			c++
		}
		if !h.less(h.ids[c], h.ids[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (h *widest) push(v int32) {
	h.pos[v] = int32(len(h.ids))
	h.ids = append(h.ids, v)
	h.up(len(h.ids) - 1)
}

func (h *widest) remove(v int32) {
	i := int(h.pos[v])
	last := len(h.ids) - 1
	h.swap(i, last)
	h.ids = h.ids[:last]
	h.pos[v] = -1
	if i < last {
		h.fix(h.ids[i])
	}
}

// fix restores the order after the width of the range ending at v changed.
func (h *widest) fix(v int32) {
	i := int(h.pos[v])
	h.up(i)
	h.down(int(h.pos[v]))
}

// top appends the k widest ranges to out, widest first, without changing the heap: a
// best-first walk of the heap's tree with a small heap of its frontier (aux, positions in
// ids), O(k log k).
func (h *widest) top(k int, out []int32) []int32 {
	if len(h.ids) == 0 {
		return out
	}
	lessAt := func(a, b int32) bool { return h.less(h.ids[a], h.ids[b]) }
	aux := append(h.aux[:0], 0)
	for len(aux) > 0 && k > 0 {
		p := aux[0]
		out = append(out, h.ids[p])
		k--
		// Pop p, then push its children.
		last := len(aux) - 1
		aux[0] = aux[last]
		aux = aux[:last]
		siftDown(aux, 0, lessAt)
		for _, c := range []int32{2*p + 1, 2*p + 2} {
			if int(c) < len(h.ids) {
				aux = append(aux, c)
				siftUp(aux, len(aux)-1, lessAt)
			}
		}
	}
	h.aux = aux
	return out
}

func siftUp(a []int32, i int, less func(a, b int32) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(a[i], a[p]) {
			return
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func siftDown(a []int32, i int, less func(a, b int32) bool) {
	for {
		c := 2*i + 1
		if c >= len(a) {
			return
		}
		if c+1 < len(a) && less(a[c+1], a[c]) {
			c++
		}
		if !less(a[c], a[i]) {
			return
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
}

// cand is a candidate token and the vnode ending the range it falls in.
type cand struct {
	tok Token
	at  int32
}

// midpoints returns the midpoints of the k widest ranges (those more than one token wide),
// widest first: Ring.widestMidpoints of old, which BalancedTokens tries.
func (d *draft) midpoints(k int, out []cand) []cand {
	d.topBuf = d.widest.top(k, d.topBuf[:0])
	for _, v := range d.topBuf {
		if w, mid := d.widest.key(v); w > 1 {
			out = append(out, cand{mid, v})
		}
	}
	return out
}

// quarters returns the points a quarter, half and three quarters into each of the k
// widest ranges (the midpoint alone when a quarter is no token): refinement's finer choice
// (see BalancedJoinTokens).
func (d *draft) quarters(k int, out []cand) []cand {
	d.topBuf = d.widest.top(k, d.topBuf[:0])
	for _, v := range d.topBuf {
		w, mid := d.widest.key(v)
		if w <= 1 {
			continue
		}
		start := d.tok[d.prv[v]]
		quarter := (uint64(d.tok[v]) - uint64(start)) / 4
		if d.live == 1 {
			quarter = 1 << 62
		}
		if quarter == 0 {
			out = append(out, cand{mid, v})
			continue
		}
		out = append(out, cand{Token(uint64(start) + quarter), v}, cand{mid, v}, cand{Token(uint64(mid) + quarter), v})
	}
	return out
}
