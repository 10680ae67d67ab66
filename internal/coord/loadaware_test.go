package coord

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// LoadAware never asks a replica that is over OverloadFactor times slower (and over
// OverloadFloor) than a readable replica with a known latency that it leaves as a spare,
// whatever the roles, lags and latencies; and it asks the replicas the level needs.
// Randomized; KURA_SEED repeats a run.
func TestLoadAwareNeverAsksAReplicaFarSlowerThanASpare(t *testing.T) {
	rng := seededRand(t)
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	for trial := range 20000 {
		n := 2 + rng.IntN(4)
		replicas := make([]Replica, n)
		for i := range replicas {
			r := Replica{ID: ring.NodeID(fmt.Sprintf("n%d", i)), Up: rng.IntN(8) > 0, Role: roles[rng.IntN(len(roles))],
				Refilling: rng.IntN(10) == 0, Lagging: rng.IntN(4) == 0}
			if rng.IntN(5) > 0 { // else unknown
				// From 10 µs to 100 ms, log-uniform, so that every level shows up.
				r.Latency = time.Duration(10_000 * math.Pow(10, rng.Float64()*4))
			}
			replicas[i] = r
		}
		need := 1 + rng.IntN(n)
		if readableCount(replicas) < need {
			continue
		}
		p := LoadAware{}.PlanRead(replicas, need)
		asked := append([]ring.NodeID{p.Data}, p.Digests...)
		if len(asked) != need {
			t.Fatalf("trial %d: asked %v for a level of %d (replicas %+v)", trial, asked, need, replicas)
		}
		byID := func(id ring.NodeID) Replica {
			return replicas[slices.IndexFunc(replicas, func(r Replica) bool { return r.ID == id })]
		}
		for _, a := range asked {
			ra := byID(a)
			if !ra.readable() {
				t.Fatalf("trial %d: asked %s, which may not be read (%+v)", trial, a, ra)
			}
			for _, s := range p.Spare {
				rs := byID(s)
				if rs.Latency > 0 && ra.Latency > OverloadFloor && ra.Latency > OverloadFactor*rs.Latency {
					t.Fatalf("trial %d: asked %s (%v) and left %s (%v) as a spare (replicas %+v)",
						trial, a, ra.Latency, s, rs.Latency, replicas)
				}
			}
		}
	}
}
