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
	*flowGraph
	groups, nodes int
	nodeEdge      []int // each node's edge to the sink
}

func newFlowNet(groupBytes []int64, groupSources [][]int, nodes int) *flowNet {
	g := len(groupBytes)
	f := &flowNet{flowGraph: newFlowGraph(g + nodes + 2), groups: g, nodes: nodes, nodeEdge: make([]int, nodes)}
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
		f.nodeEdge[n] = f.edge(1+g+n, f.sink(), 0)
	}
	return f
}

func (f *flowNet) sink() int { return f.groups + f.nodes + 1 }

// least returns the least T in [lo, hi] at which every node n, with capacity T-fixed(n),
// can carry all of total (hi must be feasible).
func (f *flowNet) least(lo, hi int64, fixed func(n int) int64, total int64) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f.maxFlowAt(mid, fixed) == total {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// maxFlowAt returns the max flow with node capacities t-fixed(n).
func (f *flowNet) maxFlowAt(t int64, fixed func(n int) int64) int64 {
	for n, e := range f.nodeEdge {
		f.capacity[e] = max(0, t-fixed(n))
	}
	return f.maxFlow(0, f.sink())
}
