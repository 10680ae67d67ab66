package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/kuradb/kura/internal/row"
)

// MethodScan's messages (ScanRequest -> ScanResponse) come in two versions, and a node
// reads both, so that a cluster is upgraded one node at a time:
//
//   - Version 1 (Version, the shared first version): the request is the bounds and the
//     page's limits; the response is the rows and the key to go on from.
//   - Version 2 (ScanVersion): the request starts with a flags byte (scanStream: the scan
//     is a membership change's stream, which the source paces by its send limit); the
//     response ends with a CRC-32C (Castagnoli) of every byte before it, version byte
//     included, which DecodeScanResponse verifies (ErrChecksum).
//
// A replica answers in the version it was asked in (AppendScanResponseVersion with the
// request's Version), so a node that predates version 2 gets the version 1 page it
// expects. A node that predates version 2 answers a version 2 request with ErrVersion's
// text ("wire: unknown message version 2 ..."); the asker then asks again in version 1,
// whose pages carry no checksum and are not paced (package stream does this).
//
// MethodScanRead's request (scanread.go) has its own version byte and its response is a
// version 1 ScanResponse: coordinators of every version read it.

// ScanVersion is the newest format of MethodScan's request and response.
const ScanVersion byte = 2

// ErrChecksum is DecodeScanResponse's error for a version 2 page whose bytes do not match
// their checksum: it was damaged between the source's encoder and here, and should be
// asked again.
var ErrChecksum = errors.New("wire: scan page checksum mismatch")

// Bounds of one ScanResponse page.
const (
	MaxScanRows  = MaxMutations
	MaxScanBytes = 8 << 20
)

// scanStream is the request flag of a stream's scan (ScanRequest.Stream).
const scanStream byte = 1 << 0

// scanChecksumLen is the size of a version 2 response's checksum.
const scanChecksumLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ScanRequest asks a replica for one page of the rows it stores with Lo <= engine key < Hi
// (ring.EngineKey: a token range of the ring is one such range). A nil Hi means to the
// end. The page holds at most Rows rows and stops after the row that takes it past Bytes
// bytes of row encodings (at least one row, whatever its size).
type ScanRequest struct {
	Lo, Hi []byte
	Rows   int
	Bytes  int
	// Stream marks a membership change's stream: the source paces its pages by its send
	// limit (replica.Handler.StreamPacer). Version 2 only; a version 1 request drops it.
	Stream bool
	// Version is the format the request is written in, and the one its response must be
	// written in: 0 writes ScanVersion; DecodeScanRequest sets it to what it read.
	Version byte
}

// ScanResponse is one page: rows as Get returns them (tombstones included), keys as
// clients give them, and Next, the engine key to ask from for the next page, or nil when
// the range is done.
type ScanResponse struct {
	Rows []row.Mutation
	Next []byte
	// Checksummed is set by DecodeScanResponse when the page carried a checksum (version
	// 2) and it matched. It is not encoded.
	Checksummed bool
}

// AppendScanRequest appends m's encoding, in m.Version (0: ScanVersion), to dst.
func AppendScanRequest(dst []byte, m *ScanRequest) []byte {
	if m.Version == Version {
		return appendScanBody(append(dst, Version), m)
	}
	var flags byte
	if m.Stream {
		flags |= scanStream
	}
	return appendScanBody(append(dst, ScanVersion, flags), m)
}

// appendScanBody appends a ScanRequest's fields (of MethodScan's and MethodScanRead's
// requests, after their version bytes and flags).
func appendScanBody(dst []byte, m *ScanRequest) []byte {
	dst = appendBytes(dst, m.Lo)
	if m.Hi == nil {
		dst = append(dst, 0)
	} else {
		dst = appendBytes(append(dst, 1), m.Hi)
	}
	dst = binary.AppendUvarint(dst, uint64(m.Rows))
	return binary.AppendUvarint(dst, uint64(m.Bytes))
}

