package ring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// NodeID names a node; it is generated once per node and never reused.
type NodeID string

// Node is what the ring needs to know of a cluster member: where it runs (several nodes
// may share a host; hosts sit in racks), its engine's role (for EngineDiverse) and its
// vnode tokens.
type Node struct {
	ID     NodeID
	Host   string
	Rack   string
	Role   Role
	Tokens []Token
}

// vnode is one token on the ring and the node it belongs to.
type vnode struct {
	token Token
	node  int // index into Ring.nodes
}

// Ring is an immutable snapshot of the token ring: every vnode in token order. A node
// with token T owns the keys whose tokens lie in (previous vnode's token, T], wrapping
// around, as in Cassandra (seed 004, section 2.1). Safe for concurrent use.
type Ring struct {
	nodes     []Node
	vnodes    []vnode
	coverable int // engine roles a replica set can cover (see EngineDiverse)
	// withTokens counts the nodes, hosts and racks with tokens: a placement walk stops
	// once every one its rule counts holds a replica (see pass).
	withTokens struct{ nodes, hosts, racks int }
}

// Errors returned by New.
var (
	ErrEmpty          = errors.New("ring: no nodes with tokens")
	ErrDuplicateNode  = errors.New("ring: duplicate node ID")
	ErrDuplicateToken = errors.New("ring: token owned twice")
)

// New builds a ring of nodes. Nodes without tokens are allowed (a node that has not
// joined yet) but own nothing. Tokens must be distinct across the cluster.
func New(nodes []Node) (*Ring, error) {
	r := &Ring{nodes: slices.Clone(nodes)}
	seen := make(map[NodeID]bool, len(nodes))
	for i, n := range r.nodes {
		if seen[n.ID] {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateNode, n.ID)
		}
		seen[n.ID] = true
		for _, t := range n.Tokens {
			r.vnodes = append(r.vnodes, vnode{token: t, node: i})
		}
	}
	if len(r.vnodes) == 0 {
		return nil, ErrEmpty
	}
	slices.SortFunc(r.vnodes, func(a, b vnode) int { return cmpToken(a.token, b.token) })
	present := slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool { return len(n.Tokens) == 0 })
	r.coverable = coverableRoles(present)
	hosts, racks := map[string]bool{}, map[string]bool{}
	for _, n := range present {
		hosts[n.Host], racks[n.Rack] = true, true
	}
	r.withTokens.nodes, r.withTokens.hosts, r.withTokens.racks = len(present), len(hosts), len(racks)
	for i := 1; i < len(r.vnodes); i++ {
		if r.vnodes[i].token == r.vnodes[i-1].token {
			return nil, fmt.Errorf("%w: %d by %q and %q", ErrDuplicateToken, r.vnodes[i].token,
				r.nodes[r.vnodes[i-1].node].ID, r.nodes[r.vnodes[i].node].ID)
		}
	}
	return r, nil
}

func cmpToken(a, b Token) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Nodes returns the ring's nodes in the order New was given them. The caller must not
// modify them.
func (r *Ring) Nodes() []Node { return r.nodes }

// Node returns the node with id.
func (r *Ring) Node(id NodeID) (Node, bool) {
	for _, n := range r.nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// vnodeFor returns the index of the vnode owning token t: the first at or after t,
// wrapping to the first vnode.
func (r *Ring) vnodeFor(t Token) int {
	i, _ := slices.BinarySearchFunc(r.vnodes, t, func(v vnode, t Token) int { return cmpToken(v.token, t) })
	if i == len(r.vnodes) {
		return 0
	}
	return i
}

// RangeCount returns the number of token ranges: one per vnode.
func (r *Ring) RangeCount() int { return len(r.vnodes) }

// RangeIndex returns the index of the range holding token t. Ranges are numbered in token
// order; range i ends at (includes) RangeEnd(i) and starts after RangeEnd(i-1), the first
// wrapping around from the last. Every token of a range has the same replicas under every
// strategy, so callers can compute replica sets once per range.
func (r *Ring) RangeIndex(t Token) int { return r.vnodeFor(t) }

// RangeEnd returns the last token of range i.
func (r *Ring) RangeEnd(i int) Token { return r.vnodes[i].token }

// Primary returns the node owning token t (the first replica under every strategy).
func (r *Ring) Primary(t Token) NodeID { return r.nodes[r.vnodes[r.vnodeFor(t)].node].ID }

// walk calls visit with each node in clockwise order from the vnode owning t, once per
// vnode (a node appears as many times as it has vnodes), until visit returns false or
// the ring has been walked once.
func (r *Ring) walk(t Token, visit func(node int) bool) {
	start := r.vnodeFor(t)
	for i := range r.vnodes {
		if !visit(r.vnodes[(start+i)%len(r.vnodes)].node) {
			return
		}
	}
}

// Ownership returns the share of the token space (0 to 1) each node owns as a primary,
// by node ID. Nodes without tokens own 0.
func (r *Ring) Ownership() map[NodeID]float64 {
	out := make(map[NodeID]float64, len(r.nodes))
	for _, n := range r.nodes {
		out[n.ID] = 0
	}
	for i, v := range r.vnodes {
		prev := r.vnodes[(i+len(r.vnodes)-1)%len(r.vnodes)].token
		out[r.nodes[v.node].ID] += widthShare(prev, v.token, len(r.vnodes))
	}
	return out
}

// rangeWidth is the number of tokens in (from, to], wrapping; 0 when from == to.
func rangeWidth(from, to Token) uint64 { return uint64(to) - uint64(from) }

// RandomTokens returns n distinct random tokens not in taken, from rng: Cassandra's
// original vnode allocation.
func RandomTokens(rng *rand.Rand, n int, taken map[Token]bool) []Token {
	out := make([]Token, 0, n)
	for len(out) < n {
		t := Token(rng.Uint64()) // uniform over the whole token space
		if t == MinToken || taken[t] || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}
