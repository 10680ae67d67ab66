package move

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// RecoveryBound is how fast a recovery can possibly go, whatever the schedule.
type RecoveryBound struct {
	// Seconds is the optimum of the fluid relaxation, or a lower bound on it when Exact is
	// false: the least T such that every copy's bytes can be split among its sources and
	// among its candidates with no node sending more than T times its send rate, receiving
	// more than T times its receive rate or more than its free bytes, and no rack uplink or
	// downlink carrying more than T times its rate. No schedule, splitting ranges or not,
	// finishes sooner: each link carries what crosses it at no more than its rate.
	Seconds float64
	// Exact says Seconds is the relaxation's optimum: always when no rack link is limited,
	// or when no copy has a source and a candidate in one rack. Otherwise it is the larger
	// of two relaxations, each a lower bound (docs/design/rereplication.md).
	Exact bool
	// WholeSeconds bounds the schedules that copy each range whole, from one source to one
	// destination, as every scheduler here does: at least Seconds, and at least the time
	// of each copy alone on its fastest source-destination path.
	WholeSeconds float64
	// Limits name the resources a minimum cut saturates just below Seconds ("n3 send",
	// "n5 receive", "n5 space", "r2 up", "r1 down", and "the sizes of 7 copies" when the
	// cut also counts copies whole): what sets the bound.
	Limits []string
}

// BoundRecovery returns the bound of r. It fails when the candidates' free space cannot
// hold the copies however long the recovery takes.
//
// Each relaxation is a max-flow network in which capacities grow with T, and T is found
// by bisection: source -> rack uplink -> node send -> copy (its bytes) -> hub -> node
// receive -> rack downlink -> sink. A hub is a rack's share of a copy's candidates,
// shared by every copy with the same share, so that the network stays small when every
// copy may go to almost every node. Capacities are rounded up, so a T found infeasible is
// infeasible exactly, and Seconds is the largest such T found (within a relative 1e-9 of
// the optimum).
func BoundRecovery(r *Recovery) (RecoveryBound, error) {
	var b RecoveryBound
	limited := slices.ContainsFunc(r.upBps, func(x float64) bool { return x > 0 }) ||
		slices.ContainsFunc(r.downBps, func(x float64) bool { return x > 0 })
	var cross, all []int // copies that must leave their sources' racks; every copy
	for i := range r.Copies {
		all = append(all, i)
		if !r.canStayInRack(i) {
			cross = append(cross, i)
		}
	}
	if len(all) == 0 {
		b.Exact = true
		return b, nil
	}
	var nets []*boundNet
	switch {
	case !limited:
		nets, b.Exact = []*boundNet{r.boundNet(all, false)}, true
	case len(cross) == len(all):
		nets, b.Exact = []*boundNet{r.boundNet(all, true)}, true
	case len(cross) > 0:
		nets = []*boundNet{r.boundNet(all, false), r.boundNet(cross, true)}
	default:
		nets = []*boundNet{r.boundNet(all, false)}
	}
	for _, n := range nets {
		t, err := n.least()
		if err != nil {
			return b, err
		}
		if t >= b.Seconds {
			b.Seconds, b.Limits = t, n.limits(r, t)
		}
	}
	b.WholeSeconds = max(b.Seconds, r.wholeSeconds())
	return b, nil
}

// canStayInRack reports whether copy i has a source and a candidate in one rack.
func (r *Recovery) canStayInRack(i int) bool {
	for _, s := range r.sources[i] {
		for _, d := range r.candidates[i] {
			if r.rack[d] == r.rack[s] {
				return true
			}
		}
	}
	return false
}

// wholeSeconds returns the largest, over copies, of the copy's bytes over the rate of its
// fastest single path.
func (r *Recovery) wholeSeconds() float64 {
	var out float64
	for i, c := range r.Copies {
		best := 0.0
		for _, s := range r.sources[i] {
			for _, d := range r.candidates[i] {
				best = max(best, r.pathBps(s, int(d)))
			}
		}
		out = max(out, float64(c.Bytes)/best)
	}
	return out
}

