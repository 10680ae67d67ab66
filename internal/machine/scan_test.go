package machine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// A node's replicated share is the part of the token space whose replica sets hold it:
// its ownership at RF 1, the whole ring when every node holds every key, and RF in sum.
func TestReplicatedShareCountsTheRangesANodeReplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		n := 1 + rng.IntN(6)
		var members []cluster.Member
		var nodes []ring.Node
		taken := map[ring.Token]bool{}
		for i := range n {
			id := ring.NodeID(fmt.Sprint("n", i))
			ts := ring.RandomTokens(rng, 1+rng.IntN(8), taken)
			for _, tk := range ts {
				taken[tk] = true
			}
			members = append(members, cluster.Member{ID: id, Up: true, Status: cluster.Normal, Tokens: ts})
			nodes = append(nodes, ring.Node{ID: id, Tokens: ts})
		}
		r, err := ring.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		for rf := 1; rf <= n; rf++ {
			m := New(Config{Self: "n0", Strategy: ring.Simple{}, ReplicationFactor: rf, Policy: coord.Uniform{}})
			m.SetView(members, r)
			rv := m.RingView()
			sum := 0.0
			for _, nd := range nodes {
				share := rv.ReplicatedShare(nd.ID)
				sum += share
				switch {
				case rf == 1 && math.Abs(share-r.Ownership()[nd.ID]) > 1e-9:
					t.Fatalf("RF 1: %s replicates %f, owns %f", nd.ID, share, r.Ownership()[nd.ID])
				case rf == n && math.Abs(share-1) > 1e-9:
					t.Fatalf("RF %d of %d nodes: %s replicates %f", rf, n, nd.ID, share)
				}
			}
			if math.Abs(sum-float64(rf)) > 1e-9 {
				t.Fatalf("RF %d: shares sum to %f", rf, sum)
			}
			for i := range r.RangeCount() {
				if !rv.SameReplicas(i, i) || len(rv.Replicas(i)) != rf {
					t.Fatalf("range %d: replicas %v", i, rv.Replicas(i))
				}
			}
		}
	}
	if (RingView{}).Ring() != nil || New(Config{}).RingView().ReplicatedShare("x") != 0 {
		t.Error("a view without a ring has a ring or a share")
	}
}
