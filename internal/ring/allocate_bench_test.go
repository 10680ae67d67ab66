package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchNodes lays out n nodes as the simulator's large cluster does: one node per host,
// hosts dealt round-robin over racks, engine roles in turn (only EngineDiverse reads them).
func benchNodes(from, n, racks int) []Node {
	out := make([]Node, n)
	for k := range out {
		i := from + k
		out[k] = Node{ID: NodeID(fmt.Sprintf("n%04d", i)), Host: fmt.Sprintf("h%04d", i),
			Rack: fmt.Sprintf("r%02d", i%racks), Role: allRoles[i%len(allRoles)]}
	}
	return out
}

// randomRing gives benchNodes' nodes numTokens random tokens each: a ring of the right size
// in no time, for measuring one placement into it.
func randomRing(n, numTokens, racks int, rng *rand.Rand) *Ring {
	nodes := benchNodes(0, n, racks)
	taken := map[Token]bool{}
	for i := range nodes {
		nodes[i].Tokens = RandomTokens(rng, numTokens, taken)
		for _, tk := range nodes[i].Tokens {
			taken[tk] = true
		}
	}
	r, err := New(nodes)
	if err != nil {
		panic(err)
	}
	return r
}

var benchStrategies = []Strategy{Simple{}, HostAware{}, RackAware{}, EngineDiverse{}}

// BenchmarkBalancedTokensOneToken places one token of a node joining an n-node ring of 256
// random tokens a node over 25 racks, RF 3, under every strategy: the unit of work of
// building a ring node by node. allocator=old is the allocator before the draft
// (allocate_ref_test.go: a Ring built and scored whole per candidate), allocator=draft
// BalancedTokens, copying the ring into a draft included.
func BenchmarkBalancedTokensOneToken(b *testing.B) {
	for _, n := range []int{25, 100, 200} {
		r := randomRing(n, 256, 25, rand.New(rand.NewPCG(1, 0)))
		joiner := benchNodes(n, 1, 25)[0]
		for _, s := range benchStrategies {
			for _, alloc := range []string{"old", "draft"} {
				b.Run(fmt.Sprintf("nodes=%d/tokens=256/placement=%s/allocator=%s", n, s.Name(), alloc), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(2, 0))
					for b.Loop() {
						if alloc == "old" {
							oldBalancedTokens(r, joiner, 1, s, 3, rng, 0)
						} else {
							BalancedTokens(r, joiner, 1, s, 3, rng)
						}
					}
				})
			}
		}
	}
}

// BenchmarkGrowRing builds a ring of n nodes of 256 tokens over 25 racks, RF 3, node by
// node: each node joins the ring the nodes before it made with balanced allocation, through
// one Allocator (refine=true: Join, BalancedJoinTokens of one joiner, as package move
// allocates; refine=false: JoinGreedy). It reports the ring's max/min replicated ownership.
func BenchmarkGrowRing(b *testing.B) {
	for _, n := range []int{100, 200, 1000} {
		for _, s := range benchStrategies {
			for _, refine := range []bool{true, false} {
				b.Run(fmt.Sprintf("nodes=%d/tokens=256/placement=%s/refine=%v", n, s.Name(), refine), func(b *testing.B) {
					var r *Ring
					for b.Loop() {
						r = growRing(n, 256, 25, s, 3, rand.New(rand.NewPCG(1, 0)), refine)
					}
					hi, lo := maxMin(ReplicatedOwnership(r, s, 3))
					b.ReportMetric(hi/lo, "max/min")
				})
			}
		}
	}
}

// BenchmarkJoinTen plans 10 nodes of 256 tokens joining together a ring of n nodes grown as
// BenchmarkGrowRing grows it without refinement (BalancedJoinTokens, copying the ring into a
// draft included), and reports the max/min replicated ownership after the join.
func BenchmarkJoinTen(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, s := range benchStrategies {
			r := growRing(n, 256, 25, s, 3, rand.New(rand.NewPCG(1, 0)), false)
			joiners := benchNodes(n, 10, 25)
			b.Run(fmt.Sprintf("nodes=%d/joiners=10/tokens=256/placement=%s", n, s.Name()), func(b *testing.B) {
				var tokens [][]Token
				for b.Loop() {
					tokens = BalancedJoinTokens(r, joiners, 256, s, 3, nil)
				}
				nodes := slices.Clone(r.Nodes())
				for k, j := range joiners {
					j.Tokens = tokens[k]
					nodes = append(nodes, j)
				}
				after, err := New(nodes)
				if err != nil {
					b.Fatal(err)
				}
				hi, lo := maxMin(ReplicatedOwnership(after, s, 3))
				b.ReportMetric(hi/lo, "max/min")
			})
		}
	}
}