// pathBps returns the rate a copy from s to d gets alone: the least of the source's send,
// the destination's receive and, between racks, their limited uplink and downlink.
func (r *Recovery) pathBps(s, d int) float64 {
	bps := min(r.sendBps[s], r.recvBps[d])
	if rs, rd := r.rack[s], r.rack[d]; rs != rd {
		if r.upBps[rs] > 0 {
			bps = min(bps, r.upBps[rs])
		}
		if r.downBps[rd] > 0 {
			bps = min(bps, r.downBps[rd])
		}
	}
	return bps
}

// boundNet is one relaxation's network.
type boundNet struct {
	g           *flowGraph
	total       int64
	timed       []timedEdge
	copyEdge    map[int]int // edge to copy index
	source, snk int
}

// timedEdge has capacity min(ceil(T * bps), fixed): a node's send or receive (whose fixed
// part is its free space), or a rack's uplink or downlink.
type timedEdge struct {
	edge  int
	bps   float64
	fixed int64
	kind  edgeKind
	at    int // the node or rack
}

type edgeKind uint8

const (
	sendEdge edgeKind = iota
	receiveEdge
	upEdge
	downEdge
)

func (e timedEdge) label(r *Recovery, t float64) string {
	switch e.kind {
	case sendEdge:
		return string(r.Fabric.Nodes[e.at].ID) + " send"
	case receiveEdge:
		if float64(e.fixed) < math.Ceil(t*e.bps) {
			return string(r.Fabric.Nodes[e.at].ID) + " space"
		}
		return string(r.Fabric.Nodes[e.at].ID) + " receive"
	case upEdge:
		return r.racks[e.at] + " up"
	}
	return r.racks[e.at] + " down"
}

// boundNet builds the network over copies; with racks, every byte crosses the uplink of
// its source's rack and the downlink of its destination's (exact for copies that cannot
// stay in a rack, which are the only ones given with racks).
func (r *Recovery) boundNet(copies []int, racks bool) *boundNet {
	b := &netBuilder{r: r, n: &boundNet{g: newFlowGraph(2), copyEdge: map[int]int{}, source: 0, snk: 1}, racks: racks,
		up: map[int]int{}, down: map[int]int{}, send: map[int]int{}, recv: map[int]int{}, hubs: map[string]int{},
		byRack: make([][]int32, len(r.racks))}
	for _, i := range copies {
		b.addCopy(i)
	}
	return b.n
}

// netBuilder adds vertices to a boundNet as copies need them.
type netBuilder struct {
	r                    *Recovery
	n                    *boundNet
	racks                bool
	up, down, send, recv map[int]int // rack or node to its vertex
	hubs                 map[string]int
	byRack               [][]int32 // scratch: a copy's candidates by rack
}

// addCopy adds copy i: its bytes on an edge of their own, from its sources' send vertices,
// to a hub (or a lone node) for each rack it has candidates on.
func (b *netBuilder) addCopy(i int) {
	g := b.n.g
	in, out := g.vertex(), g.vertex()
	b.n.copyEdge[g.edge(in, out, b.r.Copies[i].Bytes)] = i
	b.n.total += b.r.Copies[i].Bytes
	for _, s := range b.r.sources[i] {
		g.edge(b.sendVertex(s), in, unlimited)
	}
	for k := range b.byRack {
		b.byRack[k] = b.byRack[k][:0]
	}
	for _, d := range b.r.candidates[i] {
		b.byRack[b.r.rack[d]] = append(b.byRack[b.r.rack[d]], d)
	}
	for _, share := range b.byRack {
		switch len(share) {
		case 0:
		case 1:
			g.edge(out, b.recvVertex(int(share[0])), unlimited)
		default:
			g.edge(out, b.hub(share), unlimited)
		}
	}
}

// hub returns the vertex that leads to every node of share, shared by all the copies whose
// candidates on a rack are exactly share.
func (b *netBuilder) hub(share []int32) int {
	key := hubKey(share)
	if h, ok := b.hubs[key]; ok {
		return h
	}
	h := b.n.g.vertex()
	b.hubs[key] = h
	for _, d := range share {
		b.n.g.edge(h, b.recvVertex(int(d)), unlimited)
	}
	return h
}

