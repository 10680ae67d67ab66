package ring

import (
	"math"
	"math/bits"
)

// widest keeps the draft's ranges (by the vnode ending each) in a binary heap, widest
// first: the order in which the balanced allocator tries splitting them. Each entry holds
// its range's key, so comparing reads no vnode; a caller that changes a range's width calls
// fix.
//
// Among equally wide ranges the order depends on the ring's size. Up to exactTies vnodes it
// is the lower midpoint first, the order the allocator always had, so that small clusters
// (every transcript) keep their tokens. Past that, widths are compared rounded to widthBits
// significant bits, and equal ones are in midHash order. Midpoint splits of a first node's
// evenly spaced tokens leave many ranges equally wide, or wider by a few tokens where a
// division rounded; ordered by exact width and then lowest midpoint, the candidates lie in
// one stretch of the ring (on 60 nodes of 256 tokens the 64 widest ranges are equally wide
// and lie within a third of it) or follow the rounding's regular pattern, and a joiner's
// tokens crowd there among few other nodes. Growing 1,000 nodes of 256 tokens over 25 racks
// greedily (RF 3, rack-aware; BenchmarkGrowRing, refine=false), that ended at a max/min
// replicated ownership of 4.62, a node's ranges sharing replica sets with 44 other nodes on
// average (random tokens: 1.30 and 630); hashing exact widths, 1.31 and 582 (nodes that
// joined as a class of width ran out stood out, at 1.21 and 1.26 of the mean, the rest
// within 4%); hashing rounded widths, 1.08 and 582. The switch is one way: the draft makes
// it when its committed vnodes first exceed exactTies (see draft.orderWidest), so that a
// refinement taking a token out and putting it back never sees the order change under it.
type widest struct {
	d      *draft
	heap   []wentry
	pos    []int32  // by vnode: its index in heap, -1
	aux    []wentry // scratch of top
	hashed bool     // equally wide ranges are in midHash order (else lowest midpoint first)
}

// wentry is a range in the heap: its end vnode, width (rounded, on a large ring) and order
// among equally wide ranges (its midpoint as a signed token, or midHash of it).
type wentry struct {
	w   uint64
	ord uint64
	v   int32
}

// midHash mixes a range's midpoint into its place among equally wide ranges on a large
// ring: splitmix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators", 2014) of the token's bits. It is fixed, because the tokens a cluster
// gets depend on it, and a bijection, so no two midpoints share a hash (ties of hash would
// go to the lower midpoint, and cannot arise).
func midHash(mid Token) uint64 {
	z := uint64(mid) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// roundWidth is width w rounded to the nearest multiple of a power of two that leaves it
// widthBits significant bits (saturating at the largest width): on a large ring, ranges of
// equal rounded width count as equally wide. It never orders a wider range after a
// narrower one.
func roundWidth(w uint64) uint64 {
	shift := bits.Len64(w) - widthBits
	if shift <= 0 {
		return w
	}
	q := w>>shift + w>>(shift-1)&1
	if q == 1<<widthBits && shift+widthBits == 64 {
		return math.MaxUint64
	}
	return q << shift
}

// widthBits is how finely roundWidth tells widths apart: 2^-16 of a width, far more than
// the few tokens division rounds off and far less than the halving of a midpoint split.
const widthBits = 16

// entry is the heap entry of the range ending at v.
func (h *widest) entry(v int32) wentry {
	w, mid := h.key(v)
	if h.hashed {
		return wentry{roundWidth(w), midHash(mid), v}
	}
	return wentry{w, uint64(mid) ^ 1<<63, v}
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
func (h *widest) less(i, j int32) bool { return before(&h.heap[i], &h.heap[j]) }

// before reports whether range a comes before range b: wider, or as wide and lower in ord.
func before(a, b *wentry) bool { return a.w > b.w || a.w == b.w && a.ord < b.ord }

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
	h.pos[v] = int32(len(h.heap))
	h.heap = append(h.heap, h.entry(v))
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
	h.heap[i] = h.entry(v)
	h.up(i)
	h.down(int(h.pos[v]))
}

// hashOrder puts equally wide ranges in midHash order from now on, and the heap in the new
// order (O(ranges)).
func (h *widest) hashOrder() {
	h.hashed = true
	for i := range h.heap {
		h.heap[i] = h.entry(h.heap[i].v)
	}
	for i := len(h.heap)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// top appends the k widest ranges to out, widest first, without changing the heap: a
// best-first walk of the heap's tree with a small heap of its frontier (aux: copies of the
// entries, v their position in heap, so that comparing reads no further), O(k log k).
func (h *widest) top(k int, out []int32) []int32 {
	heap := h.heap
	if len(heap) == 0 || k <= 0 {
		return out
	}
	aux := append(h.aux[:0], wentry{heap[0].w, heap[0].ord, 0})
	for len(aux) > 0 {
		p := aux[0].v
		out = append(out, heap[p].v)
		if k--; k == 0 {
			break
		}
		// Replace p by its first child (or the frontier's last entry), then add the second.
		if c := 2*p + 1; int(c) < len(heap) {
			aux[0] = wentry{heap[c].w, heap[c].ord, c}
		} else {
			aux[0] = aux[len(aux)-1]
			aux = aux[:len(aux)-1]
		}
		frontierDown(aux)
		if c := 2*p + 2; int(c) < len(heap) {
			aux = append(aux, wentry{heap[c].w, heap[c].ord, c})
			frontierUp(aux)
		}
	}
	h.aux = aux
	return out
}

// frontierDown restores top's frontier heap after its first entry changed.
func frontierDown(a []wentry) {
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(a) {
			return
		}
		if c+1 < len(a) && before(&a[c+1], &a[c]) {
			c++
		}
		if !before(&a[c], &a[i]) {
			return
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
}

// frontierUp restores top's frontier heap after an entry was appended.
func frontierUp(a []wentry) {
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !before(&a[i], &a[p]) {
			return
		}
		a[i], a[p] = a[p], a[i]
		i = p
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
