package ring

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"
)

// testRNG returns a generator seeded from KURA_SEED, or from the clock, and logs the seed.
func testRNG(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// randomCluster builds nodes spread over hosts and racks (a host is in one rack), each
// with random tokens.
func randomCluster(rng *rand.Rand) []Node {
	racks := 1 + rng.IntN(4)
	hosts := 1 + rng.IntN(8)
	nodes := make([]Node, 1+rng.IntN(12))
	taken := map[Token]bool{}
	for i := range nodes {
		h := rng.IntN(hosts)
		nodes[i] = Node{ID: NodeID(fmt.Sprintf("n%d", i)), Host: fmt.Sprintf("host%d", h),
			Rack: fmt.Sprintf("rack%d", h%racks), Tokens: RandomTokens(rng, 1+rng.IntN(16), taken)}
		for _, tk := range nodes[i].Tokens {
			taken[tk] = true
		}
	}
	return nodes
}

// bruteWalk lists the nodes clockwise from t, one entry per vnode, by sorting every vnode
// and scanning linearly: the reference for Ring's binary search and wrap-around.
func bruteWalk(nodes []Node, t Token) []Node {
	type tv struct {
		tok  Token
		node Node
	}
	var all []tv
	for _, n := range nodes {
		for _, tk := range n.Tokens {
			all = append(all, tv{tk, n})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].tok < all[j].tok })
	start := 0
	for start < len(all) && all[start].tok < t {
		start++
	}
	var out []Node
	for i := range all {
		out = append(out, all[(start+i)%len(all)].node)
	}
	return out
}

// bruteReplicas applies each strategy's rule to the brute-force walk.
func bruteReplicas(nodes []Node, strategy string, t Token, n int) []NodeID {
	walk := bruteWalk(nodes, t)
	var out []NodeID
	hosts, racks := map[string]bool{}, map[string]bool{}
	take := func(nd Node) {
		out = append(out, nd.ID)
		hosts[nd.Host], racks[nd.Rack] = true, true
	}
	for _, nd := range walk {
		if len(out) == n || slices.Contains(out, nd.ID) {
			continue
		}
		switch strategy {
		case "simple":
			take(nd)
		case "host-aware":
			if !hosts[nd.Host] {
				take(nd)
			}
		case "rack-aware":
			if !racks[nd.Rack] && !hosts[nd.Host] {
				take(nd)
			}
		}
	}
	if strategy == "rack-aware" {
		for _, nd := range walk {
			if len(out) < n && !slices.Contains(out, nd.ID) && !hosts[nd.Host] {
				take(nd)
			}
		}
	}
	return out
}

func distinct[T comparable](xs []T) int {
	m := map[T]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return len(m)
}

func TestPlacementMatchesBruteForceWalk(t *testing.T) {
	rng := testRNG(t)
	for trial := range 300 {
		nodes := randomCluster(rng)
		r, err := New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[NodeID]Node{}
		for _, n := range nodes {
			byID[n.ID] = n
		}
		hosts := distinct(func() []string {
			var h []string
			for _, n := range nodes {
				h = append(h, n.Host)
			}
			return h
		}())
		racks := distinct(func() []string {
			var h []string
			for _, n := range nodes {
				h = append(h, n.Rack)
			}
			return h
		}())
		for range 20 {
			tok := Token(rng.Uint64())
			if rng.IntN(4) == 0 { // exactly on a vnode token: the boundary case
				nd := nodes[rng.IntN(len(nodes))]
				tok = nd.Tokens[rng.IntN(len(nd.Tokens))]
			}
			n := 1 + rng.IntN(5)
			if got, want := r.Primary(tok), bruteWalk(nodes, tok)[0].ID; got != want {
				t.Fatalf("trial %d: primary of %d = %s, brute force %s", trial, tok, got, want)
			}
			for _, s := range []Strategy{Simple{}, HostAware{}, RackAware{}} {
				got := s.Replicas(r, tok, n)
				if want := bruteReplicas(nodes, s.Name(), tok, n); !slices.Equal(got, want) {
					t.Fatalf("trial %d %s n=%d token %d: %v, brute force %v", trial, s.Name(), n, tok, got, want)
				}
				var gotHosts, gotRacks []string
				for _, id := range got {
					gotHosts, gotRacks = append(gotHosts, byID[id].Host), append(gotRacks, byID[id].Rack)
				}
				wantLen := min(n, len(nodes))
				if s.Name() != "simple" {
					wantLen = min(n, hosts)
					if distinct(gotHosts) != len(got) {
						t.Fatalf("trial %d %s: two replicas on one host: %v", trial, s.Name(), got)
					}
				}
				if len(got) != wantLen || distinct(got) != len(got) || got[0] != r.Primary(tok) {
					t.Fatalf("trial %d %s n=%d: %v (want %d distinct nodes, primary first)", trial, s.Name(), n, got, wantLen)
				}
				if s.Name() == "rack-aware" && distinct(gotRacks) != min(len(got), racks) {
					t.Fatalf("trial %d rack-aware: racks %v of %d, not spread", trial, gotRacks, racks)
				}
			}
		}
	}
}

