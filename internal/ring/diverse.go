package ring

import (
	"slices"
)

// EngineDiverse is the heterogeneous cluster's placement (seed 000, section 3.1): walking
// clockwise from the key's token it chooses nodes that together cover every engine role
// in the ring, never two on one host, so that each key has a write-optimized, a
// read-optimized and an in-memory replica when the cluster runs all three. Once the roles
// are covered (or n is reached), the remaining replicas follow HostAware.
//
// The walk takes a node when its role is not covered yet and its host holds no replica.
// That greedy walk can miss a cover that exists (host A runs lsm and btree, host B only
// lsm: taking A's lsm first leaves no host for btree), so when it covers fewer roles than
// the ring allows, a search over the walk finds the cover that takes the earliest nodes
// instead. The number of roles the ring allows is the largest set of roles that distinct
// hosts can hold, one each (a matching of roles to hosts); Ring computes it once.
type EngineDiverse struct{}

// Name implements Strategy.
func (EngineDiverse) Name() string { return "engine-diverse" }

// Replicas implements Strategy.
func (EngineDiverse) Replicas(r *Ring, t Token, n int) []NodeID {
	w := newWalker(r, t)
	chosen := w.choose(r.coverable, n)
	out := make([]NodeID, len(chosen))
	for k, p := range chosen {
		out[k] = r.nodes[w.order[p]].ID
	}
	return out
}

// choose returns the positions in the walk of EngineDiverse's n replicas, in walk order
// (the primary first), when the ring's replica sets can cover coverable roles. The
// balanced allocator's draft ring walks through the same code.
func (w *walker) choose(coverable, n int) []int {
	want := min(n, coverable)
	chosen := w.greedyCover(want) // positions in the walk
	if len(chosen) < want {
		chosen = searchCover(w.nodes, w.all(), want)
	}
	// Fill up host-aware, then return in walk order (the primary first).
	var hosts []string
	for _, p := range chosen {
		hosts = append(hosts, w.nodes[w.order[p]].Host)
	}
	for p := 0; len(chosen) < n; p++ {
		i, ok := w.at(p)
		if !ok {
			break
		}
		if !slices.Contains(chosen, p) && !slices.Contains(hosts, w.nodes[i].Host) {
			chosen, hosts = append(chosen, p), append(hosts, w.nodes[i].Host)
		}
	}
	slices.Sort(chosen)
	return chosen
}

// walker lists the ring's nodes (indexes) in the order a clockwise walk from a token first
// meets them, reading the ring only as far as asked. It reads a Ring, or the allocator's
// draft (which reuses one walker: see draft.walkDiverse).
type walker struct {
	nodes   []Node
	vnodes  int // vnodes in the ring: a walk reads at most this many
	present int // nodes with tokens, at most: the walk stops when it has met them all
	r       *Ring
	start   int // vnode of r the walk starts at
	d       *draft
	cur     int32 // next vnode of d to read

	next      int  // vnodes read so far
	lastNew   int  // vnodes read when the last node was first met
	exhausted bool // asked for more nodes than the ring has
	seen      []bool
	order     []int
}

func newWalker(r *Ring, t Token) *walker {
	return &walker{nodes: r.nodes, vnodes: len(r.vnodes), present: len(r.nodes), r: r, start: r.vnodeFor(t),
		seen: make([]bool, len(r.nodes))}
}

// read returns the node of the next vnode of the walk.
func (w *walker) read() int {
	if w.d != nil {
		i := w.d.own[w.cur]
		w.cur = w.d.nxt[w.cur]
		return int(i)
	}
	return w.r.vnodes[(w.start+w.next)%len(w.r.vnodes)].node
}

// at returns the node at position p of the walk, or false when fewer nodes have tokens.
func (w *walker) at(p int) (int, bool) {
	for len(w.order) <= p && w.next < w.vnodes && len(w.order) < w.present {
		i := w.read()
		w.next++
		if !w.seen[i] {
			w.seen[i] = true
			w.order = append(w.order, i)
			w.lastNew = w.next
		}
	}
	if p < len(w.order) {
		return w.order[p], true
	}
	w.exhausted = true
	return 0, false
}

// all returns the whole walk.
func (w *walker) all() []int {
	w.at(len(w.nodes))
	return w.order
}

