package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// oldReplicas is Strategy.Replicas for simple, host-aware and rack-aware placement as it
// was before a walk stopped once every node, host or rack with tokens held a replica
// (commit 828b852): the reference pick is tested against. Its walks go round the whole
// ring whenever the ring cannot give n replicas.
func oldReplicas(s Strategy, r *Ring, t Token, n int) []NodeID {
	switch s.(type) {
	case Simple:
		return r.oldPick(t, n, func(*pickState, Node) bool { return true }, nil)
	case HostAware:
		return r.oldPick(t, n, distinctHost, nil)
	case RackAware:
		return r.oldPick(t, n, newRack, distinctHost)
	}
	panic("ring: no reference for " + s.Name())
}

// oldPick is pick as it was: it walks the ring clockwise from t and takes each node that
// first accepts, until n are chosen; then, if then is not nil, walks again taking nodes
// that it accepts.
func (r *Ring) oldPick(t Token, n int, first, then func(*pickState, Node) bool) []NodeID {
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

// sparseCluster is a cluster that often cannot give the replicas asked for: one to three
// racks, one to six hosts (a host's nodes may sit in different racks), some nodes without
// tokens.
func sparseCluster(rng *rand.Rand) []Node {
	racks, hosts := 1+rng.IntN(3), 1+rng.IntN(6)
	nodes := make([]Node, 1+rng.IntN(10))
	taken := map[Token]bool{}
	for i := range nodes {
		nodes[i] = Node{ID: NodeID(fmt.Sprintf("n%d", i)), Host: fmt.Sprintf("host%d", rng.IntN(hosts)),
			Rack: fmt.Sprintf("rack%d", rng.IntN(racks))}
		if i == 0 || rng.IntN(4) > 0 {
			nodes[i].Tokens = RandomTokens(rng, 1+rng.IntN(12), taken)
			for _, tk := range nodes[i].Tokens {
				taken[tk] = true
			}
		}
	}
	return nodes
}

// Placement walks that stop once every node, host or rack with tokens holds a replica give
// the replica sets the walks round the whole ring gave (oldReplicas): simple, host-aware and
// rack-aware placement of 1 to 6 replicas, at every range's end and at random tokens, on
// sparseCluster's clusters and on randomCluster's. Randomized; KURA_SEED repeats a run.
func TestPlacementStopsWhereTheWholeWalkWould(t *testing.T) {
	rng := testRNG(t)
	for trial := range 400 {
		nodes := sparseCluster(rng)
		if trial%2 == 1 {
			nodes = randomCluster(rng)
		}
		r, err := New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		tokens := []Token{Token(rng.Uint64()), Token(rng.Uint64())}
		for i := range r.RangeCount() {
			tokens = append(tokens, r.RangeEnd(i))
		}
		for _, tok := range tokens {
			for _, s := range []Strategy{Simple{}, HostAware{}, RackAware{}} {
				n := 1 + rng.IntN(6)
				if got, want := s.Replicas(r, tok, n), oldReplicas(s, r, tok, n); !slices.Equal(got, want) {
					t.Fatalf("trial %d, %s, %d replicas at token %d of %v: %v, the whole walk %v", trial, s.Name(), n, tok, nodes, got, want)
				}
			}
		}
	}
}

// BenchmarkReplicasOfEveryRange computes every range's replica set, RF 3 rack-aware, as a
// recovery plan does: n nodes of 256 random tokens, one per host, over racks (two: fewer
// than RF). walk=whole is the walk before it stopped at the last rack (oldReplicas).
func BenchmarkReplicasOfEveryRange(b *testing.B) {
	for _, c := range []struct{ n, racks int }{{64, 2}, {1000, 25}} {
		r := randomRing(c.n, 256, c.racks, rand.New(rand.NewPCG(1, 0)))
		for _, walk := range []string{"whole", "stopping"} {
			b.Run(fmt.Sprintf("nodes=%d/racks=%d/tokens=256/walk=%s", c.n, c.racks, walk), func(b *testing.B) {
				for b.Loop() {
					for i := range r.RangeCount() {
						if walk == "whole" {
							oldReplicas(RackAware{}, r, r.RangeEnd(i), 3)
						} else {
							RackAware{}.Replicas(r, r.RangeEnd(i), 3)
						}
					}
				}
			})
		}
	}
}
