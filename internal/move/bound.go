package move

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/ring"
)

// Demand is one copy a destination needs: Bytes, from any of Sources.
type Demand struct {
	Bytes       int64
	Sources     []ring.NodeID
	Destination ring.NodeID
}

// Bound is the least largest per-node load any choice of sources can give a set of
// demands. Divided by a per-node rate limit it bounds the movement's duration from below:
// some node must send or receive Bytes at that rate.
type Bound struct {
	// Bytes is the bound under the model asked for: max(ReceiveBytes, SendBytes) with
	// separate send and receive limits, the least largest send plus receive with a
	// shared one.
	Bytes int64
	// SendBytes is the least largest per-node send.
	SendBytes int64
	// ReceiveBytes is the largest per-node receive: destinations are fixed, so no choice
	// of sources changes it.
	ReceiveBytes int64
}

// MinMaxLoad returns the bound of demands: the least T such that every demand's bytes can
// be drawn from its sources with no node sending more than T (shared: sending more than
// T less what it receives). A demand's bytes may be split among its sources (a range can
// be streamed in parts by key), so this is the fluid optimum: no plan, split or not, does
// better; one that gives each copy a single source may do worse (Plan splits copies
// where it must, and meets it). It is computed independently of any plan: a binary
// search on T in bytes, each step a max-flow (Dinic's algorithm) from the demands,
// grouped by their set of sources, through the source nodes of capacity T (less their
// receive) to a sink; T is feasible when the flow carries every byte. Demands without
// sources are ignored.
//
// By max-flow min-cut, T is feasible exactly when every set S of nodes can send the
// demands whose sources all lie in S: so the bound is the largest, over S, of those
// demands' bytes (plus S's receives when shared) divided by |S|, rounded up; the tests
// check the flow against that formula by enumeration on small clusters.
func MinMaxLoad(demands []Demand, shared bool) Bound {
	g := groupDemands(demands)
	var b Bound
	for _, r := range g.recv {
		b.ReceiveBytes = max(b.ReceiveBytes, r)
	}
	f := newFlowNet(g.bytes, g.sources, len(g.recv))
	b.SendBytes = f.least(0, g.total, func(int) int64 { return 0 }, g.total)
	if !shared {
		b.Bytes = max(b.SendBytes, b.ReceiveBytes)
		return b
	}
	b.Bytes = f.least(b.ReceiveBytes, b.ReceiveBytes+g.total, func(n int) int64 { return g.recv[n] }, g.total)
	return b
}

// demandGroups are demands with the same set of sources added together; nodes are
// indexes into the sorted IDs of every source and destination.
type demandGroups struct {
	recv    []int64 // by node
	bytes   []int64 // by group
	sources [][]int // by group
	total   int64
}

