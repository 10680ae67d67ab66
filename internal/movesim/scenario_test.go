package movesim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/flowsim"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// slack is how far below a bound a simulation may finish: flowsim completes flows whose
// times agree within a relative 1e-9 together, at the earliest one's time.
const slack = 1e-8

// held returns the bytes each node replicates in rg under s's sizes: every range of the
// ring (as the ring cuts it) counted once for each of its replicas.
func held(t *testing.T, s Scenario, rg *ring.Ring) map[ring.NodeID]int64 {
	t.Helper()
	strategy, err := ring.StrategyByName(s.Placement)
	if err != nil {
		t.Fatal(err)
	}
	sizes := move.Uniform(int64(s.Nodes) * s.DataPerNodeBytes / int64(s.RF))
	out := map[ring.NodeID]int64{}
	n := rg.RangeCount()
	for i := range n {
		r := move.Range{Start: rg.RangeEnd((i + n - 1) % n), End: rg.RangeEnd(i)}
		for _, id := range strategy.Replicas(rg, r.End, s.RF) {
			out[id] += sizes.Bytes(r)
		}
	}
	return out
}

// randomScenario draws a small cluster: 4 to 14 nodes over 1 to 4 racks, 4 to 40 vnodes,
// RF 2 or 3, any placement and token allocation, uplinks limited or not.
func randomScenario(rng *rand.Rand) Scenario {
	s := DefaultScenario()
	s.Nodes = 4 + rng.IntN(11)
	s.Racks = 1 + rng.IntN(min(4, s.Nodes))
	s.VNodes = 4 + rng.IntN(37)
	s.RF = 2 + rng.IntN(2)
	s.Placement = []string{"simple", "host-aware", "rack-aware", "engine-diverse"}[rng.IntN(4)]
	s.TokenAllocation = []string{AllocBalanced, AllocGreedy, AllocRandom}[rng.IntN(3)]
	s.DataPerNodeBytes = int64(1+rng.IntN(100)) * 1e9
	if rng.IntN(2) == 0 {
		s.UplinkUpBps, s.UplinkDownBps = float64(50+rng.IntN(500))*1e6, float64(50+rng.IntN(500))*1e6
	}
	s.Seed = rng.Uint64()
	return s
}

// A loss re-replicates the lost nodes' replicas: with free copies the bytes received sum
// to exactly what the lost nodes held (from the ring, range by range), and so do the bytes
// sent; with handed-off tokens each lost replica is merged from every live peer, so at
// least that much moves (more where handed tokens shift neighbouring ranges), and the
// minimum reported is still what they held. The lost nodes take no part, and no schedule
// beats the bound.
func TestScenarioLossRecopiesWhatTheLostNodesHeld(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 33))
	trials := 30
	if testing.Short() || raceEnabled {
		trials = 8
	}
	for trial := range trials {
		s := randomScenario(rng)
		s.Event = []string{EventLoss, EventRemove}[rng.IntN(2)]
		s.Count = 1 + rng.IntN(min(2, s.Nodes-s.RF))
		s.Scheduler = Schedulers(1)[rng.IntN(4)].Name()
		s.Copies = []string{CopiesFree, CopiesHandoff}[rng.IntN(2)]
		res, err := RunScenario(s)
		if err != nil {
			t.Fatalf("trial %d %+v: %v", trial, s, err)
		}
		before := held(t, res.Scenario, res.Before)
		var lost, sent, received int64
		for _, id := range res.EventNodes {
			lost += before[id]
		}
		for _, n := range res.Nodes {
			if slices.Contains(res.EventNodes, n.ID) {
				t.Fatalf("trial %d: lost node %s sends or receives: %+v", trial, n.ID, n)
			}
			sent, received = sent+n.SentBytes, received+n.ReceivedBytes
		}
		switch {
		case received != res.MovedBytes || sent != res.MovedBytes:
			t.Fatalf("trial %d: sent %d, received %d, moved %d", trial, sent, received, res.MovedBytes)
		case res.MinimumBytes != lost || s.Copies == CopiesFree && res.MovedBytes+res.ShortBytes != lost ||
			s.Copies == CopiesHandoff && res.MovedBytes+res.ShortBytes < lost:
			t.Fatalf("trial %d %+v: moved %d + short %d (minimum %d), the lost nodes held %d", trial, s, res.MovedBytes, res.ShortBytes, res.MinimumBytes, lost)
		case res.Ratio > 1+slack || res.WholeRatio > 1+slack || res.Seconds < res.Bound.WholeSeconds*(1-slack):
			t.Fatalf("trial %d: %.3f s against a bound of %.3f s (whole %.3f s)", trial, res.Seconds, res.Bound.Seconds, res.Bound.WholeSeconds)
		}
	}
}

