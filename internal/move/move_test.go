package move

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// testSeed returns a random seed, or KURA_SEED's, and logs it so that a failure can be
// repeated.
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	return seed
}

// Every key this node replicates lies in exactly one refill task's key ranges, and a key
// it does not replicate in none; sources are the key's other replicas, write-optimized
// first.
func TestRefillCoversExactlyTheRangesANodeReplicates(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	for trial := range 20 {
		taken := map[ring.Token]bool{}
		var nodes []ring.Node
		for h := range 2 + rng.IntN(4) {
			for _, role := range roles {
				nodes = append(nodes, ring.Node{ID: ring.NodeID(fmt.Sprintf("h%d-%d", h, role)), Host: fmt.Sprintf("h%d", h),
					Role: role, Tokens: ring.RandomTokens(rng, 1+rng.IntN(8), taken)})
				for _, tk := range nodes[len(nodes)-1].Tokens {
					taken[tk] = true
				}
			}
		}
		r, err := ring.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		self := nodes[rng.IntN(len(nodes))].ID
		tasks := Refill(r, ring.EngineDiverse{}, 3, self)
		for range 500 {
			key := fmt.Appendf(nil, "key%d", rng.Uint64())
			ek := ring.EngineKey(key)
			set := ring.EngineDiverse{}.Replicas(r, ring.TokenOf(key), 3)
			var in []RefillTask
			for _, task := range tasks {
				for _, kr := range task.Keys {
					if (kr.Lo == nil || string(ek) >= string(kr.Lo)) && (kr.Hi == nil || string(ek) < string(kr.Hi)) {
						in = append(in, task)
					}
				}
			}
			if !slices.Contains(set, self) {
				if len(in) != 0 {
					t.Fatalf("trial %d: %q (replicas %v) is in %d refill tasks of %s", trial, key, set, len(in), self)
				}
				continue
			}
			if len(in) != 1 {
				t.Fatalf("trial %d: %q (replicas %v) is in %d refill tasks of %s, want 1", trial, key, set, len(in), self)
			}
			want := slices.DeleteFunc(slices.Clone(set), func(id ring.NodeID) bool { return id == self })
			if got := in[0].Sources; len(got) != len(want) || !sameSet(got, want) {
				t.Fatalf("trial %d: sources %v, want %v", trial, got, want)
			}
			if n, _ := r.Node(in[0].Sources[0]); len(want) > 0 && slices.ContainsFunc(want, func(id ring.NodeID) bool {
				m, _ := r.Node(id)
				return m.Role == ring.WriteOptimized
			}) && n.Role != ring.WriteOptimized {
				t.Fatalf("trial %d: sources %v do not start with the write-optimized replica", trial, in[0].Sources)
			}
		}
	}
}

func sameSet(a, b []ring.NodeID) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Tokens draws from the rng it is given, so that one seed gives one choice; each method
// gives the number of distinct tokens asked for, and an unknown method is an error.
func TestTokensAreChosenByMethodFromTheGivenRandomness(t *testing.T) {
	seed := testSeed(t)
	nodes := []ring.Node{{ID: "a", Host: "h1", Role: ring.WriteOptimized, Tokens: []ring.Token{-100, 100}},
		{ID: "b", Host: "h2", Role: ring.ReadOptimized, Tokens: []ring.Token{0, 200}}}
	r, err := ring.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	joiner := ring.Node{ID: "c", Host: "h3", Role: ring.InMemory}
	for _, method := range []string{RandomTokens, BalancedTokens} {
		choose := func() []ring.Token {
			got, err := Tokens(method, r, joiner, 8, ring.EngineDiverse{}, 3, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		first := choose()
		if len(first) != 8 || len(slices.Compact(slices.Sorted(slices.Values(first)))) != 8 {
			t.Fatalf("%s: %v, want 8 distinct tokens", method, first)
		}
		if again := choose(); !slices.Equal(first, again) {
			t.Fatalf("%s: one seed chose %v, then %v", method, first, again)
		}
	}
	if _, err := Tokens("even", r, joiner, 8, ring.EngineDiverse{}, 3, rand.New(rand.NewPCG(seed, 1))); err == nil {
		t.Fatal("an unknown method chose tokens")
	}
}
