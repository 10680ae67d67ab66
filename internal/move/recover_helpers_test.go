package move

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

// randomRecovery draws a cluster of 3 to 12 nodes (hosts sometimes shared, 1 to 4 racks,
// random engines, disks, NICs, uplinks and free space, sometimes too little), a placement,
// an RF, and a change that removes 1 or 2 nodes, with other nodes sometimes down.
func randomRecovery(t *testing.T, rng *rand.Rand) (Change, Fabric) {
	n := 3 + rng.IntN(10)
	racks := 1 + rng.IntN(4)
	data := int64(1+rng.IntN(100)) << 30
	var f Fabric
	var nodes []ring.Node
	taken := map[ring.Token]bool{}
	for i := range n {
		host := i
		if i > 0 && rng.IntN(5) == 0 {
			host = rng.IntN(i) // shares a host with an earlier node
		}
		rack := fmt.Sprintf("r%d", host%racks)
		h := Hardware{ID: ring.NodeID(fmt.Sprintf("n%02d", i)), Host: fmt.Sprintf("h%d", host), Rack: rack, Role: ring.Role(1 + rng.IntN(3)),
			DiskReadBps: float64(50+rng.IntN(200)) * 1e6, DiskWriteBps: float64(50+rng.IntN(200)) * 1e6,
			NICSendBps: float64(100+rng.IntN(1000)) * 1e6, NICRecvBps: float64(100+rng.IntN(1000)) * 1e6,
			FreeBytes: data}
		switch rng.IntN(6) {
		case 0:
			h.FreeBytes = 0
		case 1:
			h.FreeBytes = data / int64(2+rng.IntN(8)*n)
		}
		f.Nodes = append(f.Nodes, h)
		nd := ring.Node{ID: h.ID, Host: h.Host, Rack: h.Rack, Role: h.Role, Tokens: ring.RandomTokens(rng, 1+rng.IntN(8), taken)}
		for _, tk := range nd.Tokens {
			taken[tk] = true
		}
		nodes = append(nodes, nd)
	}
	for r := range racks {
		if rng.IntN(2) == 0 {
			f.Uplinks = append(f.Uplinks, Uplink{Rack: fmt.Sprintf("r%d", r), UpBps: float64(50+rng.IntN(2000)) * 1e6, DownBps: float64(50+rng.IntN(2000)) * 1e6})
		}
	}
	lost := map[ring.NodeID]bool{nodes[rng.IntN(n)].ID: true}
	if rng.IntN(3) == 0 {
		lost[nodes[rng.IntN(n)].ID] = true
	}
	var target []ring.Node
	down := map[ring.NodeID]bool{}
	for _, nd := range nodes {
		if lost[nd.ID] {
			down[nd.ID] = true
			continue
		}
		target = append(target, nd)
		if rng.IntN(8) == 0 {
			down[nd.ID] = true
		}
	}
	if len(target) == 0 {
		return randomRecovery(t, rng)
	}
	return Change{Current: mustRing(t, nodes), Target: mustRing(t, target), Strategy: strategies[rng.IntN(len(strategies))],
		RF: 1 + rng.IntN(3), Sizes: Uniform(data), Down: down}, f
}
