package machine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
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

func benchWrites(b *testing.B, n *Node) {
	keys := benchKeys()
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

func benchReads(b *testing.B, n *Node) {
	keys := benchKeys()
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
