package resp

import (
	"bytes"
	"slices"

	"github.com/kuradb/kura/internal/row"
)

// Column names of the data model (see the package comment).
const (
	// StringColumn is the one column of a string key.
	StringColumn = "\x00"
	// HashFieldPrefix starts the column name of every hash field.
	HashFieldPrefix byte = 0x01
)

var stringColumn = []byte(StringColumn)

// kind is a key's Redis type.
type kind uint8

const (
	kindNone kind = iota
	kindString
	kindHash
)

// kindOf returns the type of a row from its visible cells: a visible string column wins,
// then any visible hash field.
func kindOf(r *row.Row, now int64) kind {
	if c := stringCell(r, now); c != nil {
		return kindString
	}
	for i := range r.Cells {
		if isField(r.Cells[i].Name) && r.Cells[i].Live(now) {
			return kindHash
		}
	}
	return kindNone
}

// stringValue returns the visible value of r's string, and whether r holds one. Every
// command that reads a string's value goes through it (never through stringCell), so
// that values the string column does not hold alone (counters) read the same everywhere.
// The value may alias r, and is not nil when ok.
func stringValue(r *row.Row, now int64) ([]byte, bool) {
	if c := stringCell(r, now); c != nil {
		if c.Value == nil {
			return []byte{}, true // an empty string is not nil
		}
		return c.Value, true
	}
	return nil, false
}

// stringCell returns the visible string cell of r, or nil. Cells are sorted by name and
// only the empty name sorts before the string column, so the scan stops at once.
func stringCell(r *row.Row, now int64) *row.Cell {
	for i := range r.Cells {
		c := &r.Cells[i]
		if len(c.Name) == 0 {
			continue
		}
		if string(c.Name) == StringColumn && c.Live(now) {
			return c
		}
		return nil
	}
	return nil
}

func isField(name []byte) bool { return len(name) > 0 && name[0] == HashFieldPrefix }

// fieldName appends the column name of hash field f to dst.
func fieldName(dst, f []byte) []byte {
	dst = append(dst, HashFieldPrefix)
	return append(dst, f...)
}

// hashCell returns the visible cell of field f (column name col), or nil.
func hashCell(r *row.Row, col []byte, now int64) *row.Cell {
	if c := r.Find(col); c != nil && c.Live(now) {
		return c
	}
	return nil
}

// keyExpiry returns the earliest expiry among the visible cells of the key's type, or 0
// when none expires: that is the key's TTL.
func keyExpiry(r *row.Row, k kind, now int64) int64 {
	var at int64
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.ExpiresAt == 0 || !c.Live(now) || !ofKind(c.Name, k) {
			continue
		}
		if at == 0 || c.ExpiresAt < at {
			at = c.ExpiresAt
		}
	}
	return at
}

func ofKind(name []byte, k kind) bool {
	switch k {
	case kindString:
		return string(name) == StringColumn
	case kindHash:
		return isField(name)
	}
	return false
}

// visibleOfKind appends the visible cells of type k to dst.
func visibleOfKind(dst []row.Cell, r *row.Row, k kind, now int64) []row.Cell {
	for i := range r.Cells {
		if ofKind(r.Cells[i].Name, k) && r.Cells[i].Live(now) {
			dst = append(dst, r.Cells[i])
		}
	}
	return dst
}

// sortDedupCells sorts cells by name and keeps the last of each run of equal names, so
// that "HSET k f 1 f 2" stores 2 as Redis does. The result is a valid row.Row.Cells.
func sortDedupCells(cells []row.Cell) []row.Cell {
	slices.SortStableFunc(cells, func(a, b row.Cell) int { return bytes.Compare(a.Name, b.Name) })
	out := cells[:0]
	for i := range cells {
		if i+1 < len(cells) && bytes.Equal(cells[i].Name, cells[i+1].Name) {
			continue
		}
		out = append(out, cells[i])
	}
	return out
}

// distinct returns keys without repetitions, in first-seen order. It allocates only when
// there is more than one key.
func distinct(keys [][]byte) [][]byte {
	if len(keys) < 2 {
		return keys
	}
	seen := make(map[string]struct{}, len(keys))
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if _, ok := seen[string(k)]; ok {
			continue
		}
		seen[string(k)] = struct{}{}
		out = append(out, k)
	}
	return out
}
