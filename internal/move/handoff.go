package move

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// Handoff is one token of a node leaving the ring, given to a node that stays: the ring
// after the change has the token, owned by To.
type Handoff struct {
	Token ring.Token
	To    ring.NodeID
}

// HandOff chooses where the tokens of the nodes leaving the ring in c go (issue 33, point
// 2): each token of a node in c.Current but not in c.Target goes to one live node of the
// target, so that the leaving node's ranges are spread over the survivors rather than
// falling to each range's ring successor, and the result is a ring like any other.
//
// A token decides the ranges whose replica walk reaches the leaving node first at that
// token (up to RF ranges: the one it ends and those before it the node is a later replica
// of). Handing it to node Y puts Y in the leaving node's place in each of them when Y is
// in none of their sets and on none of their hosts; the rack and role rules (Rules) are
// kept where a survivor allows it. Tokens are handed largest group first to the node
// whose receive time (bytes over min(disk write, NIC receive), with o.FromEveryPeer each
// range's bytes once per live peer, as the node will merge them), or the time of the rack
// links its copies cross, grows least, within its free bytes: the longest-processing-time
// rule, on the receive side and the racks', since the senders of a range are its peers
// whoever receives it. Tokens of leaving nodes a few ranges apart
// go to one node together (clusterGroups), so that handing them off pushes no staying
// replica out. A token no survivor may take is not handed off (its ranges fall to the ring
// successors). Handoffs are in token order.
func HandOff(c Change, f Fabric, o RecoveryOptions) ([]Handoff, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	inTarget := map[ring.NodeID]bool{}
	for _, n := range c.Target.Nodes() {
		inTarget[n.ID] = true
	}
	leaving := map[ring.NodeID]bool{}
	for _, n := range c.Current.Nodes() {
		if !inTarget[n.ID] {
			leaving[n.ID] = true
		}
	}
	if len(leaving) == 0 {
		return nil, nil
	}
	down := map[ring.NodeID]bool{}
	for _, h := range f.Nodes {
		if !inTarget[h.ID] || c.Down[h.ID] {
			down[h.ID] = true
		}
	}
	for id := range inTarget {
		if !slices.ContainsFunc(f.Nodes, func(h Hardware) bool { return h.ID == id }) {
			return nil, fmt.Errorf("%w: the fabric lacks node %s of the target ring", ErrInvalidRecovery, id)
		}
	}
	r, err := NewRecovery(f, RulesFor(c.Strategy, c.RF), down, nil) // the fabric's index and rules
	if err != nil {
		return nil, err
	}
	groups := clusterGroups(c, leaving, r, handoffGroups(c, leaving, r, o))
	slices.SortStableFunc(groups, func(a, b *handoffGroup) int {
		if a.weight != b.weight {
			return cmp.Compare(b.weight, a.weight)
		}
		return cmp.Compare(a.token, b.token)
	})
	recvSec := make([]float64, len(f.Nodes))
	upSec, downSec := make([]float64, len(r.racks)), make([]float64, len(r.racks))
	taken := make([]int64, len(f.Nodes))
	// rackSec is the busiest rack link after group g goes to a node of rack rk: its
	// copies from peers on other racks cross their uplinks and rk's downlink.
	//
	// Only with at least RF racks: with fewer, every range has replicas on more than one
	// rack and crosses a link whichever rack its new replica is on, and weighing the links
	// chose worse receivers on every seed tried (2 racks, 125 MB/s uplinks, 12 nodes: 0.65
	// to 0.76 of the bound in kura sim against 0.70 to 0.79 without; 4 and 5 racks: 0.71 to
	// 0.99 against 0.72 to 0.96).
	weighRacks := r.wantRacks >= c.RF
	rackSec := func(g *handoffGroup, rk int) float64 {
		out := 0.0
		if !weighRacks {
			return 0
		}
		var down int64
		for q, b := range g.rackBytes {
			if q == rk {
				continue
			}
			down += b
			if r.upBps[q] > 0 {
				out = max(out, upSec[q]+float64(b)/r.upBps[q])
			}
		}
		if r.downBps[rk] > 0 {
			out = max(out, downSec[rk]+float64(down)/r.downBps[rk])
		}
		return out
	}
	var out []Handoff
	for _, g := range groups {
		// Not handing the token off leaves its ranges to their ring successors: the
		// estimate of that is each range's new node in c.Target.
		keep := -1.0
		if g.succ != nil {
			keep = 0
			for k, n := range g.succ {
				keep = max(keep, recvSec[n]+float64(g.weights[k])/r.recvBps[n])
			}
		}
		best, bestStrict := -1, false
		var bestSec, bestRecv float64
		for n := range f.Nodes {
			if !r.live[n] || f.Nodes[n].FreeBytes-taken[n] < g.bytes {
				continue
			}
			strict, ok := g.allows(r, n)
			if !ok {
				continue
			}
			// The busiest link after the group lands, then the node's own receive time
			// (a rack link as busy for every node of a rack leaves the choice to it).
			recv := recvSec[n] + float64(g.weight)/r.recvBps[n]
			sec := max(recv, rackSec(g, r.rack[n]))
			better := sec < bestSec*(1-1e-9) || sec <= bestSec*(1+1e-9) && recv < bestRecv
			if best < 0 || (strict && !bestStrict) || (strict == bestStrict && better) {
				best, bestStrict, bestSec, bestRecv = n, strict, sec, recv
			}
		}
		if best < 0 || (keep >= 0 && keep < bestSec && bestStrict == g.succStrict) || (keep >= 0 && g.succStrict && !bestStrict) {
			for k, n := range g.succ {
				recvSec[n] += float64(g.weights[k]) / r.recvBps[n]
			}
			continue
		}
		recvSec[best] += float64(g.weight) / r.recvBps[best]
		for q, b := range g.rackBytes {
			if rk := r.rack[best]; q != rk {
				if r.upBps[q] > 0 {
					upSec[q] += float64(b) / r.upBps[q]
				}
				if r.downBps[rk] > 0 {
					downSec[rk] += float64(b) / r.downBps[rk]
				}
			}
		}
		taken[best] += g.bytes
		for _, t := range g.tokens {
			out = append(out, Handoff{Token: t, To: f.Nodes[best].ID})
		}
	}
	slices.SortFunc(out, func(a, b Handoff) int { return cmp.Compare(a.Token, b.Token) })
	// The estimates above ignore how handed tokens shift the walks of neighbouring ranges
	// (two tokens of a leaving node a few ranges apart): keep the handoffs only if the
	// ring they give moves its copies faster than the ring successors would, and leaves
	// no more bytes without a live source.
	if len(out) == 0 {
		return nil, nil
	}
	handed, err := ApplyHandoffs(c.Target, out)
	if err != nil {
		return nil, err
	}
	with, short, err := planSeconds(c, handed, f)
	if err != nil {
		return nil, err
	}
	without, short0, err := planSeconds(c, c.Target, f)
	if err != nil {
		return nil, err
	}
	if without <= with || short > short0 {
		return nil, nil
	}
	return out, nil
}

