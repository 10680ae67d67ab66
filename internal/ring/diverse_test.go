package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var allRoles = []Role{WriteOptimized, ReadOptimized, InMemory}

// randomRoleCluster is randomCluster with engine roles: sometimes the paper's layout (one
// node of each role per host), sometimes roles drawn at random, which makes layouts where
// the greedy walk misses a cover.
func randomRoleCluster(rng *rand.Rand) []Node {
	if rng.IntN(3) == 0 {
		hosts := 1 + rng.IntN(5)
		taken := map[Token]bool{}
		var nodes []Node
		for h := range hosts {
			for _, role := range allRoles {
				nd := Node{ID: NodeID(fmt.Sprintf("n%d", len(nodes))), Host: fmt.Sprintf("host%d", h),
					Rack: "rack0", Role: role, Tokens: RandomTokens(rng, 1+rng.IntN(16), taken)}
				for _, tk := range nd.Tokens {
					taken[tk] = true
				}
				nodes = append(nodes, nd)
			}
		}
		return nodes
	}
	nodes := randomCluster(rng)
	roles := 1 + rng.IntN(3)
	for i := range nodes {
		nodes[i].Role = allRoles[rng.IntN(roles)]
	}
	return nodes
}

// bruteDiverse is EngineDiverse by exhaustion: the most roles any nodes on distinct hosts
// cover (at most n), the first such cover in walk order (earliest first node, then next),
// then host-aware fill, in walk order.
func bruteDiverse(nodes []Node, t Token, n int) []NodeID {
	var order []Node // distinct nodes in walk order
	for _, nd := range bruteWalk(nodes, t) {
		if !slices.ContainsFunc(order, func(o Node) bool { return o.ID == nd.ID }) {
			order = append(order, nd)
		}
	}
	valid := func(pos []int) bool {
		for a := range pos {
			for b := range a {
				if order[pos[a]].Role == order[pos[b]].Role || order[pos[a]].Host == order[pos[b]].Host {
					return false
				}
			}
		}
		return true
	}
	// first returns the first valid combination of k positions in lexicographic order.
	var first func(pos []int, from, k int) []int
	first = func(pos []int, from, k int) []int {
		if len(pos) == k {
			if valid(pos) {
				return slices.Clone(pos)
			}
			return nil
		}
		for p := from; p < len(order); p++ {
			if got := first(append(pos, p), p+1, k); got != nil {
				return got
			}
		}
		return nil
	}
	var cover []int
	for k := min(n, len(allRoles)); k > 0 && cover == nil; k-- {
		cover = first(nil, 0, k)
	}
	chosen := cover
	hostUsed := func(h string) bool {
		return slices.ContainsFunc(chosen, func(p int) bool { return order[p].Host == h })
	}
	for p := range order {
		if len(chosen) < n && !slices.Contains(chosen, p) && !hostUsed(order[p].Host) {
			chosen = append(chosen, p)
		}
	}
	slices.Sort(chosen)
	var out []NodeID
	for _, p := range chosen {
		out = append(out, order[p].ID)
	}
	return out
}

func TestEngineDiverseMatchesBruteForce(t *testing.T) {
	rng := testRNG(t)
	fallbacks := 0
	for trial := range 400 {
		nodes := randomRoleCluster(rng)
		r, err := New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[NodeID]Node{}
		var hosts, roles []string
		for _, nd := range nodes {
			byID[nd.ID] = nd
			hosts, roles = append(hosts, nd.Host), append(roles, nd.Role.String())
		}
		for range 20 {
			tok := Token(rng.Uint64())
			n := 1 + rng.IntN(5)
			got := EngineDiverse{}.Replicas(r, tok, n)
			want := bruteDiverse(nodes, tok, n)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d n=%d token %d: %v, brute force %v\nnodes %+v", trial, n, tok, got, want, nodes)
			}
			var gotHosts, gotRoles []string
			for _, id := range got {
				gotHosts, gotRoles = append(gotHosts, byID[id].Host), append(gotRoles, byID[id].Role.String())
			}
			if len(got) != min(n, distinct(hosts)) || distinct(gotHosts) != len(got) {
				t.Fatalf("trial %d n=%d: %v on hosts %v; want %d nodes on distinct hosts", trial, n, got, gotHosts, min(n, distinct(hosts)))
			}
			if distinct(gotRoles) < min(n, distinct(roles), distinct(hosts)) && layoutIsPaper(nodes) {
				t.Fatalf("trial %d n=%d: paper layout, roles %v do not cover %d", trial, n, gotRoles, min(n, distinct(roles)))
			}
			if len(newWalker(r, tok).greedyCover(min(n, r.coverable))) < min(n, r.coverable) {
				fallbacks++
			}
		}
	}
	t.Logf("%d placements needed the search past the greedy walk", fallbacks)
}

// layoutIsPaper reports whether every host runs one node of each role.
func layoutIsPaper(nodes []Node) bool {
	per := map[string][]Role{}
	for _, nd := range nodes {
		per[nd.Host] = append(per[nd.Host], nd.Role)
	}
	for _, rs := range per {
		if len(rs) != len(allRoles) || distinct(rs) != len(allRoles) {
			return false
		}
	}
	return true
}

// The case the greedy walk gets wrong: host A runs lsm and btree, host B only lsm. Walking
// from A's lsm, greedy takes it and finds no host left for btree; the cover is A's btree
// and B's lsm.
func TestEngineDiverseFindsTheCoverTheGreedyWalkMisses(t *testing.T) {
	nodes := []Node{
		{ID: "a-lsm", Host: "a", Role: WriteOptimized, Tokens: []Token{10}},
		{ID: "b-lsm", Host: "b", Role: WriteOptimized, Tokens: []Token{20}},
		{ID: "a-btree", Host: "a", Role: ReadOptimized, Tokens: []Token{30}},
	}
	r, err := New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := (EngineDiverse{}).Replicas(r, 5, 2); !slices.Equal(got, []NodeID{"b-lsm", "a-btree"}) {
		t.Fatalf("replicas %v, want [b-lsm a-btree]", got)
	}
	if got := (EngineDiverse{}).Replicas(r, 5, 3); !slices.Equal(got, []NodeID{"b-lsm", "a-btree"}) {
		t.Fatalf("n=3 on two hosts: %v, want [b-lsm a-btree]", got)
	}
}

// BenchmarkEngineDiverse places keys on 1,000 nodes (334 hosts running one node of each
// role), next to HostAware on the same ring.
func BenchmarkEngineDiverse(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	taken := map[Token]bool{}
	var nodes []Node
	for h := 0; len(nodes) < 1000; h++ {
		for _, role := range allRoles {
			nd := Node{ID: NodeID(fmt.Sprintf("n%d", len(nodes))), Host: fmt.Sprintf("host%d", h), Role: role,
				Tokens: RandomTokens(rng, 16, taken)}
			for _, tk := range nd.Tokens {
				taken[tk] = true
			}
			nodes = append(nodes, nd)
		}
	}
	r, err := New(nodes)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []Strategy{EngineDiverse{}, HostAware{}} {
		b.Run(s.Name(), func(b *testing.B) {
			for b.Loop() {
				s.Replicas(r, Token(rng.Uint64()), 3)
			}
		})
	}
}
