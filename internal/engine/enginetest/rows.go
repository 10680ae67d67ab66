package enginetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// RandomRow returns a row of columns live cells named "c000", "c001", ... each holding
// valueBytes random bytes written at ts. The suite's benchmarks use 10 columns of 100 bytes
// (a 1 KB row).
func RandomRow(rng *rand.Rand, columns, valueBytes int, ts int64) row.Row {
	r := row.Row{Cells: make([]row.Cell, columns)}
	for i := range r.Cells {
		v := make([]byte, valueBytes)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		r.Cells[i] = row.Cell{Name: fmt.Appendf(nil, "c%03d", i), Value: v, Timestamp: ts}
	}
	return r
}

// RowsEqual reports whether a and b hold the same row tombstone and the same cells. A nil
// and an empty Value compare equal: both are the empty string, and engines need not keep
// the difference.
func RowsEqual(a, b row.Row) bool {
	if a.Deleted != b.Deleted || len(a.Cells) != len(b.Cells) {
		return false
	}
	for i := range a.Cells {
		x, y := &a.Cells[i], &b.Cells[i]
		if !bytes.Equal(x.Name, y.Name) || !bytes.Equal(x.Value, y.Value) ||
			x.Timestamp != y.Timestamp || x.ExpiresAt != y.ExpiresAt || x.Tombstone != y.Tombstone {
			return false
		}
	}
	return true
}

// FormatRow renders r compactly for failure messages: the row tombstone, then each cell as
// name@timestamp=value, "tomb" for a tombstone and "exp=" for an expiry. Long values are
// shortened to their length and first bytes.
func FormatRow(r row.Row) string {
	var b strings.Builder
	b.WriteByte('{')
	if r.Deleted != 0 {
		fmt.Fprintf(&b, "deleted@%d", r.Deleted)
	}
	for i, c := range r.Cells {
		if i > 0 || r.Deleted != 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q@%d=", c.Name, c.Timestamp)
		switch {
		case c.Tombstone:
			b.WriteString("tomb")
		case len(c.Value) > 24:
			fmt.Fprintf(&b, "%q...(%d B)", c.Value[:16], len(c.Value))
		default:
			fmt.Fprintf(&b, "%q", c.Value)
		}
		if c.ExpiresAt != 0 {
			fmt.Fprintf(&b, ",exp=%d", c.ExpiresAt)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// getResult is one Get's outcome, normalised so that "found an empty row" equals "not
// found": an empty row needs no storage, so engines may keep either.
type getResult struct {
	found bool
	row   row.Row
}

func normalGet(r row.Row, found bool) getResult {
	if !found || r.IsEmpty() {
		return getResult{}
	}
	return getResult{found: true, row: r}
}

func (g getResult) equal(o getResult) bool {
	return g.found == o.found && (!g.found || RowsEqual(g.row, o.row))
}

func (g getResult) String() string {
	if !g.found {
		return "not found"
	}
	return FormatRow(g.row)
}

// kv is one row of a scan, copied out of the iterator.
type kv struct {
	key []byte
	row row.Row
}

// collect drains it, copying each key and row (they are only valid until Next), and
// closes it. Empty rows are skipped for the same reason normalGet hides them.
func collect(it engine.Iterator) ([]kv, error) {
	var out []kv
	for it.Next() {
		r := it.Row()
		if r.IsEmpty() {
			continue
		}
		out = append(out, kv{key: bytes.Clone(it.Key()), row: r.Clone()})
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return out, err
}

// scan returns the rows of e in [lo, hi).
func scan(e engine.Engine, lo, hi []byte) ([]kv, error) {
	it, err := e.NewIterator(lo, hi)
	if err != nil {
		return nil, err
	}
	return collect(it)
}

// diffScans describes the first difference between two scans, or returns "".
func diffScans(got, want []kv) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("row %d: missing %q %s", i, want[i].key, FormatRow(want[i].row))
		case i >= len(want):
			return fmt.Sprintf("row %d: unexpected %q %s", i, got[i].key, FormatRow(got[i].row))
		case !bytes.Equal(got[i].key, want[i].key):
			return fmt.Sprintf("row %d: key %q, want %q", i, got[i].key, want[i].key)
		case !RowsEqual(got[i].row, want[i].row):
			return fmt.Sprintf("row %d key %q: got %s, want %s", i, got[i].key,
				FormatRow(got[i].row), FormatRow(want[i].row))
		}
	}
	return ""
}

// fmtBound renders an iterator bound, telling nil (unbounded) from empty.
func fmtBound(b []byte) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", b)
}

// cell builds a live cell; tomb builds a column tombstone. They keep the checks short.
func cell(name, value string, ts int64) row.Cell {
	return row.Cell{Name: []byte(name), Value: []byte(value), Timestamp: ts}
}

func tomb(name string, ts int64) row.Cell {
	return row.Cell{Name: []byte(name), Timestamp: ts, Tombstone: true}
}

// mut builds a mutation of key holding cells (which must be sorted by name).
func mut(key string, cells ...row.Cell) row.Mutation {
	return row.Mutation{Key: []byte(key), Row: row.Row{Cells: cells}}
}

// rowDelete builds a whole-row delete of key at ts.
func rowDelete(key string, ts int64) row.Mutation {
	return row.Mutation{Key: []byte(key), Row: row.Row{Deleted: ts}}
}
