package move

import (
	"cmp"
	"slices"
)

// item is one copy to plan: a range's bytes to one destination, from its candidate
// sources. Nodes are indexes into the plan's sorted node IDs.
type item struct {
	rng   Range
	bytes int64
	dest  int
	cands []int // live old replicas, in the old set's order
	pref  int   // the old replica the destination replaces, when live; else -1
	fixed bool  // Strict: all of it comes from pref
	parts []part
}

// part is what one source sends of an item.
type part struct {
	node  int
	bytes int64
}

// assignSources chooses where each item's bytes come from, so that no node's load (its
// send, or with shared its send plus its receive) exceeds target, which MinMaxLoad
// computed for these items: it is the least target any choice can meet, and some choice
// meets it when an item's bytes may come from several sources. Destinations are fixed,
// so every node's receive is; what the choice decides is each node's send.
//
//  1. An item whose leaving replica is live takes all of it from there (fixed when
//     strict); the others, largest first, each from the candidate with the least load so
//     far (the longest-processing-time rule), ties to the earlier in the old set.
//  2. While some node is above target, push its excess along a shortest path of the
//     residual graph to a node below target: node a to node b when a sends some of an
//     item b could send, moving as many bytes of that item as the path allows. This is
//     max-flow augmentation started from the preferred choice instead of from nothing, so
//     it ends at target (MinMaxLoad's flow proves a feasible choice exists), moving only
//     the bytes it must: a leaving replica keeps its copies unless it is over target, and
//     on each step copies from other sources move first, then the largest parts.
//
// With strict, step 2 cannot move a leaving replica's copies, and a node above target
// through them stays there. An item left with several parts is streamed as that many
// sub-ranges (splitRange).
func assignSources(items []item, nodes int, target int64, shared, strict bool) {
	b := &balancer{items: items, send: make([]int64, nodes), limit: make([]int64, nodes), byNode: make([][]int, nodes)}
	recv := make([]int64, nodes)
	for i := range items {
		recv[items[i].dest] += items[i].bytes
	}
	for n := range nodes {
		b.limit[n] = target
		if shared {
			b.limit[n] -= recv[n]
		}
	}
	var rest []int
	for i := range items {
		if it := &items[i]; it.pref >= 0 {
			b.give(i, it.pref, it.bytes)
			it.fixed = strict
		} else {
			rest = append(rest, i)
		}
	}
	slices.SortStableFunc(rest, func(x, y int) int { return cmp.Compare(items[y].bytes, items[x].bytes) })
	for _, i := range rest {
		best := items[i].cands[0]
		for _, c := range items[i].cands[1:] {
			if b.send[c]-b.limit[c] < b.send[best]-b.limit[best] {
				best = c
			}
		}
		b.give(i, best, items[i].bytes)
	}
	for n := 0; n < nodes; {
		if b.send[n] <= b.limit[n] || !b.augment(n) {
			n++ // at target, or stuck above it: only copies that strict fixed there are left
		}
	}
}

// balancer is the state of assignSources: each node's send, its limit (target, less
// its receive when shared) and the items it sends some of.
type balancer struct {
	items       []item
	send, limit []int64
	byNode      [][]int
}

// give moves bytes of item i to node n's part, creating the part if needed.
func (b *balancer) give(i, n int, bytes int64) {
	it := &b.items[i]
	k := slices.IndexFunc(it.parts, func(p part) bool { return p.node == n })
	if k < 0 {
		it.parts = append(it.parts, part{node: n})
		k = len(it.parts) - 1
		b.byNode[n] = append(b.byNode[n], i)
	}
	it.parts[k].bytes += bytes
	b.send[n] += bytes
}

// take removes bytes of item i from node n's part, dropping the part when it empties.
func (b *balancer) take(i, n int, bytes int64) {
	it := &b.items[i]
	k := slices.IndexFunc(it.parts, func(p part) bool { return p.node == n })
	it.parts[k].bytes -= bytes
	b.send[n] -= bytes
	if it.parts[k].bytes == 0 && it.bytes > 0 {
		it.parts = slices.Delete(it.parts, k, k+1)
		b.byNode[n] = slices.DeleteFunc(b.byNode[n], func(j int) bool { return j == i })
	}
}

func (b *balancer) partOf(i, n int) int64 {
	for _, p := range b.items[i].parts {
		if p.node == n {
			return p.bytes
		}
	}
	return 0
}

// hop is a residual edge used by a path: item's bytes move from node from to the node
// whose hop it is.
type hop struct{ from, item int }

// augment pushes some of node u's excess to a node below its limit along a shortest path,
// and reports whether it found one.
func (b *balancer) augment(u int) bool {
	prev := make([]hop, len(b.send))
	seen := make([]bool, len(b.send))
	seen[u] = true
	queue := []int{u}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, i := range b.edgeOrder(a) {
			for _, c := range b.items[i].cands {
				if seen[c] {
					continue
				}
				seen[c], prev[c] = true, hop{from: a, item: i}
				if b.send[c] < b.limit[c] {
					b.push(u, c, prev)
					return true
				}
				queue = append(queue, c)
			}
		}
	}
	return false
}

// edgeOrder returns the items node a sends some of and may give up, in the order paths
// should use them: copies from other sources than the leaving replica first, then the
// larger parts.
func (b *balancer) edgeOrder(a int) []int {
	var out []int
	for _, i := range b.byNode[a] {
		if !b.items[i].fixed && b.partOf(i, a) > 0 {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(x, y int) int {
		px, py := b.items[x].pref == a, b.items[y].pref == a
		if px != py {
			if px {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.partOf(y, a), b.partOf(x, a))
	})
	return out
}

// push moves as many bytes as the path from u to w allows: u's excess, w's room, and
// each hop's part.
func (b *balancer) push(u, w int, prev []hop) {
	amount := min(b.send[u]-b.limit[u], b.limit[w]-b.send[w])
	for v := w; v != u; v = prev[v].from {
		amount = min(amount, b.partOf(prev[v].item, prev[v].from))
	}
	for v := w; v != u; v = prev[v].from {
		h := prev[v]
		b.take(h.item, h.from, amount)
		b.give(h.item, v, amount)
	}
}
