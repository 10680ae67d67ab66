package scan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// BenchmarkMerge merges a quorum's pages of rows=N real keys each (the replicas agree,
// as they do but for recent writes).
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, replicas := range []int{2, 3} {
			b.Run(fmt.Sprintf("rows=%d/replicas=%d", n, replicas), func(b *testing.B) {
				rep := &fakeReplica{rows: map[string]row.Row{}}
				for i := range n {
					rep.put(fmt.Sprint("user", i), live("v", 1))
				}
				all := Span{From: ring.MinToken, To: ring.MaxToken}
				kr := all.Keys()
				pages := make([]Page, replicas)
				for i := range pages {
					pages[i] = rep.scan(kr.Lo, kr.Hi, n)
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := Merge(all, pages); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSelector is one single-node page: keys=N offered in random order, n kept.
func BenchmarkSelector(b *testing.B) {
	for _, keys := range []int{10000} {
		for _, n := range []int{10, 1000} {
			b.Run(fmt.Sprintf("keys=%d/n=%d", keys, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				type kt struct {
					tok ring.Token
					key []byte
				}
				ks := make([]kt, keys)
				for i := range ks {
					ks[i] = kt{ring.Token(rng.Uint64()), fmt.Appendf(nil, "user%d", i)}
				}
				r := live("value", 1)
				for b.Loop() {
					sel := NewSelector(ring.MinToken, n)
					for _, k := range ks {
						sel.Add(k.tok, k.key, &r)
					}
					sel.Result()
				}
			})
		}
	}
}