// greedyCover takes, in walk order, each node whose role is not covered and whose host
// holds no replica, until want roles are covered; it returns their positions.
func (w *walker) greedyCover(want int) []int {
	var chosen []int
	var roles []Role
	var hosts []string
	for p := 0; len(chosen) < want; p++ {
		i, ok := w.at(p)
		if !ok {
			break
		}
		nd := w.nodes[i]
		if !slices.Contains(roles, nd.Role) && !slices.Contains(hosts, nd.Host) {
			chosen, roles, hosts = append(chosen, p), append(roles, nd.Role), append(hosts, nd.Host)
		}
	}
	return chosen
}

// searchCover returns the positions in order of the want nodes of distinct roles on
// distinct hosts that come first in walk order (comparing the earliest node, then the
// next), by depth-first search. The ring allows want roles, so a cover exists. Only
// layouts where greedyCover fails get here; a node is tried only when the nodes after it
// can still complete the cover (completable), which keeps the search from wandering.
func searchCover(nodes []Node, order []int, want int) []int {
	var chosen []int // positions
	chosenNodes := func() []int {
		out := make([]int, len(chosen))
		for k, p := range chosen {
			out[k] = order[p]
		}
		return out
	}
	var try func(from int) bool
	try = func(from int) bool {
		if len(chosen) == want {
			return true
		}
		for p := from; p < len(order); p++ {
			if !compatible(nodes, chosenNodes(), nodes[order[p]]) {
				continue
			}
			chosen = append(chosen, p)
			if completable(nodes, chosenNodes(), order[p+1:], want) && try(p+1) {
				return true
			}
			chosen = chosen[:len(chosen)-1]
		}
		return false
	}
	try(0)
	return chosen
}

// compatible reports whether nd has a role and a host that no chosen node has.
func compatible(nodes []Node, chosen []int, nd Node) bool {
	for _, i := range chosen {
		if nodes[i].Role == nd.Role || nodes[i].Host == nd.Host {
			return false
		}
	}
	return true
}

// completable reports whether nodes from rest can add want-len(chosen) roles to chosen on
// hosts of their own.
func completable(nodes []Node, chosen []int, rest []int, want int) bool {
	need := want - len(chosen)
	if need == 0 {
		return true
	}
	cands := map[Role][]string{}
	for _, i := range rest {
		if nd := nodes[i]; compatible(nodes, chosen, nd) {
			cands[nd.Role] = addHost(cands[nd.Role], nd.Host, need)
		}
	}
	return matchRoles(cands, need)
}

// addHost adds host to a role's candidate hosts unless it is there or the role already
// has limit of them. Keeping limit candidates per role loses no matching of limit roles:
// in any matching, the other roles take at most limit-1 hosts, so one of the role's first
// limit candidates is free for it.
func addHost(hosts []string, host string, limit int) []string {
	if len(hosts) >= limit || slices.Contains(hosts, host) {
		return hosts
	}
	return append(hosts, host)
}

// matchRoles reports whether need of the roles in cands can each get a distinct host from
// their candidates, by trying every assignment (a few roles, at most need candidates each).
func matchRoles(cands map[Role][]string, need int) bool {
	roles := make([]Role, 0, len(cands))
	for role := range cands {
		roles = append(roles, role)
	}
	slices.Sort(roles)
	var used []string
	var assign func(k, got int) bool
	assign = func(k, got int) bool {
		if got == need {
			return true
		}
		if len(roles)-k < need-got {
			return false
		}
		for _, h := range cands[roles[k]] {
			if !slices.Contains(used, h) {
				used = append(used, h)
				ok := assign(k+1, got+1)
				used = used[:len(used)-1]
				if ok {
					return true
				}
			}
		}
		return assign(k+1, got) // leave this role out
	}
	return assign(0, 0)
}

// coverableRoles returns how many engine roles distinct hosts of nodes can hold, one
// each: the most roles a replica set can cover.
func coverableRoles(nodes []Node) int {
	var roles []Role
	for _, nd := range nodes {
		if !slices.Contains(roles, nd.Role) {
			roles = append(roles, nd.Role)
		}
	}
	for need := len(roles); need > 0; need-- {
		cands := map[Role][]string{}
		for _, nd := range nodes {
			cands[nd.Role] = addHost(cands[nd.Role], nd.Host, need)
		}
		if matchRoles(cands, need) {
			return need
		}
	}
	return 0
}
