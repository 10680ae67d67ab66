package move

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

// TestHandOffIsValidAndNeverSlower: on random recoveries (hosts shared, racks, roles,
// nodes down, too little free space), every handoff gives a token of a leaving node, once,
// to a live node of the target that is not leaving; the handed ring plans without more
// shortfalls than the ring successors' and its copies (as a kura node runs them: merged
// from every live peer when the lost replica is down) take less time at full rate, or
// HandOff hands nothing off. Under simple placement no range loses a replica that stays in
// the ring; under the others (hosts shared, racks, roles) a few do, as the walks skip
// differently, and the count is logged.
func TestHandOffIsValidAndNeverSlower(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	handed, displaced := 0, 0
	for run := range 300 {
		c, f := randomRecovery(t, rng)
		c.Strict = true
		inTarget := map[ring.NodeID]bool{}
		for _, n := range c.Target.Nodes() {
			inTarget[n.ID] = true
		}
		leavingTokens := map[ring.Token]bool{}
		for _, n := range c.Current.Nodes() {
			if !inTarget[n.ID] {
				for _, tk := range n.Tokens {
					leavingTokens[tk] = true
				}
			}
		}
		hs, err := HandOff(c, f, RecoveryOptions{FromEveryPeer: true})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if len(hs) == 0 {
			continue
		}
		handed++
		for _, h := range hs {
			if !leavingTokens[h.Token] {
				t.Fatalf("run %d: token %d handed to %s is not a leaving node's, or is handed twice", run, h.Token, h.To)
			}
			delete(leavingTokens, h.Token)
			if !inTarget[h.To] || c.Down[h.To] {
				t.Fatalf("run %d: token %d handed to %s, not a live node of the target", run, h.Token, h.To)
			}
		}
		target, err := ApplyHandoffs(c.Target, hs)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		succ, err := Plan(c)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		c2 := c
		c2.Target = target
		ho, err := Plan(c2)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		d := displacedStaying(c, target)
		displaced += d
		if _, simple := c.Strategy.(ring.Simple); simple && d > 0 {
			// Without host, rack or role rules a walk skips only repeated nodes, and the
			// tokens clustered together (clusterGroups) never push out a replica that stays.
			t.Fatalf("run %d: simple placement: %d ranges lost a replica that stays in the ring", run, d)
		}
		if shortBytes(ho) > shortBytes(succ) {
			t.Fatalf("run %d: handed off, %d bytes short; ring successors %d", run, shortBytes(ho), shortBytes(succ))
		}
		with, _, err1 := planSeconds(c, target, f)
		without, _, err2 := planSeconds(c, c.Target, f)
		if err1 != nil || err2 != nil {
			t.Fatalf("run %d: %v %v", run, err1, err2)
		}
		if with >= without {
			t.Fatalf("run %d: handed off takes %.4g s, ring successors %.4g s", run, with, without)
		}
	}
	t.Logf("%d of 300 recoveries handed tokens off; %d ranges lost a replica that stays in the ring", handed, displaced)
	if handed == 0 {
		t.Fatal("no recovery handed a token off")
	}
}

func shortBytes(m *Movement) int64 {
	var out int64
	for _, s := range m.Shortfalls {
		out += s.Bytes * int64(len(s.Destinations))
	}
	return out
}

// TestHandOffReachesTheBoundWithVnodes: one rack, equal nodes, 16 and 64 random tokens per
// node, one node lost: the time of the handed-off ring's copies at full rate, as a kura
// node merges them, is on average at least 0.85 of the bound for whole-range copies over
// every choice of destinations (RecoveryFromChangeWith with FromEveryPeer, WholeSeconds),
// and never longer than the ring successors'. Over 6 runs of 6 draws each the means were
// 0.92 to 1.00 with 16 tokens (ring successors 0.71 to 0.84) and 1.00 with 64 (0.77 to
// 0.86).
func TestHandOffReachesTheBoundWithVnodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	for _, tokens := range []int{16, 64} {
		var sumH, sumS float64
		const runs = 6
		for run := range runs {
			n := []int{12, 30}[run%2]
			var f Fabric
			var nodes []ring.Node
			taken := map[ring.Token]bool{}
			for i := range n {
				id := ring.NodeID(fmt.Sprintf("n%02d", i))
				f.Nodes = append(f.Nodes, Hardware{ID: id, Host: string(id), Rack: "r", DiskReadBps: 1e8, DiskWriteBps: 1e8, NICSendBps: 1e8, NICRecvBps: 1e8, FreeBytes: 1 << 50})
				nd := ring.Node{ID: id, Host: string(id), Rack: "r", Tokens: ring.RandomTokens(rng, tokens, taken)}
				for _, tk := range nd.Tokens {
					taken[tk] = true
				}
				nodes = append(nodes, nd)
			}
			c := Change{Current: mustRing(t, nodes), Target: mustRing(t, nodes[1:]), Strategy: ring.Simple{}, RF: 3,
				Sizes: Uniform(1 << 40), Down: map[ring.NodeID]bool{nodes[0].ID: true}, Strict: true}
			hs, err := HandOff(c, f, RecoveryOptions{FromEveryPeer: true})
			if err != nil {
				t.Fatal(err)
			}
			target, err := ApplyHandoffs(c.Target, hs)
			if err != nil {
				t.Fatal(err)
			}
			free, err := RecoveryFromChangeWith(c, f, RecoveryOptions{FromEveryPeer: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := BoundRecovery(free)
			if err != nil {
				t.Fatal(err)
			}
			with, _, err1 := planSeconds(c, target, f)
			without, _, err2 := planSeconds(c, c.Target, f)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if with > without {
				t.Fatalf("%d tokens, %d nodes: handed off %.4g s, ring successors %.4g s", tokens, n, with, without)
			}
			sumH += b.WholeSeconds / with
			sumS += b.WholeSeconds / without
		}
		t.Logf("%d tokens: bound ÷ time, mean of %d: handed off %.3f, ring successors %.3f", tokens, runs, sumH/runs, sumS/runs)
		if sumH/runs < 0.85 {
			t.Errorf("%d tokens: handed off reaches %.3f of the bound on average, want at least 0.85", tokens, sumH/runs)
		}
	}
}

// displacedStaying counts the ranges of c.Current whose replica set in target lacks one of
// their old replicas that stays in the ring: a handoff that pushed a staying replica out.
func displacedStaying(c Change, target *ring.Ring) int {
	inTarget := map[ring.NodeID]bool{}
	for _, n := range target.Nodes() {
		inTarget[n.ID] = true
	}
	out := 0
	for _, end := range cutPoints(c.Current, target) {
		next := c.Strategy.Replicas(target, end, c.RF)
		for _, id := range c.Strategy.Replicas(c.Current, end, c.RF) {
			if inTarget[id] && !slices.Contains(next, id) {
				out++
				break
			}
		}
	}
	return out
}
