package resp

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/kuradb/kura/internal/row"
)

// Counters (INCR and its family) are state-based CRDT cells: a column's value is its base
// cell (what SET or HSET wrote, 0 when there is none) plus one shard per node that
// incremented it, each shard holding that node's whole contribution. Only its own node
// writes a shard, always at the key's leader, serialized there, from the node's exact
// local copy, with increasing timestamps: so the last write of a shard is also its largest
// version, last-write-wins merges keep it, and every replica that has seen the same shards
// sums to the same value whatever order they arrived in. See doc.go, "Counters".
//
// Column names (sorted after the string column and the hash fields):
//
//	"\x02" + node           a node's shard of the string column
//	"\x03" + uvarint(len F) + F + node   a node's shard of hash field F
//
// A shard's value is a version byte, the generation (the timestamp of the base cell it adds
// to, 0 for none: 8 bytes big-endian) and the contribution as decimal text. A shard counts
// only when its generation is at least the base cell's timestamp (or there is no base
// cell): a SET or HSET that replaces the base starts a new generation, and the shards of
// older ones stop counting without anyone deleting them.
const (
	stringShardPrefix byte = 0x02
	fieldShardPrefix  byte = 0x03
	shardVersion      byte = 1
)

// Redis's error texts of the counter commands.
const (
	errNotFloat      = "ERR value is not a valid float"
	errOverflow      = "ERR increment or decrement would overflow"
	errNaN           = "ERR increment would produce NaN or Infinity"
	errHashNotInt    = "ERR hash value is not an integer"
	errHashNotFloat  = "ERR hash value is not a float"
	errMultiKeyShard = "ERR counter shard names are reserved"
)

// number is a counter's value: an integer, or a float once INCRBYFLOAT touched it.
type number struct {
	i       int64
	f       float64
	isFloat bool
}

// parseNumber reads a base or a contribution: an integer in Redis's strict syntax, else a
// finite float.
func parseNumber(b []byte) (number, bool) {
	if i, ok := parseInt(b); ok {
		return number{i: i}, true
	}
	if f, ok := parseFloat(b); ok {
		return number{f: f, isFloat: true}, true
	}
	return number{}, false
}

// parseFloat parses a finite float the way INCRBYFLOAT accepts one: no spaces, no
// infinities or NaN.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func (n number) float() float64 {
	if n.isFloat {
		return n.f
	}
	return float64(n.i)
}

// add returns n+m: an integer when both are and the sum fits, else a float.
func (n number) add(m number) number {
	if !n.isFloat && !m.isFloat {
		if s, ok := addInt(n.i, m.i); ok {
			return number{i: s}
		}
	}
	return number{f: n.float() + m.float(), isFloat: true}
}

