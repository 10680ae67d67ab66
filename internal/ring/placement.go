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
	return r.pick(t, n, func(*pickState, Node) bool { return true }, nil)
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
	return r.pick(t, n, func(s *pickState, nd Node) bool { return !slices.Contains(s.hosts, nd.Host) }, nil)
}

// RackAware spreads replicas over racks first: walking clockwise it takes nodes on racks
// that hold no replica yet; once every rack holds one, it fills up with the nodes it
// skipped, in ring order. Like HostAware it never places two replicas on one host.
type RackAware struct{}

// Name implements Strategy.
func (RackAware) Name() string { return "rack-aware" }

// Replicas implements Strategy.
func (RackAware) Replicas(r *Ring, t Token, n int) []NodeID {
	distinctHost := func(s *pickState, nd Node) bool { return !slices.Contains(s.hosts, nd.Host) }
	newRack := func(s *pickState, nd Node) bool {
		return !slices.Contains(s.racks, nd.Rack) && !slices.Contains(s.hosts, nd.Host)
	}
	return r.pick(t, n, newRack, distinctHost)
}

// pickState is what a walk has chosen so far. Replica sets are small, so slices
// searched linearly beat maps (placement runs for every vnode when ownership is computed).
type pickState struct {
	chosen []NodeID
	nodes  []int
	hosts  []string
	racks  []string
}

// pick walks the ring clockwise from t and takes each node that first accepts, until n
// are chosen; then, if then is not nil, walks again taking nodes that it accepts.
func (r *Ring) pick(t Token, n int, first, then func(*pickState, Node) bool) []NodeID {
	s := &pickState{chosen: make([]NodeID, 0, n), nodes: make([]int, 0, n),
		hosts: make([]string, 0, n), racks: make([]string, 0, n)}
	for _, accept := range []func(*pickState, Node) bool{first, then} {
		if accept == nil {
			continue
		}
		r.walk(t, func(i int) bool {
			if len(s.chosen) == n {
				return false
			}
			nd := r.nodes[i]
			if !slices.Contains(s.nodes, i) && accept(s, nd) {
				s.chosen = append(s.chosen, nd.ID)
				s.nodes, s.hosts, s.racks = append(s.nodes, i), append(s.hosts, nd.Host), append(s.racks, nd.Rack)
			}
			return true
		})
	}
	return s.chosen
}
