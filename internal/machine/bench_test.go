package machine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// benchCluster is six nodes of 16 tokens each (a fixed seed), roles in turn
// write-optimized, read-optimized and in memory, every one up: the members and the ring.
func benchCluster() ([]cluster.Member, *ring.Ring) {
	rng := rand.New(rand.NewPCG(1, 2))
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	taken := map[ring.Token]bool{}
	var members []cluster.Member
	var nodes []ring.Node
	for i := range 6 {
		m := cluster.Member{ID: ring.NodeID(fmt.Sprint("n", i+1)), Host: fmt.Sprint("h", i+1), Role: roles[i%3], Up: true,
			Status: cluster.Normal, Tokens: ring.RandomTokens(rng, 16, taken)}
		for _, t := range m.Tokens {
			taken[t] = true
		}
		members = append(members, m)
		nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Role: m.Role, Tokens: m.Tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		panic(err)
	}
	return members, r
}

// benchKeys are keys spread over the ring.
func benchKeys() [][]byte {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%d", i)
	}
	return keys
}

// benchNode is node n1 of benchCluster under policy, RF 3.
func benchNode(policy coord.Policy) *Node {
	n := New(Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: policy, Timeout: time.Second})
	members, r := benchCluster()
	n.SetView(members, r)
	return n
}

// One QUORUM write through the node's machine: its replica set from the cache, the
// coordinator's plan, every target acknowledging in the order sent.
func BenchmarkWrite(b *testing.B) {
	for _, p := range []coord.Policy{coord.Uniform{}, coord.EngineAware{}} {
		b.Run("policy="+p.Name(), func(b *testing.B) {
			benchWrites(b, benchNode(p))
		})
	}
}

func benchWrites(b *testing.B, n *Node) { benchWritesOf(b, n, benchKeys()) }

func benchWritesOf(b *testing.B, n *Node, keys [][]byte) {
	var op WriteOp
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		m := row.Mutation{Key: keys[i%len(keys)], Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}
		i++
		r := n.StartWrite(&op, t0, m, coord.Quorum)
		for _, e := range r.Effects {
			if s, ok := e.(coord.SendWrite); ok {
				op.Answer(t0, s.To, nil)
			}
		}
		if !op.Done() {
			b.Fatal("write not done")
		}
	}
}

// One QUORUM read through the node's machine, whose replicas' answers agree.
func BenchmarkRead(b *testing.B) {
	for _, p := range []coord.Policy{coord.Uniform{}, coord.EngineAware{}} {
		b.Run("policy="+p.Name(), func(b *testing.B) {
			benchReads(b, benchNode(p))
		})
	}
}

func benchReads(b *testing.B, n *Node) { benchReadsOf(b, n, benchKeys()) }

func benchReadsOf(b *testing.B, n *Node, keys [][]byte) {
	stored := row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}
	found := coord.ReadResponse{Row: stored, Found: true}
	digest := coord.ReadResponse{Digest: row.Digest(stored, true)}
	var op ReadOp
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		r := n.StartRead(&op, t0, keys[i%len(keys)], coord.Quorum)
		i++
		replied := false
		for _, e := range r.Effects {
			s := e.(coord.SendRead)
			resp := found
			if s.Digest {
				resp = digest
			}
			replied = replied || op.Answer(t0, s.To, resp).Replied
		}
		if !replied {
			b.Fatal("read did not reply")
		}
	}
}

// benchPlaced is benchNode(policy) placed by the cluster metadata while a seventh node
// joins (a change in flight, no range moved yet), and benchKeys split by whether their
// range moves.
func benchPlaced(b *testing.B, policy coord.Policy) (n *Node, still, moving [][]byte) {
	n = benchNode(policy)
	members, r := benchCluster()
	var metaMembers []meta.Member
	taken := map[ring.Token]bool{}
	for _, m := range members {
		metaMembers = append(metaMembers, meta.Member{ID: m.ID, Host: m.Host, Role: m.Role, Addr: string(m.ID), Tokens: m.Tokens})
		for _, t := range m.Tokens {
			taken[t] = true
		}
	}
	c := bootstrapMeta(b, "simple", 3, metaMembers)
	joiner := meta.Member{ID: "n7", Host: "h7", Role: ring.WriteOptimized, Addr: "n7",
		Tokens: ring.RandomTokens(rand.New(rand.NewPCG(3, 4)), 16, taken)}
	c.start(1, []meta.Member{joiner}, nil)
	members = append(members, cluster.Member{ID: "n7", Host: "h7", Role: ring.WriteOptimized, Up: true, Status: cluster.Normal})
	n.SetView(members, r)
	p := c.placement()
	if err := n.SetPlacement(c.s.Epoch, p); err != nil {
		b.Fatal(err)
	}
	for _, k := range benchKeys() {
		if len(p.WriteGroups(ring.TokenOf(k))) > 1 {
			moving = append(moving, k)
		} else {
			still = append(still, k)
		}
	}
	return n, still, moving
}

// The write path under a placement with a change in flight: keys whose range does not
// move (which must cost what they cost without a placement) and keys whose range moves
// (two replica groups).
func BenchmarkWritePlaced(b *testing.B) {
	for _, p := range []coord.Policy{coord.Uniform{}, coord.EngineAware{}} {
		n, still, moving := benchPlaced(b, p)
		b.Run("policy="+p.Name()+"/ranges=still", func(b *testing.B) { benchWritesOf(b, n, still) })
		b.Run("policy="+p.Name()+"/ranges=moving", func(b *testing.B) { benchWritesOf(b, n, moving) })
	}
}

// The read path under a placement with a change in flight, keys whose range does not
// move and keys whose range moves (read from the current set alone either way).
func BenchmarkReadPlaced(b *testing.B) {
	for _, p := range []coord.Policy{coord.Uniform{}, coord.EngineAware{}} {
		n, still, moving := benchPlaced(b, p)
		b.Run("policy="+p.Name()+"/ranges=still", func(b *testing.B) { benchReadsOf(b, n, still) })
		b.Run("policy="+p.Name()+"/ranges=moving", func(b *testing.B) { benchReadsOf(b, n, moving) })
	}
}
