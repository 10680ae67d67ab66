package wire

import (
	"encoding/binary"
	"fmt"
)

// MethodFlush carries FLUSHALL between nodes (FlushRequest -> FlushResponse), in two
// phases. A prepare asks a node for a fresh timestamp of its clock. The coordinator then
// takes the largest of them, T, which is larger than every timestamp any node issued
// before answering, and asks every node to flush as of T: to make its clock issue only
// timestamps above T from then on, and to write a row tombstone at T on every row it
// stores (see engine.DeleteAll). A node that predates the method answers with an unknown
// method error, which the coordinator reports.
const MethodFlush uint16 = 5

// FlushVersion is the format of FlushRequest and FlushResponse, which carry their own
// version byte (the other messages' Version is not theirs).
const FlushVersion byte = 1

// FlushRequest is a prepare (Prepare set, Timestamp unused) or a flush as of Timestamp.
type FlushRequest struct {
	Prepare   bool
	Timestamp int64
}

// FlushResponse answers a prepare with Clock, a fresh timestamp of the node's clock, and a
// flush with Rows, the rows the node tombstoned.
type FlushResponse struct {
	Clock int64
	Rows  int64
}

const flushPrepare byte = 1

// AppendFlushRequest appends m's encoding to dst.
func AppendFlushRequest(dst []byte, m *FlushRequest) []byte {
	var flags byte
	if m.Prepare {
		flags = flushPrepare
	}
	return binary.BigEndian.AppendUint64(append(dst, FlushVersion, flags), uint64(m.Timestamp))
}

// DecodeFlushRequest parses a FlushRequest.
func DecodeFlushRequest(b []byte) (FlushRequest, error) {
	if err := checkFlush(b, 10); err != nil {
		return FlushRequest{}, err
	}
	if b[1] > flushPrepare {
		return FlushRequest{}, fmt.Errorf("%w: flush flags %d", ErrCorrupt, b[1])
	}
	return FlushRequest{Prepare: b[1] == flushPrepare, Timestamp: int64(binary.BigEndian.Uint64(b[2:]))}, nil
}

// AppendFlushResponse appends m's encoding to dst.
func AppendFlushResponse(dst []byte, m *FlushResponse) []byte {
	dst = binary.BigEndian.AppendUint64(append(dst, FlushVersion), uint64(m.Clock))
	return binary.BigEndian.AppendUint64(dst, uint64(m.Rows))
}

// DecodeFlushResponse parses a FlushResponse.
func DecodeFlushResponse(b []byte) (FlushResponse, error) {
	if err := checkFlush(b, 17); err != nil {
		return FlushResponse{}, err
	}
	m := FlushResponse{Clock: int64(binary.BigEndian.Uint64(b[1:])), Rows: int64(binary.BigEndian.Uint64(b[9:]))}
	if m.Rows < 0 {
		return FlushResponse{}, fmt.Errorf("%w: flushed %d rows", ErrCorrupt, m.Rows)
	}
	return m, nil
}

// checkFlush checks a flush message's version and its size, which is fixed.
func checkFlush(b []byte, size int) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("%w: empty", ErrCorrupt)
	case b[0] != FlushVersion:
		return fmt.Errorf("%w %d of a flush message (this node speaks %d)", ErrVersion, b[0], FlushVersion)
	case len(b) != size:
		return fmt.Errorf("%w: flush message of %d bytes, want %d", ErrCorrupt, len(b), size)
	}
	return nil
}