// planSeconds returns how long the copies of planning c to target take at best, as a
// kura node runs them (RecoveryOfPlan): the most seconds any node sends or receives, or
// any rack link carries, at full rate; and the bytes of the plan's shortfalls (copies no
// live replica can make).
func planSeconds(c Change, target *ring.Ring, f Fabric) (float64, int64, error) {
	c.Target, c.Rehome, c.Strict = target, nil, true
	mv, err := Plan(c)
	if err != nil {
		return 0, 0, err
	}
	r, err := RecoveryOfPlan(c, mv, f)
	if err != nil {
		return 0, 0, err
	}
	var short int64
	for _, s := range mv.Shortfalls {
		short += s.Bytes * int64(len(s.Destinations))
	}
	return r.fixedSeconds(), short, nil
}

// fixedSeconds is the load of a recovery whose copies each have one source and one
// candidate (RecoveryOfPlan's): the most seconds of any node's sends or receives, or any
// rack link's bytes, at full rate.
func (r *Recovery) fixedSeconds() float64 {
	send, recv := make([]float64, len(r.Fabric.Nodes)), make([]float64, len(r.Fabric.Nodes))
	up, down := make([]float64, len(r.racks)), make([]float64, len(r.racks))
	for i, c := range r.Copies {
		s, d := r.sources[i][0], int(r.candidates[i][0])
		b := float64(c.Bytes)
		send[s] += b / r.sendBps[s]
		recv[d] += b / r.recvBps[d]
		if rs, rd := r.rack[s], r.rack[d]; rs != rd {
			if r.upBps[rs] > 0 {
				up[rs] += b / r.upBps[rs]
			}
			if r.downBps[rd] > 0 {
				down[rd] += b / r.downBps[rd]
			}
		}
	}
	return max(slices.Max(append(send, 0)), slices.Max(append(recv, 0)), slices.Max(append(up, 0)), slices.Max(append(down, 0)))
}

// handoffGroup is the ranges one leaving token decides.
type handoffGroup struct {
	token   ring.Token   // the first of tokens
	tokens  []ring.Token // handed off together (see clusterGroups)
	peers   [][]int      // per range: the peers that stay (fabric indexes)
	weights []int64      // per range: what its new replica receives
	bytes   int64        // stored by the receiver
	weight  int64        // received by it (with merges, bytes once per live peer)
	// succ are, per range, the node c.Target's placement adds to it (nil when some range
	// gets none or several), and succStrict whether they all keep the strict rules.
	succ       []int
	succStrict bool
	// rackBytes are the bytes its receiver gets from each rack (by rack number): a
	// merge's copy from every live peer, or one copy from the first live peer.
	rackBytes map[int]int64
}

