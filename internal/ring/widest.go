package ring

import "math"

// widest keeps the draft's ranges (by the vnode ending each) in a binary heap, widest
// first and, among equally wide ones, the lower midpoint first: the order in which the
// balanced allocator tries splitting them. Each entry holds its range's key, so comparing
// reads no vnode; a caller that changes a range's width calls fix.
//
// The order among equally wide ranges is the one the allocator always had. Midpoint splits
// of a first node's evenly spaced tokens leave many ranges exactly equally wide, so on a
// large ring the candidates are all in one stretch of it (on 60 nodes of 256 tokens the 64
// widest ranges are equally wide and lie within a third of the ring): a joiner's tokens
// crowd there, among few other nodes, and ownership evens out poorly (BenchmarkGrowRing's
// max/min). Ordering equally wide ranges by a hash of their midpoint, growing 1,000 nodes
// of 256 tokens without refinement, gave max/min 1.29 instead of 4.62; that would change
// the tokens small clusters get, and is left to a change of its own.
type widest struct {
	d    *draft
	heap []wentry
	pos  []int32 // by vnode: its index in heap, -1
	aux  []int32 // scratch of top
}

// wentry is a range in the heap: its end vnode, width and midpoint.
type wentry struct {
	w   uint64
	mid Token
	v   int32
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

// less orders heap entries i and j.
func (h *widest) less(i, j int32) bool {
	a, b := &h.heap[i], &h.heap[j]
	if a.w != b.w {
		return a.w > b.w
	}
	return a.mid < b.mid
}

func (h *widest) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.pos[h.heap[i].v], h.pos[h.heap[j].v] = int32(i), int32(j)
}

func (h *widest) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(int32(i), int32(p)) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *widest) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h.heap) {
			return
		}
		if c+1 < len(h.heap) && h.less(int32(c+1), int32(c)) {
			c++
		}
		if !h.less(int32(c), int32(i)) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (h *widest) push(v int32) {
	w, mid := h.key(v)
	h.pos[v] = int32(len(h.heap))
	h.heap = append(h.heap, wentry{w, mid, v})
	h.up(len(h.heap) - 1)
}

func (h *widest) remove(v int32) {
	i := int(h.pos[v])
	last := len(h.heap) - 1
	h.swap(i, last)
	h.heap = h.heap[:last]
	h.pos[v] = -1
	if i < last {
		moved := h.heap[i].v
		h.up(i)
		h.down(int(h.pos[moved]))
	}
}

// fix restores the order after the width of the range ending at v changed.
func (h *widest) fix(v int32) {
	i := int(h.pos[v])
	h.heap[i].w, h.heap[i].mid = h.key(v)
	h.up(i)
	h.down(int(h.pos[v]))
}

// top appends the k widest ranges to out, widest first, without changing the heap: a
// best-first walk of the heap's tree with a small heap of its frontier (aux, positions in
// heap), O(k log k).
func (h *widest) top(k int, out []int32) []int32 {
	if len(h.heap) == 0 {
		return out
	}
	aux := append(h.aux[:0], 0)
	for len(aux) > 0 && k > 0 {
		p := aux[0]
		out = append(out, h.heap[p].v)
		k--
		// Pop p, then push its children.
		last := len(aux) - 1
		aux[0] = aux[last]
		aux = aux[:last]
		siftDown(aux, 0, h.less)
		for _, c := range [2]int32{2*p + 1, 2*p + 2} {
			if int(c) < len(h.heap) {
				aux = append(aux, c)
				siftUp(aux, len(aux)-1, h.less)
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