// In the default cluster (12 nodes, 2 racks, 256 vnodes) kura spreads a loss over every
// node that holds a replica of a lost range: each of them sends, and none is idle while
// others work much longer.
func TestScenarioLossEveryPeerSends(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s := DefaultScenario()
		s.Seed = seed
		if raceEnabled {
			s.VNodes = 64
		}
		res, err := RunScenario(s)
		if err != nil {
			t.Fatal(err)
		}
		strategy, _ := ring.StrategyByName(s.Placement)
		peers := map[ring.NodeID]bool{}
		n := res.Before.RangeCount()
		for i := range n {
			set := strategy.Replicas(res.Before, res.Before.RangeEnd(i), s.RF)
			if slices.Contains(set, res.EventNodes[0]) {
				for _, id := range set {
					peers[id] = id != res.EventNodes[0]
				}
			}
		}
		sends := map[ring.NodeID]bool{}
		for _, nd := range res.Nodes {
			sends[nd.ID] = nd.SentBytes > 0
		}
		for id, peer := range peers {
			if peer && !sends[id] {
				t.Errorf("seed %d: %s holds a lost range's replica and sends nothing", seed, id)
			}
		}
		if res.Ratio < 0.9 {
			t.Errorf("seed %d: kura reaches %.3f of the bound", seed, res.Ratio)
		}
		t.Logf("seed %d: %d peers send; %.1f s, %.3f of the bound", seed, len(peers), res.Seconds, res.Ratio)
	}
}

// A join moves exactly what Plan planned, and that is what the joiners hold in the ring
// after it (they held nothing before): each joiner receives its holdings, the simulation's
// disk writes carry the plan's bytes, and the plan beats no bound.
func TestScenarioJoinMovesWhatPlanPlanned(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 34))
	trials := 20
	if testing.Short() || raceEnabled {
		trials = 6
	}
	for trial := range trials {
		s := randomScenario(rng)
		s.Event, s.Count, s.Timeline = EventJoin, 1+rng.IntN(3), true
		res, err := RunScenario(s)
		if err != nil {
			t.Fatalf("trial %d %+v: %v", trial, s, err)
		}
		after := held(t, res.Scenario, res.After)
		got := map[ring.NodeID]int64{}
		for _, n := range res.Nodes {
			got[n.ID] = n.ReceivedBytes
			if !slices.Contains(res.EventNodes, n.ID) && n.ReceivedBytes > 0 {
				t.Fatalf("trial %d: %s, not a joiner, receives %d bytes", trial, n.ID, n.ReceivedBytes)
			}
		}
		for _, id := range res.EventNodes {
			if got[id] != after[id] {
				t.Fatalf("trial %d %+v: joiner %s receives %d bytes and holds %d after the join", trial, s, id, got[id], after[id])
			}
		}
		if res.MovedBytes != res.MinimumBytes || res.ShortBytes != 0 {
			t.Fatalf("trial %d: moved %d, minimum %d, short %d", trial, res.MovedBytes, res.MinimumBytes, res.ShortBytes)
		}
		var written float64
		for l, name := range res.Run.Links {
			if AllWrites(name) {
				written += res.Run.Sim.LinkBytes(flowsim.LinkID(l))
			}
		}
		if math.Abs(written-float64(res.MovedBytes)) > 1e-6*float64(res.MovedBytes)+1 {
			t.Fatalf("trial %d: the disks wrote %.0f bytes, the plan moves %d", trial, written, res.MovedBytes)
		}
		if res.Ratio > 1+slack || res.Seconds < res.Bound.WholeSeconds*(1-slack) {
			t.Fatalf("trial %d %+v: %.17g s against a bound of %.17g s (whole %.17g s)", trial, s, res.Seconds, res.Bound.Seconds, res.Bound.WholeSeconds)
		}
		// Throughput loses no bytes between its intervals.
		var sum float64
		pts := res.Run.Throughput(97, AllWrites)
		for _, p := range pts {
			sum += p.BytesPerSecond * res.Seconds / 97
		}
		if math.Abs(sum-float64(res.MovedBytes)) > 1e-6*float64(res.MovedBytes)+1 {
			t.Fatalf("trial %d: throughput sums to %.0f bytes, the plan moves %d", trial, sum, res.MovedBytes)
		}
	}
}

