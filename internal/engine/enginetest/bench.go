package enginetest

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// Benchmark shape: rows of benchColumns columns of benchValueBytes (1 KB of values), keys
// of 16 bytes, a fixed seed. benchRowPool distinct rows are generated up front so that the
// loop measures the engine, not the generator.
const (
	benchColumns    = 10
	benchValueBytes = 100
	benchRowPool    = 256
	benchGetKeys    = 10_000 // rows pre-loaded for op=get
	benchSeed       = 42
)

// RunBenchmarks measures f with key=value sub-benchmark names, comparable across engines
// with benchstat:
//
//	op=put/size=1KB/durability=sync       one single-row Apply per op, fsynced
//	op=put/size=1KB/durability=periodic   the same, fsync left to the periodic syncer
//	op=get/size=1KB                       Get of a random pre-loaded key
//	op=put-parallel/size=1KB/durability=… Apply from GOMAXPROCS goroutines (group commit)
//
// Every engine gets a fresh dir per sub-benchmark and the wall clock.
func RunBenchmarks(b *testing.B, f Factory) {
	rows := benchRows()
	for _, d := range []engine.Durability{engine.Sync, engine.Periodic} {
		b.Run("op=put/size=1KB/durability="+d.String(), func(b *testing.B) { benchPut(b, f, d, rows) })
	}
	b.Run("op=get/size=1KB", func(b *testing.B) { benchGet(b, f, rows) })
	for _, d := range []engine.Durability{engine.Sync, engine.Periodic} {
		b.Run("op=put-parallel/size=1KB/durability="+d.String(), func(b *testing.B) { benchPutParallel(b, f, d, rows) })
	}
}

func benchRows() []row.Row {
	rng := rand.New(rand.NewPCG(benchSeed, 0))
	rows := make([]row.Row, benchRowPool)
	for i := range rows {
		rows[i] = RandomRow(rng, benchColumns, benchValueBytes, StartMicros+int64(i))
	}
	return rows
}

// benchOpen opens f in a fresh dir with the wall clock and durability d.
func benchOpen(b *testing.B, f Factory, d engine.Durability) engine.Engine {
	b.Helper()
	e, err := f.Open(b.TempDir(), engine.Options{Durability: d})
	if err != nil {
		b.Fatalf("%s: open: %v", f.Name, err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// benchKey writes the 16-byte key of row i into buf.
func benchKey(buf []byte, i uint64) []byte { return fmt.Appendf(buf[:0], "bench%011d", i) }

func rowBytes(r row.Row) int64 {
	n := 0
	for _, c := range r.Cells {
		n += len(c.Name) + len(c.Value)
	}
	return int64(n + 16)
}

func benchPut(b *testing.B, f Factory, d engine.Durability, rows []row.Row) {
	e := benchOpen(b, f, d)
	b.SetBytes(rowBytes(rows[0]))
	batch := make([]row.Mutation, 1)
	var key []byte
	for i := uint64(0); b.Loop(); i++ {
		key = benchKey(key, i)
		batch[0] = row.Mutation{Key: key, Row: rows[i%benchRowPool]}
		if err := e.Apply(batch); err != nil {
			b.Fatalf("%s: apply: %v", f.Name, err)
		}
	}
}

func benchGet(b *testing.B, f Factory, rows []row.Row) {
	e := benchOpen(b, f, engine.Periodic)
	batch := make([]row.Mutation, 0, 100)
	for i := range uint64(benchGetKeys) {
		batch = append(batch, row.Mutation{Key: benchKey(nil, i), Row: rows[i%benchRowPool]})
		if len(batch) == cap(batch) {
			if err := e.Apply(batch); err != nil {
				b.Fatalf("%s: load: %v", f.Name, err)
			}
			batch = batch[:0]
		}
	}
	if err := e.Flush(); err != nil {
		b.Fatalf("%s: flush: %v", f.Name, err)
	}
	rng := rand.New(rand.NewPCG(benchSeed, 1))
	b.SetBytes(rowBytes(rows[0]))
	var key []byte
	for b.Loop() {
		key = benchKey(key, rng.Uint64N(benchGetKeys))
		if _, found, err := e.Get(key); err != nil || !found {
			b.Fatalf("%s: get %q: found %t, %v", f.Name, key, found, err)
		}
	}
}

func benchPutParallel(b *testing.B, f Factory, d engine.Durability, rows []row.Row) {
	e := benchOpen(b, f, d)
	b.SetBytes(rowBytes(rows[0]))
	var next atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]row.Mutation, 1)
		var key []byte
		for pb.Next() {
			i := next.Add(1)
			key = benchKey(key, i)
			batch[0] = row.Mutation{Key: key, Row: rows[i%benchRowPool]}
			if err := e.Apply(batch); err != nil {
				b.Errorf("%s: apply: %v", f.Name, err)
				return
			}
		}
	})
}
