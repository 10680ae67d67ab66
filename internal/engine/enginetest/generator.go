package enginetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kuradb/kura/internal/row"
)

// generator makes random mutations over a small key space, built to collide: few keys and
// columns, timestamps from a narrow window (so equal timestamps and their tie-breaks are
// common), small values that often compare equal, column and row tombstones, and TTLs
// around the current time (so cells expire while the test runs).
type generator struct {
	rng  *rand.Rand
	keys [][]byte
}

// generatorKeys are the key space: ordinary keys plus a prefix of them, 0x00 and 0xff.
func generatorKeys() [][]byte {
	keys := [][]byte{[]byte("\x00"), []byte("k"), []byte("k05\x00"), []byte("\xff"), []byte("\xff\x00")}
	for i := range 28 {
		keys = append(keys, fmt.Appendf(nil, "k%02d", i))
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func newGenerator(seed uint64) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, 0x6b757261)), keys: generatorKeys()}
}

// timestamp picks from a 60 µs window around now: narrow enough that equal timestamps
// are common, and moving with the clock so that later writes still win some merges.
func (g *generator) timestamp(now int64) int64 { return now - 20 + g.rng.Int64N(60) }

func (g *generator) key() []byte { return g.keys[g.rng.IntN(len(g.keys))] }

// value picks from a few short values, nil and empty included, or random bytes.
func (g *generator) value() []byte {
	switch n := g.rng.IntN(8); n {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2, 3, 4:
		return []byte([]string{"a", "b", "ab"}[n-2])
	default:
		v := make([]byte, 1+g.rng.IntN(24))
		for i := range v {
			v[i] = byte(g.rng.Uint32())
		}
		return v
	}
}

// cell makes one cell of column name; TTLs are set relative to now and may already have
// passed.
func (g *generator) cell(name []byte, now int64) row.Cell {
	c := row.Cell{Name: name, Timestamp: g.timestamp(now)}
	switch p := g.rng.IntN(10); {
	case p < 2:
		c.Tombstone = true
	case p < 4:
		c.Value = g.value()
		c.ExpiresAt = max(1, now-10+g.rng.Int64N(70))
	default:
		c.Value = g.value()
	}
	return c
}

// row makes a row of up to four of six columns, one in ten with a row tombstone.
func (g *generator) row(now int64) row.Row {
	var r row.Row
	if g.rng.IntN(10) == 0 {
		r.Deleted = g.timestamp(now)
	}
	n := g.rng.IntN(5)
	if r.Deleted == 0 {
		n = max(n, 1) // no empty mutations: they make no observable change
	}
	cols := g.rng.Perm(6)[:n]
	slices.Sort(cols)
	for _, c := range cols {
		r.Cells = append(r.Cells, g.cell(fmt.Appendf(nil, "c%d", c), now))
	}
	return r
}

// batch makes one to four mutations; keys may repeat within a batch.
func (g *generator) batch(now int64) []row.Mutation {
	b := make([]row.Mutation, 1+g.rng.IntN(4))
	for i := range b {
		b[i] = row.Mutation{Key: g.key(), Row: g.row(now)}
	}
	return b
}

// invalidBatch makes a batch whose last mutation is invalid: Apply must reject it whole.
func (g *generator) invalidBatch(now int64) []row.Mutation {
	b := g.batch(now)
	bad := row.Mutation{Key: g.key(), Row: row.Row{Cells: []row.Cell{
		{Name: []byte("c2"), Value: []byte("x"), Timestamp: g.timestamp(now)},
		{Name: []byte("c1"), Value: []byte("y"), Timestamp: g.timestamp(now)},
	}}}
	if g.rng.IntN(2) == 0 {
		bad = row.Mutation{Key: nil, Row: g.row(now)}
	}
	return append(b, bad)
}

// bound picks an iterator bound: nil, a stored key, or a key between stored keys.
func (g *generator) bound() []byte {
	switch g.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return append(slices.Clone(g.key()), 0)
	}
	return g.key()
}

// bounds picks lo and hi, occasionally inverted (lo > hi), which must fail with ErrInvalid.
func (g *generator) bounds() (lo, hi []byte) {
	lo, hi = g.bound(), g.bound()
	if lo != nil && hi != nil && string(lo) > string(hi) && g.rng.IntN(4) != 0 {
		lo, hi = hi, lo
	}
	return lo, hi
}
