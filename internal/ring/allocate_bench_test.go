package ring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
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
							oldBalancedTokens(r, joiner, 1, s, 3, rng, math.MaxInt)
						} else {
							BalancedTokens(r, joiner, 1, s, 3, rng)
						}
					}
				})
			}
		}
	}
}

// BenchmarkGrowRing builds a ring of n nodes of 256 tokens (and 300 nodes of 16 and 64,
// where refinement's effect turns) over 25 racks, RF 3, node by node: each node joins the
// ring the nodes before it made with balanced allocation, through one Allocator
// (refine=true: Join, BalancedJoinTokens of one joiner, as package move allocates;
// refine=false: JoinGreedy). It reports the ring's spread (see reportSpread) and the CPU
// time of a build (cpu-s/op; ns/op is wall clock, which others' load on a shared machine
// inflates).
func BenchmarkGrowRing(b *testing.B) {
	for _, c := range []struct{ n, tokens int }{{100, 256}, {200, 256}, {1000, 256}, {300, 16}, {300, 64}} {
		for _, s := range benchStrategies {
			for _, refine := range []bool{true, false} {
				b.Run(fmt.Sprintf("nodes=%d/tokens=%d/placement=%s/refine=%v", c.n, c.tokens, s.Name(), refine), func(b *testing.B) {
					var r *Ring
					cpu := cpuSeconds()
					for b.Loop() {
						r = growRing(c.n, c.tokens, 25, s, 3, rand.New(rand.NewPCG(1, 0)), refine)
					}
					b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
					reportSpread(b, r, s, 3)
				})
			}
		}
	}
}

// BenchmarkRandomRing reports the spread of rings of n nodes of 256 random tokens over 25
// racks, RF 3 (randomRing, Cassandra's original allocation): what balanced allocation is
// measured against.
func BenchmarkRandomRing(b *testing.B) {
	for _, n := range []int{100, 200, 1000} {
		for _, s := range benchStrategies {
			b.Run(fmt.Sprintf("nodes=%d/tokens=256/placement=%s", n, s.Name()), func(b *testing.B) {
				var r *Ring
				for b.Loop() {
					r = randomRing(n, 256, 25, rand.New(rand.NewPCG(1, 0)))
				}
				reportSpread(b, r, s, 3)
			})
		}
	}
}

// reportSpread reports how evenly ring r spreads data under s at rf: the max/min of the
// nodes' replicated ownership, and how many distinct other nodes share a replica set with
// a node (peers, the mean over nodes, and min-peers, the fewest), which bounds how many
// nodes can send a lost node's data to its new replicas at once.
func reportSpread(b *testing.B, r *Ring, s Strategy, rf int) {
	hi, lo := maxMin(ReplicatedOwnership(r, s, rf))
	b.ReportMetric(hi/lo, "max/min")
	mean, least := peers(r, s, rf)
	b.ReportMetric(mean, "peers")
	b.ReportMetric(float64(least), "min-peers")
}

// peers returns the mean over r's nodes with tokens of the number of distinct other nodes
// that share a range's replica set with the node under s at rf, and the fewest.
func peers(r *Ring, s Strategy, rf int) (mean float64, least int) {
	index := map[NodeID]int{}
	for i, n := range r.nodes {
		index[n.ID] = i
	}
	with := make([]map[int]bool, len(r.nodes))
	for i := range r.RangeCount() {
		ids := s.Replicas(r, r.RangeEnd(i), rf)
		for _, a := range ids {
			x := index[a]
			if with[x] == nil {
				with[x] = map[int]bool{}
			}
			for _, c := range ids {
				if c != a {
					with[x][index[c]] = true
				}
			}
		}
	}
	sum, nodes, least := 0, 0, len(r.nodes)
	for i, n := range r.nodes {
		if len(n.Tokens) == 0 {
			continue
		}
		sum, nodes, least = sum+len(with[i]), nodes+1, min(least, len(with[i]))
	}
	return float64(sum) / float64(nodes), least
}

// cpuSeconds is the CPU time the process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
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