// DecodeScanRequest parses a ScanRequest of version 1 or 2; Lo and Hi alias b. Rows and
// Bytes are capped at MaxScanRows and MaxScanBytes, and raised to 1.
func DecodeScanRequest(b []byte) (ScanRequest, error) {
	if len(b) == 0 {
		return ScanRequest{}, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	d := &decoder{buf: b[1:]}
	switch b[0] {
	case Version:
		m, err := d.scanRequest()
		m.Version = Version
		return m, err
	case ScanVersion:
		flags, err := d.byte()
		if err != nil {
			return ScanRequest{}, err
		}
		if flags&^scanStream != 0 {
			return ScanRequest{}, fmt.Errorf("%w: scan flags %#x", ErrCorrupt, flags)
		}
		m, err := d.scanRequest()
		m.Version, m.Stream = ScanVersion, flags&scanStream != 0
		return m, err
	}
	return ScanRequest{}, fmt.Errorf("%w %d of a scan (this node speaks %d and %d)", ErrVersion, b[0], Version, ScanVersion)
}

// scanRequest reads a ScanRequest's fields (appendScanBody's) to the end of the payload.
func (d *decoder) scanRequest() (ScanRequest, error) {
	var m ScanRequest
	var err error
	if m.Lo, err = d.bytes(maxEngineKey); err != nil {
		return ScanRequest{}, err
	}
	hasHi, err := d.byte()
	switch {
	case err != nil:
		return ScanRequest{}, err
	case hasHi > 1:
		return ScanRequest{}, fmt.Errorf("%w: scan bound flag %d", ErrCorrupt, hasHi)
	case hasHi == 1:
		if m.Hi, err = d.bytes(maxEngineKey); err != nil {
			return ScanRequest{}, err
		}
	}
	rows, err := d.uvarint()
	if err != nil {
		return ScanRequest{}, err
	}
	size, err := d.uvarint()
	if err != nil {
		return ScanRequest{}, err
	}
	m.Rows, m.Bytes = int(max(min(rows, MaxScanRows), 1)), int(max(min(size, MaxScanBytes), 1))
	return m, d.end()
}

// maxEngineKey bounds a scan bound: a token prefix and a key.
const maxEngineKey = 8 + row.MaxKeySize

// AppendScanResponse appends m's encoding in version 1 to dst: the answer of
// MethodScanRead, and of a MethodScan request of version 1.
func AppendScanResponse(dst []byte, m *ScanResponse) []byte {
	return AppendScanResponseVersion(dst, m, Version)
}

// AppendScanResponseVersion appends m's encoding in version v (Version or ScanVersion;
// a request's Version, 0 included, names one) to dst.
func AppendScanResponseVersion(dst []byte, m *ScanResponse, v byte) []byte {
	start := len(dst)
	if v != Version {
		v = ScanVersion
	}
	// The rows are a WriteRequest's body; its version byte becomes the page's.
	dst = append(AppendWriteRequest(dst, &WriteRequest{Mutations: m.Rows}), 0)
	dst[start] = v
	if m.Next != nil {
		dst[len(dst)-1] = 1
		dst = appendBytes(dst, m.Next)
	}
	if v == ScanVersion {
		dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	}
	return dst
}

// DecodeScanResponse parses a ScanResponse of version 1 or 2; keys, rows and Next alias
// b. A version 2 page is checked against its checksum first (ErrChecksum).
func DecodeScanResponse(b []byte) (ScanResponse, error) {
	if len(b) == 0 {
		return ScanResponse{}, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	checked := false
	switch b[0] {
	case Version:
	case ScanVersion:
		if len(b) < 1+scanChecksumLen {
			return ScanResponse{}, fmt.Errorf("%w: scan page of %d bytes", ErrCorrupt, len(b))
		}
		body := len(b) - scanChecksumLen
		if got, want := crc32.Checksum(b[:body], castagnoli), binary.BigEndian.Uint32(b[body:]); got != want {
			return ScanResponse{}, fmt.Errorf("%w: %08x, the page says %08x", ErrChecksum, got, want)
		}
		b, checked = b[:body], true
	default:
		return ScanResponse{}, fmt.Errorf("%w %d of a scan page (this node speaks %d and %d)", ErrVersion, b[0], Version, ScanVersion)
	}
	d := &decoder{buf: b[1:]}
	rows, err := d.mutations()
	if err != nil {
		return ScanResponse{}, err
	}
	m := ScanResponse{Rows: rows, Checksummed: checked}
	more, err := d.byte()
	switch {
	case err != nil:
		return ScanResponse{}, err
	case more > 1:
		return ScanResponse{}, fmt.Errorf("%w: scan continuation flag %d", ErrCorrupt, more)
	case more == 1:
		if m.Next, err = d.bytes(maxEngineKey); err != nil {
			return ScanResponse{}, err
		}
	}
	return m, d.end()
}
