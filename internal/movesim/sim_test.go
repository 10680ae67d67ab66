package movesim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/move"
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

func hardware(id, rack string, readMBps, writeMBps, nicMBps float64) move.Hardware {
	return move.Hardware{ID: ring.NodeID(id), Host: id, Rack: rack, Role: ring.WriteOptimized, FreeBytes: 1 << 50,
		DiskReadBps: readMBps * 1e6, DiskWriteBps: writeMBps * 1e6, NICSendBps: nicMBps * 1e6, NICRecvBps: nicMBps * 1e6}
}

func need(k int, mb float64, peers ...ring.NodeID) move.Need {
	return move.Need{Range: move.Range{Start: ring.Token(k), End: ring.Token(k + 1)}, Bytes: int64(mb * 1e6), Peers: peers, Missing: 1}
}

// Small schedules worked out by hand: each copy's start and end.
func TestRunByHand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fabric  move.Fabric
		needs   []move.Need
		order   []move.Assignment
		streams move.Streams
		racks   map[string]move.Streams
		want    [][2]float64 // start, end of each copy in order
	}{{
		// One 100 MB copy: the source's disk (10 MB/s) is the slowest link: 10 s.
		name:   "one copy",
		fabric: move.Fabric{Nodes: []move.Hardware{hardware("a", "r", 10, 10, 100), hardware("b", "r", 50, 50, 100)}},
		needs:  []move.Need{need(0, 100, "a")},
		order:  []move.Assignment{{Copy: 0, Source: "a", Destination: "b"}},
		want:   [][2]float64{{0, 10}},
	}, {
		// Two copies from a to b and c, together: they share a's 10 MB/s disk, 5 MB/s each:
		// 20 s.
		name:   "shared disk",
		fabric: move.Fabric{Nodes: []move.Hardware{hardware("a", "r", 10, 10, 100), hardware("b", "r", 50, 50, 100), hardware("c", "r", 50, 50, 100)}},
		needs:  []move.Need{need(0, 100, "a"), need(1, 100, "a")},
		order:  []move.Assignment{{Copy: 0, Source: "a", Destination: "b"}, {Copy: 1, Source: "a", Destination: "c"}},
		want:   [][2]float64{{0, 20}, {0, 20}},
	}, {
		// The same with one send stream: one after the other, 10 s each.
		name:    "one stream",
		fabric:  move.Fabric{Nodes: []move.Hardware{hardware("a", "r", 10, 10, 100), hardware("b", "r", 50, 50, 100), hardware("c", "r", 50, 50, 100)}},
		needs:   []move.Need{need(0, 100, "a"), need(1, 100, "a")},
		order:   []move.Assignment{{Copy: 0, Source: "a", Destination: "b"}, {Copy: 1, Source: "a", Destination: "c"}},
		streams: move.Streams{Send: 1},
		want:    [][2]float64{{0, 10}, {10, 20}},
	}, {
		// Across racks, r1's uplink 4 MB/s each way (disks 10 MB/s, r2 not limited): copy 0
		// leaves r1 (160 MB, 40 s), copy 1 enters it (100 MB, 25 s): the directions do not
		// share. Copy 2 stays on r2 at its disks' 10 MB/s (50 MB, 5 s).
		name: "uplink",
		fabric: move.Fabric{Nodes: []move.Hardware{hardware("a", "r1", 10, 10, 100), hardware("b", "r1", 10, 10, 100),
			hardware("c", "r2", 10, 10, 100), hardware("d", "r2", 10, 10, 100)},
			Uplinks: []move.Uplink{{Rack: "r1", UpBps: 4e6, DownBps: 4e6}}},
		needs: []move.Need{need(0, 160, "a"), need(1, 100, "d"), need(2, 50, "c")},
		order: []move.Assignment{{Copy: 0, Source: "a", Destination: "c"}, {Copy: 1, Source: "d", Destination: "b"}, {Copy: 2, Source: "c", Destination: "d"}},
		want:  [][2]float64{{0, 40}, {0, 25}, {0, 5}},
	}, {
		// One copy across racks at a time (rack streams 1): the second waits for the first.
		name: "rack streams",
		fabric: move.Fabric{Nodes: []move.Hardware{hardware("a", "r1", 10, 10, 100), hardware("b", "r1", 10, 10, 100),
			hardware("c", "r2", 10, 10, 100), hardware("d", "r2", 10, 10, 100)},
			Uplinks: []move.Uplink{{Rack: "r1", UpBps: 4e6, DownBps: 4e6}}},
		needs: []move.Need{need(0, 40, "a"), need(1, 40, "b")},
		order: []move.Assignment{{Copy: 0, Source: "a", Destination: "c"}, {Copy: 1, Source: "b", Destination: "d"}},
		racks: map[string]move.Streams{"r1": {Send: 1}},
		want:  [][2]float64{{0, 10}, {10, 20}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := move.NewRecovery(tc.fabric, move.Rules{RF: 3}, nil, tc.needs)
			if err != nil {
				t.Fatal(err)
			}
			s := &move.Schedule{Scheduler: "hand", Order: tc.order, Default: tc.streams, RackStreams: tc.racks}
			res, err := Run(r, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for k, w := range tc.want {
				if math.Abs(res.Start[k]-w[0]) > 1e-9 || math.Abs(res.End[k]-w[1]) > 1e-9 {
					t.Fatalf("copy %d: %.6f..%.6f s, want %.0f..%.0f s", k, res.Start[k], res.End[k], w[0], w[1])
				}
			}
		})
	}
}

