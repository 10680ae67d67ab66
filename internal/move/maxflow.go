package move

import "slices"

// unlimited is the capacity of an edge that bounds nothing: far above any byte count, and
// small enough that adding a few of them cannot overflow.
const unlimited = int64(1) << 60

// flowGraph is a directed graph with integer edge capacities and Dinic's max-flow
// algorithm: the engine of MinMaxLoad's network and of BoundRecovery's. Edges are numbered
// as added; edge e^1 is e's reverse, so a caller may keep an edge's number and change its
// capacity between runs (the binary searches on a bound do).
type flowGraph struct {
	head     []int // first edge of each vertex, -1 for none
	next, to []int
	capacity []int64
	flow     []int64
	level    []int
	iter     []int
	queue    []int
}

func newFlowGraph(vertices int) *flowGraph {
	return &flowGraph{head: slices.Repeat([]int{-1}, vertices)}
}

// vertex adds a vertex and returns it.
func (g *flowGraph) vertex() int {
	g.head = append(g.head, -1)
	return len(g.head) - 1
}

// edge adds an edge of capacity c and its reverse (the next index), and returns the edge.
func (g *flowGraph) edge(from, to int, c int64) int {
	e := len(g.to)
	g.half(from, to, c)
	g.half(to, from, 0)
	return e
}

func (g *flowGraph) half(from, to int, c int64) {
	g.next = append(g.next, g.head[from])
	g.head[from] = len(g.to)
	g.to = append(g.to, to)
	g.capacity = append(g.capacity, c)
	g.flow = append(g.flow, 0)
}

// maxFlow returns the max flow from s to t under the current capacities, from nothing.
func (g *flowGraph) maxFlow(s, t int) int64 {
	clear(g.flow)
	var total int64
	for g.levels(s, t) {
		g.iter = append(g.iter[:0], g.head...)
		for {
			pushed := g.push(s, t, unlimited)
			if pushed == 0 {
				break
			}
			total += pushed
		}
	}
	return total
}

// levels computes BFS levels from s over edges with residual capacity and reports whether
// t is reachable.
func (g *flowGraph) levels(s, t int) bool {
	if cap(g.level) < len(g.head) {
		g.level = make([]int, len(g.head))
	}
	g.level = g.level[:len(g.head)]
	for i := range g.level {
		g.level[i] = -1
	}
	g.level[s] = 0
	g.queue = append(g.queue[:0], s)
	for k := 0; k < len(g.queue); k++ {
		v := g.queue[k]
		for e := g.head[v]; e >= 0; e = g.next[e] {
			if w := g.to[e]; g.level[w] < 0 && g.capacity[e] > g.flow[e] {
				g.level[w] = g.level[v] + 1
				g.queue = append(g.queue, w)
			}
		}
	}
	return g.level[t] >= 0
}

// push sends up to limit along level-increasing paths from v to t (a blocking flow's
// depth-first step) and returns how much it sent.
func (g *flowGraph) push(v, t int, limit int64) int64 {
	if v == t {
		return limit
	}
	for ; g.iter[v] >= 0; g.iter[v] = g.next[g.iter[v]] {
		e := g.iter[v]
		w := g.to[e]
		if g.level[w] != g.level[v]+1 || g.capacity[e] <= g.flow[e] {
			continue
		}
		if d := g.push(w, t, min(limit, g.capacity[e]-g.flow[e])); d > 0 {
			g.flow[e] += d
			g.flow[e^1] -= d
			return d
		}
	}
	return 0
}

// reachable returns the vertices reachable from s over edges with residual capacity after
// the last maxFlow: the source side of a minimum cut.
func (g *flowGraph) reachable(s int) []bool {
	seen := make([]bool, len(g.head))
	seen[s] = true
	queue := []int{s}
	for k := 0; k < len(queue); k++ {
		v := queue[k]
		for e := g.head[v]; e >= 0; e = g.next[e] {
			if w := g.to[e]; !seen[w] && g.capacity[e] > g.flow[e] {
				seen[w] = true
				queue = append(queue, w)
			}
		}
	}
	return seen
}