// A join into a cluster of equal nodes without rack limits reaches its bound when the
// joiners' receives are the limit: with 8 streams each, they never idle.
func TestScenarioJoinOfTwo(t *testing.T) {
	s := DefaultScenario()
	s.Event, s.Count, s.VNodes = EventJoin, 2, 64
	res, err := RunScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Bound.Exact || res.Ratio < 0.95 {
		t.Errorf("join of 2 into 12: %.1f s, %.3f of the bound (exact %v)", res.Seconds, res.Ratio, res.Bound.Exact)
	}
}

// RunTransfers starts a plan's transfers in order as the stream limits allow.
func TestRunTransfersByHand(t *testing.T) {
	f := move.Fabric{Nodes: []move.Hardware{hardware("a", "r", 10, 10, 100), hardware("b", "r", 50, 50, 100), hardware("c", "r", 50, 50, 100)}}
	ts := []move.Transfer{
		{Range: move.Range{Start: 0, End: 1}, Source: "a", Destination: "b", Bytes: 100e6},
		{Range: move.Range{Start: 0, End: 1}, Source: "a", Destination: "c", Bytes: 100e6},
	}
	for _, tc := range []struct {
		limits Limits
		want   [][2]float64
	}{
		{Limits{}, [][2]float64{{0, 20}, {0, 20}}},                                // sharing a's 10 MB/s disk
		{Limits{Default: move.Streams{Send: 1}}, [][2]float64{{0, 10}, {10, 20}}}, // one after the other
		{Limits{Nodes: map[ring.NodeID]move.Streams{"a": {Send: 1}}}, [][2]float64{{0, 10}, {10, 20}}},
	} {
		res, err := RunTransfers(f, ts, tc.limits, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range tc.want {
			if math.Abs(res.Start[k]-w[0]) > 1e-9 || math.Abs(res.End[k]-w[1]) > 1e-9 {
				t.Errorf("%+v: transfer %d %.6f..%.6f s, want %.0f..%.0f s", tc.limits, k, res.Start[k], res.End[k], w[0], w[1])
			}
		}
	}
}

// Bad scenarios are errors, not panics.
func TestScenarioRefusesNonsense(t *testing.T) {
	for _, mut := range []func(*Scenario){
		func(s *Scenario) { s.Event = "explode" },
		func(s *Scenario) { s.Scheduler = "fastest" },
		func(s *Scenario) { s.Placement = "anywhere" },
		func(s *Scenario) { s.TokenAllocation = "psychic" },
		func(s *Scenario) { s.Count = 12 },
		func(s *Scenario) { s.Racks = 13 },
		func(s *Scenario) { s.Nodes = MaxScenarioNodes + 1 },
		func(s *Scenario) { s.DiskReadBps = -1 },
		func(s *Scenario) { s.UplinkUpBps = -1 },
		func(s *Scenario) { s.DataPerNodeBytes = MaxDataPerNode + 1 },
	} {
		s := DefaultScenario()
		s.VNodes = 4
		mut(&s)
		if _, err := RunScenario(s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// When no node has room for any copy, nothing moves and every lost replica is short.
func TestScenarioWithFullNodesMovesNothing(t *testing.T) {
	s := DefaultScenario()
	s.VNodes, s.FreeBytes = 8, 1
	res, err := RunScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	if res.MovedBytes != 0 || res.Transfers != 0 || res.ShortBytes == 0 || res.ShortBytes != res.MinimumBytes {
		t.Errorf("full nodes: moved %d in %d transfers, short %d of %d", res.MovedBytes, res.Transfers, res.ShortBytes, res.MinimumBytes)
	}
}
