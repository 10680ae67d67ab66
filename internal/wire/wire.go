// Package wire defines the messages kura nodes send each other and their binary codec:
// writes (client writes, hint replays and read repairs are all row mutations), reads, and
// digest reads. The transport moves them as opaque payloads under a method number.
//
// Every payload starts with a version byte. Rows use the row codec (package row), so a
// replica stores exactly the bytes the coordinator merged. Decoding never panics, checks
// every length against what is left and against the named limits, and returns ErrCorrupt
// for anything else; decoded keys and rows alias the payload.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/row"
)

// Method numbers, the transport's dispatch key.
const (
	MethodWrite uint16 = 1 // WriteRequest -> empty response
	MethodRead  uint16 = 2 // ReadRequest -> ReadResponse
	MethodScan  uint16 = 3 // ScanRequest -> ScanResponse
)

// Version is the format of every payload this code writes.
const Version byte = 1

// MaxMutations is the most mutations one WriteRequest may carry.
const MaxMutations = 4096

// Errors returned by the decoders.
var (
	ErrCorrupt = errors.New("wire: malformed message")
	ErrVersion = errors.New("wire: unknown message version")
)

// WriteRequest asks a replica to apply mutations (merge them into what it stores).
type WriteRequest struct {
	Mutations []row.Mutation
}

// ReadRequest asks a replica for a key's row, or only for its digest.
type ReadRequest struct {
	Key    []byte
	Digest bool
}

// ReadResponse is a replica's answer: the row (with Found) or its digest.
type ReadResponse struct {
	Found  bool
	Row    row.Row
	Digest uint64
}

// AppendWriteRequest appends m's encoding to dst.
func AppendWriteRequest(dst []byte, m *WriteRequest) []byte {
	return appendMutations(append(dst, Version), m.Mutations)
}

// DecodeWriteRequest parses a WriteRequest; keys and rows alias b.
func DecodeWriteRequest(b []byte) (WriteRequest, error) {
	d, err := newDecoder(b)
	if err != nil {
		return WriteRequest{}, err
	}
	ms, err := d.mutations()
	if err != nil {
		return WriteRequest{}, err
	}
	return WriteRequest{Mutations: ms}, d.end()
}

// mutations reads a count and that many keys and rows (AppendWriteRequest's body).
func (d *decoder) mutations() ([]row.Mutation, error) {
	n, err := d.count(MaxMutations)
	if err != nil {
		return nil, err
	}
	ms := make([]row.Mutation, 0, n)
	for range n {
		key, err := d.bytes(row.MaxKeySize)
		if err != nil {
			return nil, err
		}
		enc, err := d.bytes(len(d.buf))
		if err != nil {
			return nil, err
		}
		r, err := row.Decode(enc)
		if err != nil {
			return nil, fmt.Errorf("%w: row of %q: %w", ErrCorrupt, key, err)
		}
		ms = append(ms, row.Mutation{Key: key, Row: r})
	}
	return ms, nil
}

// AppendReadRequest appends m's encoding to dst.
func AppendReadRequest(dst []byte, m *ReadRequest) []byte {
	flags := byte(0)
	if m.Digest {
		flags = 1
	}
	dst = append(dst, Version, flags)
	dst = binary.AppendUvarint(dst, uint64(len(m.Key)))
	return append(dst, m.Key...)
}

// DecodeReadRequest parses a ReadRequest; Key aliases b.
func DecodeReadRequest(b []byte) (ReadRequest, error) {
	d, err := newDecoder(b)
	if err != nil {
		return ReadRequest{}, err
	}
	flags, err := d.byte()
	if err != nil || flags > 1 {
		return ReadRequest{}, fmt.Errorf("%w: read flags", ErrCorrupt)
	}
	key, err := d.bytes(row.MaxKeySize)
	if err != nil {
		return ReadRequest{}, err
	}
	return ReadRequest{Key: key, Digest: flags == 1}, d.end()
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// Response kinds in a ReadResponse's encoding.
const (
	respNotFound byte = 0
	respRow      byte = 1
	respDigest   byte = 2
)

// AppendReadResponse appends m's encoding to dst. A digest response carries only the
// digest; otherwise the row, when found.
func AppendReadResponse(dst []byte, m *ReadResponse, digest bool) []byte {
	dst = append(dst, Version)
	switch {
	case digest:
		dst = append(dst, respDigest)
		return binary.BigEndian.AppendUint64(dst, m.Digest)
	case !m.Found:
		return append(dst, respNotFound)
	}
	dst = append(dst, respRow)
	return row.AppendEncode(dst, &m.Row)
}

// DecodeReadResponse parses a ReadResponse; the row aliases b.
func DecodeReadResponse(b []byte) (ReadResponse, error) {
	d, err := newDecoder(b)
	if err != nil {
		return ReadResponse{}, err
	}
	kind, err := d.byte()
	if err != nil {
		return ReadResponse{}, err
	}
	switch kind {
	case respNotFound:
		return ReadResponse{}, d.end()
	case respDigest:
		if len(d.buf) != 8 {
			return ReadResponse{}, fmt.Errorf("%w: digest of %d bytes", ErrCorrupt, len(d.buf))
		}
		return ReadResponse{Digest: binary.BigEndian.Uint64(d.buf)}, nil
	case respRow:
		r, err := row.Decode(d.buf)
		if err != nil {
			return ReadResponse{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return ReadResponse{Found: true, Row: r}, nil
	}
	return ReadResponse{}, fmt.Errorf("%w: response kind %d", ErrCorrupt, kind)
}

// decoder reads a payload front to back.
type decoder struct{ buf []byte }

func newDecoder(b []byte) (*decoder, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != Version {
		return nil, fmt.Errorf("%w %d (this node speaks %d)", ErrVersion, b[0], Version)
	}
	return &decoder{buf: b[1:]}, nil
}

func (d *decoder) byte() (byte, error) {
	if len(d.buf) == 0 {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b, nil
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad length", ErrCorrupt)
	}
	d.buf = d.buf[n:]
	return v, nil
}

func (d *decoder) count(limit int) (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64(limit) {
		return 0, fmt.Errorf("%w: %d items (limit %d)", ErrCorrupt, v, limit)
	}
	return int(v), nil
}

// bytes reads a length-prefixed byte string of at most limit bytes.
func (d *decoder) bytes(limit int) ([]byte, error) {
	n, err := d.count(limit)
	if err != nil {
		return nil, err
	}
	if n > len(d.buf) {
		return nil, fmt.Errorf("%w: %d bytes announced, %d left", ErrCorrupt, n, len(d.buf))
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b, nil
}

func (d *decoder) end() error {
	if len(d.buf) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.buf))
	}
	return nil
}