func addInt(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// appendText appends n as Redis shows it: an integer in decimal, a float in the shortest
// text that reads back as the same float, without exponent (INCRBYFLOAT's "human" form).
func (n number) appendText(dst []byte) []byte {
	if !n.isFloat {
		return strconv.AppendInt(dst, n.i, 10)
	}
	if n.f == math.Trunc(n.f) && math.Abs(n.f) < 1<<53 {
		return strconv.AppendInt(dst, int64(n.f), 10)
	}
	return strconv.AppendFloat(dst, n.f, 'f', -1, 64)
}

// shardColumn appends the column name of node's shard of base column col (the string
// column, or a hash field's column) to dst.
func shardColumn(dst, col []byte, node string) []byte {
	if string(col) == StringColumn {
		dst = append(dst, stringShardPrefix)
		return append(dst, node...)
	}
	f := col[1:]
	dst = append(dst, fieldShardPrefix)
	dst = binary.AppendUvarint(dst, uint64(len(f)))
	dst = append(dst, f...)
	return append(dst, node...)
}

// shardBase returns the base column a shard column adds to, appended to dst, or ok=false
// for a column that is not a well-formed shard.
func shardBase(dst, name []byte) (_ []byte, ok bool) {
	if len(name) == 0 {
		return dst, false
	}
	switch name[0] {
	case stringShardPrefix:
		return append(dst, stringColumn...), true
	case fieldShardPrefix:
		n, k := binary.Uvarint(name[1:])
		if k <= 0 || n > uint64(len(name)-1-k) {
			return dst, false
		}
		return fieldName(dst, name[1+k:1+k+int(n)]), true
	}
	return dst, false
}

func isShard(name []byte) bool {
	return len(name) > 0 && (name[0] == stringShardPrefix || name[0] == fieldShardPrefix)
}

// encodeShard appends a shard's value to dst.
func encodeShard(dst []byte, gen int64, n number) []byte {
	dst = append(dst, shardVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(gen))
	return n.appendText(dst)
}

// decodeShard parses a shard's value. Unknown versions and malformed values do not count.
func decodeShard(v []byte) (gen int64, n number, ok bool) {
	if len(v) < 9 || v[0] != shardVersion {
		return 0, number{}, false
	}
	gen = int64(binary.BigEndian.Uint64(v[1:9]))
	n, ok = parseNumber(v[9:])
	return gen, n, ok
}

// hasShards reports whether r holds any shard column. Shard names sort after the string
// column and the hash fields, so the last cell says.
func hasShards(r *row.Row) bool {
	for i := len(r.Cells) - 1; i >= 0; i-- {
		if isShard(r.Cells[i].Name) {
			return true
		}
		if len(r.Cells[i].Name) > 0 && r.Cells[i].Name[0] < stringShardPrefix {
			return false
		}
	}
	return false
}

// counts reports whether a shard of generation gen adds to base (nil: no base cell).
func counts(gen int64, base *row.Cell) bool { return base == nil || gen >= base.Timestamp }

// fold returns the row as the commands see it: every column with counting, live shards
// becomes one cell holding base plus contributions. The shard columns stay (commands that
// replace or delete a column tombstone its shards, see shardTombstones) and commands
// ignore them, as they ignore every column that is neither the string nor a field. A
// row without shards is returned as is; otherwise the result is a new row that may share
// bytes with r.
func fold(r row.Row, now int64) row.Row {
	if !hasShards(&r) {
		return r
	}
	type sum struct {
		col      []byte
		total    number
		any      bool
		ts, exp  int64
		baseLive bool
	}
	var sums []sum
	find := func(col []byte) *sum {
		for i := range sums {
			if bytes.Equal(sums[i].col, col) {
				return &sums[i]
			}
		}
		return nil
	}
	out := row.Row{Deleted: r.Deleted, Cells: make([]row.Cell, 0, len(r.Cells))}
	for i := range r.Cells {
		c := &r.Cells[i]
		out.Cells = append(out.Cells, *c)
		if !isShard(c.Name) {
			continue
		}
		col, ok := shardBase(nil, c.Name)
		gen, n, okv := decodeShard(c.Value)
		if !ok || !okv || !c.Live(now) || !counts(gen, r.Find(col)) {
			continue
		}
		s := find(col)
		if s == nil {
			sums = append(sums, sum{col: col})
			s = &sums[len(sums)-1]
		}
		s.total, s.any = s.total.add(n), true
		s.ts = max(s.ts, c.Timestamp)
		if c.ExpiresAt != 0 && (s.exp == 0 || c.ExpiresAt < s.exp) {
			s.exp = c.ExpiresAt
		}
	}
	for _, s := range sums {
		base := r.Find(s.col)
		total, ts, exp := s.total, s.ts, s.exp
		if base != nil && base.Live(now) {
			b, ok := parseNumber(base.Value)
			if !ok {
				continue // a base that is not a number: the shards cannot be of it
			}
			total, ts = b.add(total), max(ts, base.Timestamp)
			if base.ExpiresAt != 0 && (exp == 0 || base.ExpiresAt < exp) {
				exp = base.ExpiresAt
			}
		}
		cell := row.Cell{Name: s.col, Value: total.appendText(nil), Timestamp: ts, ExpiresAt: exp}
		if j, found := slices.BinarySearchFunc(out.Cells, s.col, func(c row.Cell, n []byte) int { return bytes.Compare(c.Name, n) }); found {
			out.Cells[j] = cell
		} else {
			out.Cells = slices.Insert(out.Cells, j, cell)
		}
	}
	return out
}

// shardTombstones appends to cells a tombstone at ts of every live shard of column col in
// r: a command that replaces or deletes the column ends its counters with it, so that
// they never count again once the new base is purged. The caller sorts the cells.
func shardTombstones(cells []row.Cell, r *row.Row, col []byte, ts int64) []row.Cell {
	var scratch [row.MaxKeySize / 256]byte
	for i := range r.Cells {
		c := &r.Cells[i]
		if !isShard(c.Name) || c.Tombstone {
			continue
		}
		if base, ok := shardBase(scratch[:0], c.Name); ok && bytes.Equal(base, col) {
			cells = append(cells, row.Cell{Name: c.Name, Timestamp: ts, Tombstone: true})
		}
	}
	return cells
}

// ownShard returns node's shard of base column col in raw row r: its contribution when it
// counts, and the timestamp of its last write (0 for none), which the next write must
// exceed.
func ownShard(r *row.Row, col []byte, node string, now int64, scratch []byte) (n number, ts int64) {
	c := r.Find(shardColumn(scratch[:0], col, node))
	if c == nil {
		return number{}, 0
	}
	gen, v, ok := decodeShard(c.Value)
	if !ok || !c.Live(now) || !counts(gen, r.Find(col)) {
		return number{}, c.Timestamp
	}
	return v, c.Timestamp
}
