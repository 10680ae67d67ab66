package row

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
)

// Limits on what a row may hold. They bound memory for any single decode and are enforced
// by Validate and by the codec.
const (
	// MaxKeySize is the largest key a row may have (64 KiB).
	MaxKeySize = 64 << 10
	// MaxColumnNameSize is the largest column name (64 KiB).
	MaxColumnNameSize = 64 << 10
	// MaxValueSize is the largest value of one cell (512 MiB, Redis's own string limit).
	// Front ends set much lower limits of their own.
	MaxValueSize = 512 << 20
	// MaxCells is the largest number of cells one row may hold.
	MaxCells = 1 << 24
)

// Errors returned by Validate and the codec.
var (
	ErrKeyTooLarge   = errors.New("row: key too large")
	ErrEmptyKey      = errors.New("row: empty key")
	ErrInvalid       = errors.New("row: invalid row")
	ErrCorrupt       = errors.New("row: corrupt encoding")
	ErrVersion       = errors.New("row: unknown encoding version")
	ErrValueTooLarge = errors.New("row: value too large")
)

// Cell is one column's value at one write timestamp.
//
// Timestamps are microseconds; kura's coordinator assigns them from a hybrid logical clock
// so they are close to Unix time in microseconds. A Cell never aliases memory the caller
// keeps using unless the producing function says so.
type Cell struct {
	// Name is the column name. Names are unique within a row and rows keep cells sorted
	// by name.
	Name []byte
	// Value is the cell's value; nil for a tombstone.
	Value []byte
	// Timestamp is the write timestamp in microseconds.
	Timestamp int64
	// ExpiresAt is the time, in microseconds, from which the cell reads as absent; 0 means
	// the cell never expires. Tombstones never carry an expiry.
	ExpiresAt int64
	// Tombstone marks a deleted column.
	Tombstone bool
}

// Live reports whether the cell holds a value that is visible at nowMicros.
func (c *Cell) Live(nowMicros int64) bool {
	return !c.Tombstone && (c.ExpiresAt == 0 || nowMicros < c.ExpiresAt)
}

// Row is a set of cells sorted by column name, plus an optional row tombstone. The zero Row
// is empty and valid. Keys are not part of a Row: engines store them beside it.
type Row struct {
	// Deleted is the timestamp of the newest whole-row delete, or 0 for none. It shadows
	// every cell whose timestamp is at or below it.
	Deleted int64
	// Cells are sorted by Name, with no duplicate names.
	Cells []Cell
}

// IsEmpty reports whether the row holds neither cells nor a row tombstone; an empty row
// needs no storage at all.
func (r *Row) IsEmpty() bool { return r.Deleted == 0 && len(r.Cells) == 0 }

// Newest returns the largest timestamp in r: its cells' and its row tombstone's (0 for
// the empty row).
func (r *Row) Newest() int64 {
	ts := r.Deleted
	for i := range r.Cells {
		ts = max(ts, r.Cells[i].Timestamp)
	}
	return ts
}

// Find returns the cell for the column name, or nil.
func (r *Row) Find(name []byte) *Cell {
	i := sort.Search(len(r.Cells), func(i int) bool { return bytes.Compare(r.Cells[i].Name, name) >= 0 })
	if i < len(r.Cells) && bytes.Equal(r.Cells[i].Name, name) {
		return &r.Cells[i]
	}
	return nil
}

// Visible returns the live cells of r at nowMicros: no tombstones, no expired cells. The
// returned slice shares its cells' byte slices with r.
func (r *Row) Visible(nowMicros int64) []Cell {
	var out []Cell
	for i := range r.Cells {
		if r.Cells[i].Live(nowMicros) {
			out = append(out, r.Cells[i])
		}
	}
	return out
}

// Clone returns a deep copy of r that shares no memory with it.
func (r *Row) Clone() Row {
	out := Row{Deleted: r.Deleted}
	if len(r.Cells) == 0 {
		return out
	}
	size := 0
	for i := range r.Cells {
		size += len(r.Cells[i].Name) + len(r.Cells[i].Value)
	}
	buf := make([]byte, 0, size)
	out.Cells = make([]Cell, len(r.Cells))
	for i, c := range r.Cells {
		buf = append(buf, c.Name...)
		c.Name = buf[len(buf)-len(c.Name) : len(buf) : len(buf)]
		if c.Value != nil {
			buf = append(buf, c.Value...)
			c.Value = buf[len(buf)-len(c.Value) : len(buf) : len(buf)]
		}
		out.Cells[i] = c
	}
	return out
}

// Validate reports whether r keeps the Row invariants: cells sorted by unique name,
// tombstones without values or expiries, sizes within limits, non-negative timestamps.
func (r *Row) Validate() error {
	if r.Deleted < 0 {
		return fmt.Errorf("%w: negative row tombstone %d", ErrInvalid, r.Deleted)
	}
	if len(r.Cells) > MaxCells {
		return fmt.Errorf("%w: %d cells", ErrInvalid, len(r.Cells))
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if i > 0 && bytes.Compare(r.Cells[i-1].Name, c.Name) >= 0 {
			return fmt.Errorf("%w: cells not sorted by unique name at %d", ErrInvalid, i)
		}
		if len(c.Name) > MaxColumnNameSize {
			return fmt.Errorf("%w: column name of %d bytes", ErrInvalid, len(c.Name))
		}
		if len(c.Value) > MaxValueSize {
			return fmt.Errorf("%w: %d bytes", ErrValueTooLarge, len(c.Value))
		}
		if c.Timestamp < 0 || c.ExpiresAt < 0 {
			return fmt.Errorf("%w: negative timestamp in column %q", ErrInvalid, c.Name)
		}
		if c.Tombstone && (c.Value != nil || c.ExpiresAt != 0) {
			return fmt.Errorf("%w: tombstone with value or expiry in column %q", ErrInvalid, c.Name)
		}
	}
	return nil
}

// ValidateKey reports whether key is usable as a row key.
func ValidateKey(key []byte) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), MaxKeySize)
	}
	return nil
}

// Mutation is a change to one row: its cells and row tombstone are merged into whatever the
// engine already holds for Key. Applying a mutation never requires reading the row first.
type Mutation struct {
	Key []byte
	Row Row
}

// Validate checks the key and the row.
func (m *Mutation) Validate() error {
	if err := ValidateKey(m.Key); err != nil {
		return err
	}
	return m.Row.Validate()
}