// sendVertex returns node s's send vertex, fed through its rack's uplink when that is
// limited.
func (b *netBuilder) sendVertex(s int) int {
	if v, ok := b.send[s]; ok {
		return v
	}
	g, from := b.n.g, b.n.source
	if rk := b.r.rack[s]; b.racks && b.r.upBps[rk] > 0 {
		v, ok := b.up[rk]
		if !ok {
			v = g.vertex()
			b.up[rk] = v
			b.n.timed = append(b.n.timed, timedEdge{edge: g.edge(b.n.source, v, 0), bps: b.r.upBps[rk], fixed: unlimited, kind: upEdge, at: rk})
		}
		from = v
	}
	v := g.vertex()
	b.send[s] = v
	b.n.timed = append(b.n.timed, timedEdge{edge: g.edge(from, v, 0), bps: b.r.sendBps[s], fixed: unlimited, kind: sendEdge, at: s})
	return v
}

// recvVertex returns node d's receive vertex, draining through its rack's downlink when
// that is limited.
func (b *netBuilder) recvVertex(d int) int {
	if v, ok := b.recv[d]; ok {
		return v
	}
	g, to := b.n.g, b.n.snk
	if rk := b.r.rack[d]; b.racks && b.r.downBps[rk] > 0 {
		v, ok := b.down[rk]
		if !ok {
			v = g.vertex()
			b.down[rk] = v
			b.n.timed = append(b.n.timed, timedEdge{edge: g.edge(v, b.n.snk, 0), bps: b.r.downBps[rk], fixed: unlimited, kind: downEdge, at: rk})
		}
		to = v
	}
	v := g.vertex()
	b.recv[d] = v
	b.n.timed = append(b.n.timed, timedEdge{edge: g.edge(v, to, 0), bps: b.r.recvBps[d], fixed: b.r.Fabric.Nodes[d].FreeBytes, kind: receiveEdge, at: d})
	return v
}

// hubKey encodes a set of nodes as a map key.
func hubKey(nodes []int32) string {
	b := make([]byte, 0, 2*len(nodes))
	for _, d := range nodes {
		b = binary.AppendUvarint(b, uint64(d))
	}
	return string(b)
}

// feasible reports whether every copy's bytes fit through the network in t seconds.
func (n *boundNet) feasible(t float64) bool {
	for _, e := range n.timed {
		c := unlimited
		if x := math.Ceil(t * e.bps); x < float64(unlimited) {
			c = int64(x)
		}
		n.g.capacity[e.edge] = min(c, e.fixed)
	}
	return n.g.maxFlow(n.source, n.snk) == n.total
}

// least returns the largest t found infeasible, within a relative 1e-9 of the least
// feasible one.
func (n *boundNet) least() (float64, error) {
	if !n.feasible(math.Inf(1)) {
		return 0, fmt.Errorf("%w: the candidates' free space cannot hold the copies", ErrInvalidRecovery)
	}
	// A first guess from below: the copies' bytes over every send or every receive rate.
	var send, recv float64
	for _, e := range n.timed {
		switch e.kind {
		case sendEdge:
			send += e.bps
		case receiveEdge:
			recv += e.bps
		}
	}
	lo := float64(n.total) / min(send, recv)
	if n.feasible(lo) {
		return lo, nil
	}
	hi := 2 * lo
	for !n.feasible(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1e-9*hi {
		if mid := lo + (hi-lo)/2; n.feasible(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, nil
}

// limits names the edges of a minimum cut just below t, where the copies no longer fit:
// the cut is what stops them.
func (n *boundNet) limits(r *Recovery, t float64) []string {
	if t = t * (1 - 1e-7); n.feasible(t) {
		return nil
	}
	seen := n.g.reachable(n.source)
	var out []string
	for _, e := range n.timed {
		if seen[n.g.to[e.edge^1]] && !seen[n.g.to[e.edge]] {
			out = append(out, e.label(r, t))
		}
	}
	slices.Sort(out)
	copies := 0
	for e := range n.copyEdge {
		if seen[n.g.to[e^1]] && !seen[n.g.to[e]] {
			copies++
		}
	}
	if copies > 0 {
		out = append(out, fmt.Sprintf("the sizes of %d copies", copies))
	}
	return out
}
