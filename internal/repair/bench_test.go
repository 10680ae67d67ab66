package repair_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/repair"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// The cost of the two ways of keeping a replica's hash tree (docs/design/repair.md):
// built by a scan when a session starts (what package repair does), or kept up to date as
// writes land (Riak's TicTac trees), which needs the row's old hash to XOR it out: a read
// before every write, on an engine whose writes are blind. On an lsm store of
// KURA_BENCH_ROWS rows of 1 KB (default 200,000) in periodic durability (so that fsyncs
// do not hide the CPU):
//
//	go test -run XXX -bench 'WritePath|BuildTree' -count 3 ./internal/repair/
var benchStore = struct {
	once sync.Once
	dir  string
	keys [][]byte
}{}

func benchRows(b *testing.B) int {
	n := 200_000
	if s := os.Getenv("KURA_BENCH_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// openBenchStore opens the shared lsm store, loading it on first use.
func openBenchStore(b *testing.B) (engine.Engine, [][]byte) {
	b.Helper()
	benchStore.once.Do(func() {
		dir, err := os.MkdirTemp("", "kura-repair-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchStore.dir = dir
		e, err := lsm.Open(dir, lsm.Options{Options: engine.Options{Durability: engine.Periodic}})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		batch := make([]row.Mutation, 0, 512)
		for i := range benchRows(b) {
			k := ring.EngineKey([]byte(fmt.Sprintf("user%019d", rng.Uint64())))
			benchStore.keys = append(benchStore.keys, k)
			batch = append(batch, row.Mutation{Key: k, Row: ycsbRow(rng, 100)})
			if len(batch) == cap(batch) || i == benchRows(b)-1 {
				if err := e.Apply(batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	})
	e, err := lsm.Open(benchStore.dir, lsm.Options{Options: engine.Options{Durability: engine.Periodic}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, benchStore.keys
}

// BenchmarkWritePath: one 1 KB update of an existing row per operation, blind (kura's
// write path) and with the read, merge and two hashes an incrementally kept tree needs.
func BenchmarkWritePath(b *testing.B) {
	for _, mode := range []string{"blind", "tictac"} {
		b.Run(mode, func(b *testing.B) {
			e, keys := openBenchStore(b)
			rng := rand.New(rand.NewPCG(3, 4))
			segments := make([]uint64, 1<<16) // one range's leaves
			var enc []byte
			b.SetBytes(1100)
			b.ResetTimer()
			for i := range b.N {
				k := keys[rng.IntN(len(keys))]
				r := ycsbRow(rng, int64(200+i))
				if mode == "tictac" {
					old, found, err := e.Get(k)
					if err != nil {
						b.Fatal(err)
					}
					seg := xxhash.Sum64(k) % uint64(len(segments))
					if found {
						enc = row.AppendEncode(enc[:0], &old)
						segments[seg] ^= xxhash.Sum64(enc)
					}
					merged := row.Merge(old, r)
					enc = row.AppendEncode(enc[:0], &merged)
					segments[seg] ^= xxhash.Sum64(enc)
				}
				if err := e.Apply([]row.Mutation{{Key: k, Row: r}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildTree: a session's scan of the whole store into a tree, per row.
func BenchmarkBuildTree(b *testing.B) {
	e, keys := openBenchStore(b)
	b.ResetTimer()
	for range b.N {
		bl := repair.NewBuilder(repair.Shape{Start: ring.MinToken, End: ring.MinToken}, repair.View{Salt: 1, Now: 1e9, Grace: 1e9})
		if err := (engine.Scanner{Engine: e}).Scan(nil, nil, bl.Add); err != nil {
			b.Fatal(err)
		}
		t := bl.Tree(repair.DepthFor(bl.Rows()))
		if t.Rows() != len(keys) {
			b.Fatalf("%d rows hashed of %d", t.Rows(), len(keys))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/row")
}
