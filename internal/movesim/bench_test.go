package movesim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// largeCluster is flowsim's large platform: nodes spread round-robin over racks, 200 MB/s
// disk reads, 150 MB/s writes, 10 GbE NICs, rack uplinks of uplinkBps each way, 256 random
// tokens a node (--token-allocation=random), RF 3 rack-aware, dataPerNode bytes a node
// stores (so the cluster holds nodes x dataPerNode / 3 of data). Node 0 is lost.
type largeCluster struct {
	nodes, racks, vnodes int
	uplinkBps            float64
	dataPerNode          int64
}

func (l largeCluster) String() string {
	return fmt.Sprintf("nodes=%d/racks=%d/vnodes=%d/uplink=%gGBps", l.nodes, l.racks, l.vnodes, l.uplinkBps/1e9)
}

// change builds the rings and the fabric of losing node 0.
func (l largeCluster) change(tb testing.TB, seed uint64) (move.Change, move.Fabric) {
	rng := rand.New(rand.NewPCG(seed, 1))
	taken := map[ring.Token]bool{}
	var f move.Fabric
	var current, target []ring.Node
	for k := range l.nodes {
		id := ring.NodeID(fmt.Sprintf("n%04d", k))
		rack := fmt.Sprintf("r%02d", k%l.racks)
		n := ring.Node{ID: id, Host: string(id), Rack: rack, Role: ring.WriteOptimized, Tokens: ring.RandomTokens(rng, l.vnodes, taken)}
		for _, t := range n.Tokens {
			taken[t] = true
		}
		current = append(current, n)
		if k != 0 {
			target = append(target, n)
		}
		f.Nodes = append(f.Nodes, move.Hardware{ID: id, Host: string(id), Rack: rack, Role: ring.WriteOptimized, FreeBytes: 4 * l.dataPerNode,
			DiskReadBps: 200e6, DiskWriteBps: 150e6, NICSendBps: 1.25e9, NICRecvBps: 1.25e9})
	}
	for k := range l.racks {
		f.Uplinks = append(f.Uplinks, move.Uplink{Rack: fmt.Sprintf("r%02d", k), UpBps: l.uplinkBps, DownBps: l.uplinkBps})
	}
	cur, err := ring.New(current)
	if err != nil {
		tb.Fatal(err)
	}
	tgt, err := ring.New(target)
	if err != nil {
		tb.Fatal(err)
	}
	return move.Change{Current: cur, Target: tgt, Strategy: ring.RackAware{}, RF: 3,
		Sizes: move.Uniform(int64(l.nodes) * l.dataPerNode / 3), Down: map[ring.NodeID]bool{current[0].ID: true}}, f
}

// BenchmarkLargeLoss times what `kura sim move` does for a node loss in a 1,000-node,
// 25-rack cluster of 256 vnodes (about 770 ranges to copy): kura's schedule, the bound and
// the simulation, from a recovery built beforehand (RecoveryFromChange, timed apart as
// BenchmarkLargeLossProblem).
func BenchmarkLargeLoss(b *testing.B) {
	for _, up := range []float64{12.5e9, 2e9} {
		l := largeCluster{nodes: 1000, racks: 25, vnodes: 256, uplinkBps: up, dataPerNode: 100e9}
		b.Run(l.String(), func(b *testing.B) {
			c, f := l.change(b, 1)
			r, err := move.RecoveryFromChange(c, f)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				sch, err := move.Kura{}.Schedule(r)
				if err != nil {
					b.Fatal(err)
				}
				bound, err := move.BoundRecovery(r)
				if err != nil {
					b.Fatal(err)
				}
				res, err := Run(r, sch, Options{Bound: &bound})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(r.Copies)), "copies")
				b.ReportMetric(res.Seconds, "sim-s")
				b.ReportMetric(res.Ratio, "ratio")
				b.ReportMetric(res.WholeRatio, "whole-ratio")
			}
		})
	}
}

// BenchmarkLargeLossProblem times building the recovery from the rings: every range of the
// current ring placed in both rings, as Plan cuts them.
func BenchmarkLargeLossProblem(b *testing.B) {
	l := largeCluster{nodes: 1000, racks: 25, vnodes: 256, uplinkBps: 12.5e9, dataPerNode: 100e9}
	c, f := l.change(b, 1)
	for b.Loop() {
		if _, err := move.RecoveryFromChange(c, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLargeLossParts times kura's schedule, the bound and one simulation apart.
func BenchmarkLargeLossParts(b *testing.B) {
	l := largeCluster{nodes: 1000, racks: 25, vnodes: 256, uplinkBps: 12.5e9, dataPerNode: 100e9}
	c, f := l.change(b, 1)
	r, err := move.RecoveryFromChange(c, f)
	if err != nil {
		b.Fatal(err)
	}
	sch, err := move.Kura{}.Schedule(r)
	if err != nil {
		b.Fatal(err)
	}
	bound, err := move.BoundRecovery(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("part=schedule", func(b *testing.B) {
		for b.Loop() {
			if _, err := (move.Kura{}).Schedule(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("part=bound", func(b *testing.B) {
		for b.Loop() {
			if _, err := move.BoundRecovery(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("part=simulation", func(b *testing.B) {
		for b.Loop() {
			if _, err := Run(r, sch, Options{Bound: &bound}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLargeLoss simulates each scheduler on the 1,000-node loss and logs the table (time,
// and fraction of the fluid and of the whole-range bound): the benchmark's case with the
// baselines beside kura.
func TestLargeLoss(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a few seconds of 1,000-node simulations, a minute under the race detector")
	}
	for _, up := range []float64{12.5e9, 2e9} {
		l := largeCluster{nodes: 1000, racks: 25, vnodes: 256, uplinkBps: up, dataPerNode: 100e9}
		c, f := l.change(t, 1)
		r, err := move.RecoveryFromChange(c, f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := move.BoundRecovery(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d copies, %.1f GB; bound %.2f s (exact %v), whole ranges %.2f s", l, len(r.Copies), float64(r.CopyBytes())/1e9, b.Seconds, b.Exact, b.WholeSeconds)
		for _, s := range schedulers(1) {
			sch, err := s.Schedule(r)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(r, sch, Options{Bound: &b})
			if err != nil {
				t.Fatal(err)
			}
			if res.Seconds < b.WholeSeconds*(1-1e-9) {
				t.Errorf("%s: %.3f s, below the whole-range bound %.3f s", s.Name(), res.Seconds, b.WholeSeconds)
			}
			t.Logf("  %-14s %6.2f s  %.3f of the bound  %.3f of the whole-range bound  (at most %d copies at once)", s.Name(), res.Seconds, res.Ratio, res.WholeRatio, res.MaxActive)
		}
	}
}
