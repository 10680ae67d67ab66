package row

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Version1 is the first (and current) row encoding. The first byte of every encoded row is
// its version so that a later format can be introduced while old data stays readable.
//
// Layout of version 1, all integers unsigned varints unless noted:
//
//	version   byte (1)
//	flags     byte: bit 0 = row tombstone present
//	deleted   row tombstone timestamp (only when flag bit 0)
//	count     number of cells
//	base      smallest cell timestamp (only when count > 0)
//	cells     count times:
//	  nameLen, name
//	  cflags  byte: bit 0 = tombstone, bit 1 = expiry present
//	  tsDelta timestamp - base
//	  expiry  zigzag(ExpiresAt - Timestamp) (only when cflags bit 1)
//	  valLen, value (only for live cells)
//
// Timestamps are stored as deltas from the row's smallest one because the cells of one
// write share a timestamp: a 10-column row pays for its timestamp once.
const Version1 byte = 1

const (
	rowFlagDeleted   = 1 << 0
	cellFlagTomb     = 1 << 0
	cellFlagExpiry   = 1 << 1
	minEncodedCell   = 3 // a tombstone with an empty name: nameLen, cflags, tsDelta
	knownCellFlags   = cellFlagTomb | cellFlagExpiry
	knownRowFlags    = rowFlagDeleted
	maxVarintLen64   = binary.MaxVarintLen64
	encodeHeaderSize = 2 + 3*maxVarintLen64
)

// EncodedSize returns an upper bound of len(Encode(r)).
func EncodedSize(r *Row) int {
	n := encodeHeaderSize
	for i := range r.Cells {
		n += 1 + 4*maxVarintLen64 + len(r.Cells[i].Name) + len(r.Cells[i].Value)
	}
	return n
}

// Encode returns the encoding of r. r must be valid (see Row.Validate).
func Encode(r *Row) []byte { return AppendEncode(make([]byte, 0, EncodedSize(r)), r) }

// AppendEncode appends the encoding of r to dst and returns the extended slice.
func AppendEncode(dst []byte, r *Row) []byte {
	dst = append(dst, Version1)
	var flags byte
	if r.Deleted != 0 {
		flags |= rowFlagDeleted
	}
	dst = append(dst, flags)
	if r.Deleted != 0 {
		dst = binary.AppendUvarint(dst, uint64(r.Deleted))
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Cells)))
	base := int64(math.MaxInt64)
	for i := range r.Cells {
		base = min(base, r.Cells[i].Timestamp)
	}
	if len(r.Cells) > 0 {
		dst = binary.AppendUvarint(dst, uint64(base))
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		dst = binary.AppendUvarint(dst, uint64(len(c.Name)))
		dst = append(dst, c.Name...)
		var cf byte
		if c.Tombstone {
			cf |= cellFlagTomb
		}
		if c.ExpiresAt != 0 {
			cf |= cellFlagExpiry
		}
		dst = append(dst, cf)
		dst = binary.AppendUvarint(dst, uint64(c.Timestamp-base))
		if c.ExpiresAt != 0 {
			dst = binary.AppendVarint(dst, c.ExpiresAt-c.Timestamp)
		}
		if !c.Tombstone {
			dst = binary.AppendUvarint(dst, uint64(len(c.Value)))
			dst = append(dst, c.Value...)
		}
	}
	return dst
}

// Decode parses an encoded row. The returned cells' Name and Value alias data: the caller
// must not modify data while it uses the row, or must Clone it. Decode never panics on any
// input and returns ErrCorrupt (or ErrVersion) for bytes that are not a valid row.
func Decode(data []byte) (Row, error) {
	d := decoder{buf: data}
	r, err := d.row()
	if err != nil {
		return Row{}, err
	}
	if len(d.buf) != 0 {
		return Row{}, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.buf))
	}
	return r, nil
}

type decoder struct{ buf []byte }

func (d *decoder) byte() (byte, error) {
	if len(d.buf) == 0 {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b, nil
}

func (d *decoder) uvarint(limit uint64) (uint64, error) {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
	}
	if v > limit {
		return 0, fmt.Errorf("%w: value %d over limit %d", ErrCorrupt, v, limit)
	}
	d.buf = d.buf[n:]
	return v, nil
}

func (d *decoder) bytes(limit uint64) ([]byte, error) {
	n, err := d.uvarint(limit)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.buf)) {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b, nil
}

func (d *decoder) row() (Row, error) {
	var r Row
	v, err := d.byte()
	if err != nil {
		return r, err
	}
	if v != Version1 {
		return r, fmt.Errorf("%w: %d", ErrVersion, v)
	}
	flags, err := d.byte()
	if err != nil {
		return r, err
	}
	if flags&^knownRowFlags != 0 {
		return r, fmt.Errorf("%w: unknown row flags %#x", ErrCorrupt, flags)
	}
	if flags&rowFlagDeleted != 0 {
		del, err := d.uvarint(math.MaxInt64)
		if err != nil {
			return r, err
		}
		if del == 0 {
			return r, fmt.Errorf("%w: zero row tombstone", ErrCorrupt)
		}
		r.Deleted = int64(del)
	}
	n, err := d.uvarint(MaxCells)
	if err != nil || n == 0 {
		return r, err
	}
	base, err := d.uvarint(math.MaxInt64)
	if err != nil {
		return r, err
	}
	return r, d.cells(&r, int64(base), int(n))
}

func (d *decoder) cells(r *Row, base int64, n int) error {
	if n > len(d.buf)/minEncodedCell+1 {
		return fmt.Errorf("%w: %d cells cannot fit in %d bytes", ErrCorrupt, n, len(d.buf))
	}
	r.Cells = make([]Cell, n)
	for i := range r.Cells {
		c := &r.Cells[i]
		var err error
		if c.Name, err = d.bytes(MaxColumnNameSize); err != nil {
			return err
		}
		cf, err := d.byte()
		if err != nil {
			return err
		}
		if cf&^knownCellFlags != 0 || cf == cellFlagTomb|cellFlagExpiry {
			return fmt.Errorf("%w: bad cell flags %#x", ErrCorrupt, cf)
		}
		delta, err := d.uvarint(uint64(math.MaxInt64 - base))
		if err != nil {
			return err
		}
		c.Timestamp = base + int64(delta)
		if cf&cellFlagExpiry != 0 {
			e, k := binary.Varint(d.buf)
			if k <= 0 {
				return fmt.Errorf("%w: bad expiry", ErrCorrupt)
			}
			d.buf = d.buf[k:]
			exp := c.Timestamp + e
			if (e > 0 && exp < c.Timestamp) || exp <= 0 {
				return fmt.Errorf("%w: bad expiry", ErrCorrupt)
			}
			c.ExpiresAt = exp
		}
		c.Tombstone = cf&cellFlagTomb != 0
		if !c.Tombstone {
			if c.Value, err = d.bytes(MaxValueSize); err != nil {
				return err
			}
		}
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}