// allows reports whether node n may take the group's token: in none of its ranges' sets
// nor on their hosts (always), and whether it also keeps the strict rack and role rules.
func (g *handoffGroup) allows(r *Recovery, n int) (strict, ok bool) {
	strict = true
	for _, peers := range g.peers {
		if !r.allows(peers, n, false) {
			return false, false
		}
		strict = strict && r.allows(peers, n, true)
	}
	return strict, true
}

// handoffGroups returns, per token of a leaving node, the ranges of c.Current whose
// replica walk reaches that node first at that token.
func handoffGroups(c Change, leaving map[ring.NodeID]bool, r *Recovery, o RecoveryOptions) []*handoffGroup {
	cur := c.Current
	nr := cur.RangeCount()
	byToken := map[ring.Token]*handoffGroup{}
	var out []*handoffGroup
	for i := range nr {
		end := cur.RangeEnd(i)
		set := c.Strategy.Replicas(cur, end, c.RF)
		var gone []ring.NodeID
		var peers []int
		livePeers := 0
		for _, id := range set {
			if leaving[id] {
				gone = append(gone, id)
				continue
			}
			if n, ok := r.index[id]; ok {
				peers = append(peers, n)
				if r.live[n] {
					livePeers++
				}
			}
		}
		if len(gone) == 0 || livePeers == 0 {
			continue // nothing lost, or nothing to copy from: Plan reports it short
		}
		rg := Range{Start: cur.RangeEnd((i + nr - 1) % nr), End: end}
		bytes := c.Sizes.Bytes(rg)
		weight := bytes
		if o.FromEveryPeer {
			weight *= int64(livePeers)
		}
		succ := -1
		if len(gone) == 1 {
			for _, id := range c.Strategy.Replicas(c.Target, end, c.RF) {
				if n, ok := r.index[id]; ok && !slices.Contains(set, id) && r.live[n] {
					succ = n
				}
			}
		}
		for _, x := range gone {
			t, ok := firstTokenFrom(cur, i, x)
			if !ok {
				continue
			}
			g := byToken[t]
			if g == nil {
				g = &handoffGroup{token: t, tokens: []ring.Token{t}, succStrict: true}
				byToken[t] = g
				out = append(out, g)
			}
			if g.rackBytes == nil {
				g.rackBytes = map[int]int64{}
			}
			for _, p := range peers {
				if r.live[p] {
					g.rackBytes[r.rack[p]] += bytes
					if !o.FromEveryPeer {
						break
					}
				}
			}
			g.peers = append(g.peers, peers)
			g.weights = append(g.weights, weight)
			g.bytes += bytes
			g.weight += weight
			if succ >= 0 && (g.succ != nil || len(g.peers) == 1) {
				g.succ = append(g.succ, succ)
				g.succStrict = g.succStrict && r.allows(peers, succ, true)
			} else {
				g.succ = nil
			}
		}
	}
	return out
}

