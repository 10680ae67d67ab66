package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Joiners whose tokens are chosen together take distinct tokens, as many as asked, and
// leave the replicated ownership at least as even as the one-node allocator does when
// nodes join one at a time (balancedBound): 1, 3 and 5 joiners of 8 tokens on a 3-node
// cluster under simple placement, and 3 joiners under rack-aware placement over three
// racks of two nodes (rack-aware can only be even when racks are). One after another
// (each joiner against the ring with the joiners before it, BalancedTokens) is logged
// beside it.
func TestBalancedJoinTokensEvenOutSeveralJoiners(t *testing.T) {
	rng := testRNG(t)
	const rf, numTokens = 3, 8
	node := func(name string, i int) Node {
		return Node{ID: NodeID(fmt.Sprintf("%s%d", name, i)), Host: fmt.Sprintf("h%s%d", name, i), Rack: fmt.Sprintf("r%d", i%3)}
	}
	for _, c := range []struct {
		strategy Strategy
		joiners  int
	}{{Simple{}, 1}, {Simple{}, 3}, {Simple{}, 5}, {RackAware{}, 3}} {
		base := []Node{node("n", 0), node("n", 1), node("n", 2)}
		for k, tokens := range BalancedJoinTokens(nil, base, numTokens, c.strategy, rf, rng) {
			base[k].Tokens = tokens
		}
		var joiners []Node
		for j := range c.joiners {
			joiners = append(joiners, node("j", j))
		}
		old, err := New(base)
		if err != nil {
			t.Fatal(err)
		}
		together := slices.Clone(base)
		for j, tokens := range BalancedJoinTokens(old, joiners, numTokens, c.strategy, rf, rng) {
			if len(tokens) != numTokens {
				t.Fatalf("%s, %d joiners: joiner %d got %d tokens, want %d", c.strategy.Name(), c.joiners, j, len(tokens), numTokens)
			}
			joiners[j].Tokens = tokens
			together = append(together, joiners[j])
		}
		r, err := New(together) // distinct tokens, or New fails
		if err != nil {
			t.Fatalf("%s, %d joiners: %v", c.strategy.Name(), c.joiners, err)
		}
		hi, lo := maxMin(ReplicatedOwnership(r, c.strategy, rf))
		seq := slices.Clone(base)
		for _, j := range joiners {
			cur, _ := New(seq)
			j.Tokens = BalancedTokens(cur, j, numTokens, c.strategy, rf, rng)
			seq = append(seq, j)
		}
		sr, err := New(seq)
		if err != nil {
			t.Fatal(err)
		}
		shi, slo := maxMin(ReplicatedOwnership(sr, c.strategy, rf))
		t.Logf("%s, %d joiners x %d tokens: together max/min %.3f, one after another %.3f", c.strategy.Name(), c.joiners, numTokens, hi/lo, shi/slo)
		if hi/lo > balancedBound {
			t.Errorf("%s, %d joiners: max/min replicated ownership %.3f exceeds %.2f", c.strategy.Name(), c.joiners, hi/lo, balancedBound)
		}
	}
}

// With a nil ring the first joiner gets evenly spaced tokens and the rest are balanced
// against it.
func TestBalancedJoinTokensStartACluster(t *testing.T) {
	rng := testRNG(t)
	joiners := []Node{{ID: "a", Host: "ha"}, {ID: "b", Host: "hb"}, {ID: "c", Host: "hc"}}
	got := BalancedJoinTokens(nil, joiners, 4, Simple{}, 1, rng)
	for k := range joiners {
		joiners[k].Tokens = got[k]
	}
	r, err := New(joiners)
	if err != nil {
		t.Fatal(err)
	}
	if hi, lo := maxMin(ReplicatedOwnership(r, Simple{}, 1)); hi/lo > balancedBound {
		t.Errorf("3 nodes x 4 tokens from nothing: max/min ownership %.3f exceeds %.2f", hi/lo, balancedBound)
	}
}

// A new cluster whose first node has one token: refinement must not take the only token
// of the only node out (it built an empty ring and panicked, so `kura server
// --num-tokens 1` could not start a cluster). With two joiners of one token each, the
// second takes the point opposite the first.
func TestBalancedJoinTokensStartAClusterOfOneToken(t *testing.T) {
	rng := testRNG(t)
	got := BalancedJoinTokens(nil, []Node{{ID: "a", Host: "ha"}}, 1, Simple{}, 3, rng)
	if len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("one joiner of one token from nothing got %v", got)
	}
	got = BalancedJoinTokens(nil, []Node{{ID: "a", Host: "ha"}, {ID: "b", Host: "hb"}}, 1, Simple{}, 1, rng)
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 1 {
		t.Fatalf("two joiners of one token from nothing got %v", got)
	}
	r, err := New([]Node{{ID: "a", Host: "ha", Tokens: got[0]}, {ID: "b", Host: "hb", Tokens: got[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if hi, lo := maxMin(ReplicatedOwnership(r, Simple{}, 1)); hi/lo > balancedBound {
		t.Errorf("2 nodes x 1 token from nothing: max/min ownership %.3f exceeds %.2f", hi/lo, balancedBound)
	}
}

func BenchmarkBalancedJoinTokens(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 0))
	for _, n := range []int{3, 30} {
		base := grow(n, 16, func(r *Ring, nd Node) []Token { return BalancedTokens(r, nd, 16, Simple{}, 3, rng) })
		for _, k := range []int{1, 5} {
			b.Run(fmt.Sprintf("nodes=%d/joiners=%d/tokens=16", n, k), func(b *testing.B) {
				var joiners []Node
				for j := range k {
					joiners = append(joiners, Node{ID: NodeID(fmt.Sprintf("j%d", j)), Host: fmt.Sprintf("hj%d", j), Rack: "r1"})
				}
				for b.Loop() {
					BalancedJoinTokens(base, joiners, 16, Simple{}, 3, rng)
				}
			})
		}
	}
}