// randomRecovery draws 3 to 12 nodes over 1 to 3 racks (some with limited uplinks) with
// random disks and NICs, RF 3 with rack-aware or host-aware rules, and 1 to 60 copies of 1
// to 1,000 MB, each range's two peers random.
func randomRecovery(t *testing.T, rng *rand.Rand) *move.Recovery {
	n, racks := 3+rng.IntN(10), 1+rng.IntN(3)
	var f move.Fabric
	var ids []ring.NodeID
	for k := range n {
		id := fmt.Sprintf("n%02d", k)
		rack := fmt.Sprintf("r%d", k%racks)
		f.Nodes = append(f.Nodes, hardware(id, rack, float64(20+rng.IntN(300)), float64(20+rng.IntN(300)), float64(50+rng.IntN(1000))))
		ids = append(ids, ring.NodeID(id))
	}
	for k := range racks {
		if rng.IntN(2) == 0 {
			f.Uplinks = append(f.Uplinks, move.Uplink{Rack: fmt.Sprintf("r%d", k), UpBps: float64(10+rng.IntN(500)) * 1e6, DownBps: float64(10+rng.IntN(500)) * 1e6})
		}
	}
	var needs []move.Need
	for k := range 1 + rng.IntN(60) {
		p := rng.Perm(n)
		needs = append(needs, need(k, float64(1+rng.IntN(1000)), ids[p[0]], ids[p[1]]))
	}
	r, err := move.NewRecovery(f, move.Rules{RF: 3, RackAware: rng.IntN(2) == 0}, nil, needs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// No scheduler's simulated recovery is faster than the bound (which no schedule informs),
// nor than its own load, the busiest resource's seconds at full rate.
func TestNoScheduleBeatsTheBound(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 35))
	trials := 200
	if testing.Short() {
		trials = 50
	}
	worst := map[string]float64{}
	for trial := range trials {
		r := randomRecovery(t, rng)
		b, err := move.BoundRecovery(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range schedulers(seed + uint64(trial)) {
			sch, err := s.Schedule(r)
			if err != nil {
				t.Fatalf("trial %d %s: %v", trial, s.Name(), err)
			}
			res, err := Run(r, sch, Options{Bound: &b})
			if err != nil {
				t.Fatalf("trial %d %s: %v", trial, s.Name(), err)
			}
			switch {
			case res.Seconds < b.Seconds*(1-1e-9):
				t.Fatalf("trial %d %s: %.6f s, below the bound %.6f s", trial, s.Name(), res.Seconds, b.Seconds)
			case res.Seconds < b.WholeSeconds*(1-1e-9):
				t.Fatalf("trial %d %s: %.6f s, below the whole-range bound %.6f s", trial, s.Name(), res.Seconds, b.WholeSeconds)
			case res.Seconds < res.Load.Seconds*(1-1e-9):
				t.Fatalf("trial %d %s: %.6f s, below its own load %.6f s", trial, s.Name(), res.Seconds, res.Load.Seconds)
			}
			if w, ok := worst[s.Name()]; !ok || res.WholeRatio < w {
				worst[s.Name()] = res.WholeRatio
			}
		}
	}
	t.Logf("worst fraction of the whole-range bound reached: %v", worst)
}
