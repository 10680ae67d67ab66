package topo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// TestRandomChangesRunToTheirEnd drives random changes (joins, decommissions, removals and
// replacements, with random nodes down) the way the nodes do: Plan, apply, then
// TransfersDone of random batches of transfers in random order, applying what Advance
// returns after each. Every entry Plan or Advance returns must be accepted, a range may move only
// when every transfer into it is done, and the change must finish with the ring Plan
// targeted. Randomized; KURA_SEED repeats a run.
func TestRandomChangesRunToTheirEnd(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	planned, refused := 0, 0
	for run := range 200 {
		s, next := randomCluster(rng)
		for change := range 4 {
			ops, down := randomOps(s, rng, &next)
			where := fmt.Sprintf("run %d change %d (%s, down %v)", run, change, ops, down)
			cfg := Config{TokenAllocation: move.BalancedTokens, NumTokens: 1 + rng.IntN(4), Level: coord.Level(1 + rng.IntN(3))}
			if rng.IntN(2) == 0 {
				cfg.TokenAllocation = move.RandomTokens
			}
			sc, _, err := Plan(s, ops, cfg, down, rng)
			if err != nil {
				refused++
				continue
			}
			planned++
			if err := s.Apply(sc); err != nil {
				t.Fatalf("%s: Plan's entry refused: %v", where, err)
			}
			target, _ := s.TargetRing()
			order := rng.Perm(len(sc.Transfers))
			for step := 0; ; step++ {
				en := Advance(s)
				if en != nil {
					if rm, ok := en.(meta.RangesMoved); ok {
						checkAllDone(t, where, s.Change, rm)
					}
					if err := s.Apply(en); err != nil {
						t.Fatalf("%s: Advance's %T refused: %v", where, en, err)
					}
					if _, ok := en.(meta.FinishChange); ok {
						break
					}
					continue
				}
				if len(order) == 0 {
					t.Fatalf("%s: every transfer done but Advance returns nothing", where)
				}
				n := 1 + rng.IntN(len(order))
				var batch []int
				for _, i := range order[:n] {
					batch = append(batch, i)
				}
				order = order[n:]
				if err := s.Apply(meta.TransfersDone{Change: s.Change.ID, Transfers: batch}); err != nil {
					t.Fatalf("%s: TransfersDone refused: %v", where, err)
				}
			}
			if s.Change != nil {
				t.Fatalf("%s: change still in flight after finishing", where)
			}
			got, _ := s.CurrentRing()
			if fmt.Sprint(got.Nodes()) != fmt.Sprint(target.Nodes()) {
				t.Fatalf("%s: ring after the change\n%v\nwant\n%v", where, got.Nodes(), target.Nodes())
			}
		}
	}
	t.Logf("%d changes planned and run, %d refused", planned, refused)
	if planned < 200 {
		t.Errorf("only %d changes planned: the generator rarely makes valid ones", planned)
	}
}

func checkAllDone(t *testing.T, where string, c *meta.Change, rm meta.RangesMoved) {
	t.Helper()
	moving := map[move.Range]bool{}
	for _, r := range rm.Ranges {
		moving[r] = true
	}
	for i, tr := range c.Transfers {
		if r := c.RangeOf(tr.Range); r >= 0 && moving[c.Ranges[r].Range] && !c.Done[i] {
			t.Fatalf("%s: range %s moved before transfer %d into it was done", where, c.Ranges[r].Range, i)
		}
	}
}

// randomCluster bootstraps 3 to 7 members over up to 3 racks with random tokens.
func randomCluster(rng *rand.Rand) (*meta.State, int) {
	s := &meta.State{}
	strategies := []string{"simple", "host-aware", "rack-aware", "engine-diverse"}
	b := meta.Bootstrap{Strategy: strategies[rng.IntN(len(strategies))], RF: 1 + rng.IntN(3)}
	n := 3 + rng.IntN(5)
	taken := map[ring.Token]bool{}
	for i := range n {
		b.Members = append(b.Members, randomMember(rng, i, ring.RandomTokens(rng, 1+rng.IntN(3), taken)))
	}
	if err := s.Apply(b); err != nil {
		panic(err)
	}
	return s, n
}

func randomMember(rng *rand.Rand, i int, tokens []ring.Token) meta.Member {
	id := ring.NodeID(fmt.Sprintf("n%02d", i))
	return meta.Member{ID: id, Host: "h" + string(id), Rack: fmt.Sprintf("r%d", rng.IntN(3)),
		Role: ring.Role(1 + rng.IntN(3)), Addr: "addr-" + string(id), Tokens: tokens}
}

// randomOps registers 0 to 2 joiners and picks a random mix of operations on s.
func randomOps(s *meta.State, rng *rand.Rand, next *int) (Ops, map[ring.NodeID]bool) {
	var ops Ops
	down := map[ring.NodeID]bool{}
	var normal []ring.NodeID
	for _, m := range s.Members {
		if m.State == meta.Normal {
			normal = append(normal, m.ID)
		}
	}
	for range rng.IntN(3) {
		m := randomMember(rng, *next, nil)
		*next++
		if err := s.Apply(meta.Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: m.Addr}); err != nil {
			panic(err)
		}
		if rng.IntN(4) == 0 && len(normal) > 0 {
			old := normal[rng.IntN(len(normal))]
			if !down[old] {
				down[old] = true
				ops.Replaces = append(ops.Replaces, meta.Replacement{Old: old, New: m.ID})
				continue
			}
		}
		ops.Joins = append(ops.Joins, m.ID)
	}
	for _, id := range normal {
		if down[id] {
			continue
		}
		switch rng.IntN(10) {
		case 0:
			ops.Leaves = append(ops.Leaves, id)
		case 1:
			down[id] = true
			ops.Removes = append(ops.Removes, id)
		}
	}
	return ops, down
}