// clusterGroups merges the groups of leaving tokens that must go to one node: two tokens
// of leaving nodes with fewer than RF-1 distinct staying hosts (racks, under rack-aware
// placement) between them in ring order are in the walk of each other's ranges, so handing
// them to two nodes would put both in those ranges' sets and push a staying replica out
// (at worst every old replica of a range, whose new set is then all new). Handed to one
// node, its first token takes the leaving node's place and the others add nothing. A
// leaving token without a group of its own joins its neighbours'.
func clusterGroups(c Change, leaving map[ring.NodeID]bool, r *Recovery, groups []*handoffGroup) []*handoffGroup {
	cur := c.Current
	n := cur.RangeCount()
	byToken := map[ring.Token]*handoffGroup{}
	for _, g := range groups {
		byToken[g.token] = g
	}
	parent := map[ring.Token]ring.Token{}
	var find func(t ring.Token) ring.Token
	find = func(t ring.Token) ring.Token {
		p, ok := parent[t]
		if !ok || p == t {
			return t
		}
		root := find(p)
		parent[t] = root
		return root
	}
	rackAware := RulesFor(c.Strategy, c.RF).RackAware
	unit := func(id ring.NodeID) int {
		k, ok := r.index[id]
		switch {
		case !ok:
			return -1
		case rackAware:
			return r.rack[k]
		}
		return r.host[k]
	}
	var prev ring.Token
	havePrev := false
	between := map[int]bool{}
	for k := range 2 * n { // twice round, for the pairs that wrap
		t := cur.RangeEnd(k % n)
		id := cur.Primary(t)
		if !leaving[id] {
			between[unit(id)] = true
			continue
		}
		if havePrev && len(between) < c.RF-1 && prev != t {
			a, b := find(prev), find(t)
			if a != b {
				parent[b] = a
			}
		}
		prev, havePrev = t, true
		clear(between)
	}
	merged := map[ring.Token]*handoffGroup{}
	var out []*handoffGroup
	for k := range n {
		t := cur.RangeEnd(k)
		if !leaving[cur.Primary(t)] {
			continue
		}
		root := find(t)
		g := byToken[t]
		m := merged[root]
		if m == nil && g == nil {
			continue // no group yet: it joins its cluster's when that comes
		}
		if m == nil {
			m = &handoffGroup{token: t, succStrict: true}
			merged[root] = m
			out = append(out, m)
		}
		m.tokens = append(m.tokens, t)
		if g == nil {
			continue
		}
		if len(m.peers) > 0 && (m.succ == nil || g.succ == nil) {
			m.succ = nil
		} else {
			m.succ = append(m.succ, g.succ...)
		}
		if m.rackBytes == nil {
			m.rackBytes = map[int]int64{}
		}
		for q, b := range g.rackBytes {
			m.rackBytes[q] += b
		}
		m.peers = append(m.peers, g.peers...)
		m.weights = append(m.weights, g.weights...)
		m.bytes += g.bytes
		m.weight += g.weight
		m.succStrict = m.succStrict && g.succStrict
	}
	// A token of a cluster seen before its first group (in ring order) was skipped.
	for k := range n {
		t := cur.RangeEnd(k)
		if !leaving[cur.Primary(t)] {
			continue
		}
		if m := merged[find(t)]; m != nil && !slices.Contains(m.tokens, t) {
			m.tokens = append(m.tokens, t)
		}
	}
	return out
}

// firstTokenFrom returns the first token of node id at or after range i of r, walking the
// ring clockwise.
func firstTokenFrom(r *ring.Ring, i int, id ring.NodeID) (ring.Token, bool) {
	n := r.RangeCount()
	for k := range n {
		t := r.RangeEnd((i + k) % n)
		if r.Primary(t) == id {
			return t, true
		}
	}
	return 0, false
}

// ApplyHandoffs returns target with every handoff's token added to its node's tokens.
func ApplyHandoffs(target *ring.Ring, hs []Handoff) (*ring.Ring, error) {
	extra := map[ring.NodeID][]ring.Token{}
	for _, h := range hs {
		extra[h.To] = append(extra[h.To], h.Token)
	}
	var nodes []ring.Node
	for _, n := range target.Nodes() {
		n.Tokens = append(slices.Clone(n.Tokens), extra[n.ID]...)
		delete(extra, n.ID)
		nodes = append(nodes, n)
	}
	for id := range extra {
		return nil, fmt.Errorf("%w: a token handed off to %s, which is not in the target ring", ErrInvalidRecovery, id)
	}
	return ring.New(nodes)
}

// RecoveryOfPlan returns the copies mv's transfers make, as a kura node runs them: a
// transfer from the replica leaving its range, when that replica is live, is one copy
// from it; any other is merged from every replica of the range's old set that stays in
// its new set (every old one when none stays), one copy from each live one (see
// RecoveryOptions.FromEveryPeer). Every copy goes to the transfer's destination. It is
// what a simulation of the real cluster runs; its bound is that of the destinations the
// ring chose, not of every choice (RecoveryFromChangeWith is that).
func RecoveryOfPlan(c Change, mv *Movement, f Fabric) (*Recovery, error) {
	var needs []Need
	for _, tr := range mv.Transfers {
		old := c.Strategy.Replicas(c.Current, tr.Range.End, c.RF)
		next := c.Strategy.Replicas(c.Target, tr.Range.End, c.RF)
		nd := Need{Range: tr.Range, Bytes: tr.Bytes, Missing: 1, To: []ring.NodeID{tr.Destination}}
		for _, id := range old {
			if id != tr.Destination && slices.Contains(next, id) {
				nd.Peers = append(nd.Peers, id)
			}
		}
		if tr.Leaving && !c.Down[tr.Source] {
			nd.Source = tr.Source
			if !slices.Contains(nd.Peers, tr.Source) {
				nd.Peers = append(nd.Peers, tr.Source)
			}
			needs = append(needs, nd)
			continue
		}
		if len(nd.Peers) == 0 {
			for _, id := range old {
				if id != tr.Destination {
					nd.Peers = append(nd.Peers, id)
				}
			}
		}
		for _, p := range nd.Peers {
			if !c.Down[p] {
				nd.Source = p
				needs = append(needs, nd)
			}
		}
	}
	down := map[ring.NodeID]bool{}
	for id, d := range c.Down {
		if d {
			down[id] = true
		}
	}
	return NewRecovery(f, RulesFor(c.Strategy, c.RF), down, needs)
}
