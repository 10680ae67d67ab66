package ring

import (
	"fmt"
	"slices"
)

// Strategy chooses a key's replica set from the ring. Strategies are deterministic: every
// node computes the same replica set from the same ring.
type Strategy interface {
	// Name is the strategy's configuration name.
	Name() string
	// Replicas returns up to n distinct nodes for token t, the primary first, then in
	// the order the strategy prefers them. It returns fewer than n when the ring cannot
	// hold n replicas under the strategy's rules.
	Replicas(r *Ring, t Token, n int) []NodeID
}

// StrategyByName returns the strategy configured as name: simple, host-aware, rack-aware
// or engine-diverse.
func StrategyByName(name string) (Strategy, error) {
	for _, s := range []Strategy{Simple{}, HostAware{}, RackAware{}, EngineDiverse{}} {
		if s.Name() == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("ring: unknown placement strategy %q (want simple, host-aware, rack-aware or engine-diverse)", name)
}

// Simple takes the next n distinct nodes clockwise from the key's token (Cassandra's
// SimpleStrategy).
type Simple struct{}

// Name implements Strategy.
func (Simple) Name() string { return "simple" }

// Replicas implements Strategy.
func (Simple) Replicas(r *Ring, t Token, n int) []NodeID {
	return r.pick(t, n, pass{func(*pickState, Node) bool { return true }, r.withTokens.nodes}, pass{})
}

// HostAware walks clockwise like Simple but skips a node whose host already holds a
// replica: the paper's rule (seed 000, section 3.1), since several kura nodes may run on
// one host. It never places two replicas on one host, so with fewer hosts than n it
// returns fewer replicas.
type HostAware struct{}

// Name implements Strategy.
func (HostAware) Name() string { return "host-aware" }

// Replicas implements Strategy.
func (HostAware) Replicas(r *Ring, t Token, n int) []NodeID {
	return r.pick(t, n, pass{distinctHost, r.withTokens.hosts}, pass{})
}

// distinctHost accepts a node on a host that holds no replica yet.
func distinctHost(s *pickState, nd Node) bool { return !slices.Contains(s.hosts, nd.Host) }

// RackAware spreads replicas over racks first: walking clockwise it takes nodes on racks
// that hold no replica yet; once every rack holds one, it fills up with the nodes it
// skipped, in ring order. Like HostAware it never places two replicas on one host.
type RackAware struct{}

// Name implements Strategy.
func (RackAware) Name() string { return "rack-aware" }

// Replicas implements Strategy.
func (RackAware) Replicas(r *Ring, t Token, n int) []NodeID {
	// The first walk's replicas are on distinct racks and hosts, every replica on a
	// distinct host.
	first := pass{newRack, min(r.withTokens.racks, r.withTokens.hosts)}
	return r.pick(t, n, first, pass{distinctHost, r.withTokens.hosts})
}

// newRack accepts a node on a rack and a host that hold no replica yet.
func newRack(s *pickState, nd Node) bool {
	return !slices.Contains(s.racks, nd.Rack) && !slices.Contains(s.hosts, nd.Host)
}

// pickState is what a walk has chosen so far. Replica sets are small, so slices
// searched linearly beat maps (placement runs for every vnode when ownership is computed).
type pickState struct {
	chosen []NodeID
	nodes  []int
	hosts  []string
	racks  []string
}

// pass is one walk of pick: the nodes it accepts, and how many replicas can have been
// chosen at most when it accepts no node of the ring any more (every node, host or rack
// with tokens holds one, as its rule counts them), where it stops. Without that stop a walk
// for more replicas than the ring can give goes round the whole ring for every range
// (rack-aware placement with fewer racks than replicas: quadratic in vnodes).
type pass struct {
	accept func(*pickState, Node) bool
	most   int
}

// pick walks the ring clockwise from t and takes each node that first accepts, until n
// are chosen or first.most; then, if then.accept is not nil, walks again taking nodes that
// it accepts, until n or then.most.
func (r *Ring) pick(t Token, n int, first, then pass) []NodeID {
	s := &pickState{chosen: make([]NodeID, 0, n), nodes: make([]int, 0, n),
		hosts: make([]string, 0, n), racks: make([]string, 0, n)}
	for _, p := range []pass{first, then} {
		if p.accept == nil {
			continue
		}
		stop := min(n, p.most)
		r.walk(t, func(i int) bool {
			if len(s.chosen) >= stop {
				return false
			}
			nd := r.nodes[i]
			if !slices.Contains(s.nodes, i) && p.accept(s, nd) {
				s.chosen = append(s.chosen, nd.ID)
				s.nodes, s.hosts, s.racks = append(s.nodes, i), append(s.hosts, nd.Host), append(s.racks, nd.Rack)
			}
			return true
		})
	}
	return s.chosen
}