func TestOwnershipSumsToOneAndMatchesSampling(t *testing.T) {
	rng := testRNG(t)
	for range 20 {
		nodes := randomCluster(rng)
		r, err := New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		own := r.Ownership()
		sum := 0.0
		for _, v := range own {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("ownership sums to %v: %v", sum, own)
		}
		const samples = 20_000
		hits := map[NodeID]int{}
		for range samples {
			hits[r.Primary(Token(rng.Uint64()))]++
		}
		for id, share := range own {
			got := float64(hits[id]) / samples
			if tol := 5 * math.Sqrt(share*(1-share)/samples); math.Abs(got-share) > tol+1e-9 {
				t.Errorf("%s owns %.4f by token widths but %.4f by sampling (tol %.4f)", id, share, got, tol)
			}
		}
	}
}

func TestNewRejectsBadRings(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := New([]Node{{ID: "a", Tokens: []Token{1}}, {ID: "a", Tokens: []Token{2}}}); !errors.Is(err, ErrDuplicateNode) {
		t.Errorf("duplicate node: %v", err)
	}
	if _, err := New([]Node{{ID: "a", Tokens: []Token{1}}, {ID: "b", Tokens: []Token{1}}}); !errors.Is(err, ErrDuplicateToken) {
		t.Errorf("duplicate token: %v", err)
	}
	r, err := New([]Node{{ID: "solo", Tokens: []Token{42}}, {ID: "joining"}})
	if err != nil {
		t.Fatal(err)
	}
	if own := r.Ownership(); own["solo"] != 1 || own["joining"] != 0 {
		t.Errorf("one vnode owns the whole ring: %v", own)
	}
	if _, err := StrategyByName("random"); err == nil {
		t.Error("unknown strategy accepted")
	}
}

// Every token of a range has the replicas of the range's end token, whatever the
// strategy: callers cache replica sets per range.
func TestTokensOfARangeShareItsReplicas(t *testing.T) {
	rng := testRNG(t)
	for range 100 {
		r, err := New(randomCluster(rng))
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			tok := Token(rng.Int64())
			i := r.RangeIndex(tok)
			if i < 0 || i >= r.RangeCount() {
				t.Fatalf("range %d of %d", i, r.RangeCount())
			}
			end, prev := r.RangeEnd(i), r.RangeEnd((i+r.RangeCount()-1)%r.RangeCount())
			if inside := tok <= end && (tok > prev || prev >= end) || prev >= end && tok > prev; !inside {
				t.Fatalf("token %d outside range %d (%d, %d]", tok, i, prev, end)
			}
			for _, name := range []string{"simple", "host-aware", "rack-aware"} {
				s, err := StrategyByName(name)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := s.Replicas(r, tok, 3), s.Replicas(r, end, 3); !slices.Equal(a, b) {
					t.Fatalf("%s: token %d has %v, its range's end %d has %v", name, tok, a, end, b)
				}
			}
		}
	}
}