func groupDemands(demands []Demand) demandGroups {
	var ids []ring.NodeID
	for _, d := range demands {
		ids = append(ids, d.Destination)
		ids = append(ids, d.Sources...)
	}
	slices.SortFunc(ids, func(a, b ring.NodeID) int { return strings.Compare(string(a), string(b)) })
	ids = slices.Compact(ids)
	index := make(map[ring.NodeID]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	g := demandGroups{recv: make([]int64, len(ids))}
	byKey := map[string]int{}
	for _, d := range demands {
		if len(d.Sources) == 0 {
			continue
		}
		g.recv[index[d.Destination]] += d.Bytes
		src := make([]int, 0, len(d.Sources))
		for _, s := range d.Sources {
			src = append(src, index[s])
		}
		slices.Sort(src)
		src = slices.Compact(src)
		k, ok := byKey[setKey(src)]
		if !ok {
			k = len(g.bytes)
			byKey[setKey(src)] = k
			g.bytes, g.sources = append(g.bytes, 0), append(g.sources, src)
		}
		g.bytes[k] += d.Bytes
		g.total += d.Bytes
	}
	return g
}

// setKey encodes a sorted set of node indexes as a map key.
func setKey(xs []int) string {
	var b []byte
	for _, x := range xs {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return string(b)
}

// flowNet is the max-flow network of MinMaxLoad: vertex 0 the source, then one vertex per
// group of demands, then one per node, then the sink.
type flowNet struct {
	groups, nodes int
	head          []int // first edge of each vertex, -1 for none
	next, to      []int
	capacity      []int64 // of each edge; edge e^1 is its reverse
	flow          []int64
	nodeEdge      []int // each node's edge to the sink
	level, iter   []int
}

func newFlowNet(groupBytes []int64, groupSources [][]int, nodes int) *flowNet {
	g := len(groupBytes)
	f := &flowNet{groups: g, nodes: nodes, head: slices.Repeat([]int{-1}, g+nodes+2), nodeEdge: make([]int, nodes)}
	var all int64
	for _, b := range groupBytes {
		all += b
	}
	for i, b := range groupBytes {
		f.edge(0, 1+i, b)
		for _, n := range groupSources[i] {
			f.edge(1+i, 1+g+n, all)
		}
	}
	for n := range nodes {
		f.nodeEdge[n] = len(f.to)
		f.edge(1+g+n, f.sink(), 0)
	}
	return f
}

func (f *flowNet) sink() int { return f.groups + f.nodes + 1 }

// edge adds an edge of capacity c and its reverse (the next index, so e^1 finds it).
func (f *flowNet) edge(from, to int, c int64) {
	f.half(from, to, c)
	f.half(to, from, 0)
}

func (f *flowNet) half(from, to int, c int64) {
	f.next = append(f.next, f.head[from])
	f.head[from] = len(f.to)
	f.to = append(f.to, to)
	f.capacity = append(f.capacity, c)
	f.flow = append(f.flow, 0)
}

// least returns the least T in [lo, hi] at which every node n, with capacity T-fixed(n),
// can carry all of total (hi must be feasible).
func (f *flowNet) least(lo, hi int64, fixed func(n int) int64, total int64) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f.maxFlow(mid, fixed) == total {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// maxFlow returns the max flow with node capacities t-fixed(n), by Dinic's algorithm.
func (f *flowNet) maxFlow(t int64, fixed func(n int) int64) int64 {
	clear(f.flow)
	for n, e := range f.nodeEdge {
		f.capacity[e] = max(0, t-fixed(n))
	}
	var total int64
	for f.levels() {
		f.iter = slices.Clone(f.head)
		for {
			pushed := f.push(0, 1<<62)
			if pushed == 0 {
				break
			}
			total += pushed
		}
	}
	return total
}

// levels computes BFS levels from the source over edges with residual capacity and
// reports whether the sink is reachable.
func (f *flowNet) levels() bool {
	f.level = slices.Repeat([]int{-1}, len(f.head))
	f.level[0] = 0
	queue := []int{0}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for e := f.head[v]; e >= 0; e = f.next[e] {
			if w := f.to[e]; f.level[w] < 0 && f.capacity[e] > f.flow[e] {
				f.level[w] = f.level[v] + 1
				queue = append(queue, w)
			}
		}
	}
	return f.level[f.sink()] >= 0
}

// push sends up to limit along level-increasing paths from v to the sink (a blocking
// flow's depth-first step) and returns how much it sent.
func (f *flowNet) push(v int, limit int64) int64 {
	if v == f.sink() {
		return limit
	}
	for ; f.iter[v] >= 0; f.iter[v] = f.next[f.iter[v]] {
		e := f.iter[v]
		w := f.to[e]
		if f.level[w] != f.level[v]+1 || f.capacity[e] <= f.flow[e] {
			continue
		}
		if d := f.push(w, min(limit, f.capacity[e]-f.flow[e])); d > 0 {
			f.flow[e] += d
			f.flow[e^1] -= d
			return d
		}
	}
	return 0
}
