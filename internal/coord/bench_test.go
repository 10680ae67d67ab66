package coord

import (
	"testing"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// benchTrio is a replica set of one node per engine role, as the heterogeneous cluster's.
var benchTrio = []Replica{
	{ID: "n1", Up: true, Role: ring.WriteOptimized},
	{ID: "n2", Up: true, Role: ring.ReadOptimized},
	{ID: "n3", Up: true, Role: ring.InMemory},
}

var benchMutation = row.Mutation{Key: []byte("k"), Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}

// One QUORUM write over a replica set of three, every target acknowledging in the order
// sent: the request path's whole coordinator work.
func BenchmarkWrite(b *testing.B) {
	for _, p := range []Policy{Uniform{}, EngineAware{}} {
		b.Run("policy="+p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, fx := StartWrite(benchMutation, Quorum, benchTrio, p)
				for _, e := range fx {
					if s, ok := e.(SendWrite); ok {
						w.OnResponse(s.To, nil)
					}
				}
				if !w.Done() {
					b.Fatal("write not done")
				}
			}
		})
	}
}

// One QUORUM write to a moving range: two groups of three sharing two replicas (one
// replaced), every target acknowledging in the order sent.
func BenchmarkWriteGroups(b *testing.B) {
	pending := []Replica{benchTrio[0], benchTrio[1], {ID: "n4", Up: true, Role: ring.InMemory}}
	groups := [][]Replica{benchTrio, pending}
	for _, p := range []Policy{Uniform{}, EngineAware{}} {
		b.Run("policy="+p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, fx := StartWriteGroups(benchMutation, Quorum, groups, p)
				for _, e := range fx {
					if s, ok := e.(SendWrite); ok {
						w.OnResponse(s.To, nil)
					}
				}
				if !w.Done() {
					b.Fatal("write not done")
				}
			}
		})
	}
}

// One QUORUM read over a replica set of three whose answers agree.
func BenchmarkRead(b *testing.B) {
	found := ReadResponse{Row: benchMutation.Row, Found: true}
	digest := ReadResponse{Digest: row.Digest(benchMutation.Row, true)}
	for _, p := range []Policy{Uniform{}, EngineAware{}} {
		b.Run("policy="+p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rd, fx := StartRead(benchMutation.Key, Quorum, benchTrio, p, RepairBackground)
				var replied bool
				for _, e := range fx {
					s := e.(SendRead)
					resp := found
					if s.Digest {
						resp = digest
					}
					for _, out := range rd.OnResponse(s.To, resp) {
						_, replied = out.(Reply)
					}
				}
				if !replied {
					b.Fatal("read did not reply")
				}
			}
		})
	}
}
