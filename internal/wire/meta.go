package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// MethodMeta carries the cluster-metadata log's requests between nodes (MetaRequest ->
// MetaResponse; package metalog): a proposal forwarded to the log's leader, or a fetch of
// the metadata state from a node that may know a newer one. A node that predates it
// answers with an unknown method error.
const MethodMeta uint16 = 7

// MetaVersion is the format of MetaRequest and MetaResponse, which carry their own version
// byte (the other messages' Version is not theirs).
const MetaVersion byte = 1

// Bounds of the metadata messages.
const (
	// MaxMetaBytes bounds an entry or a state in a metadata message: the transport's
	// default payload limit, far above a state of thousands of members with their tokens.
	MaxMetaBytes = 16 << 20
	// MaxMetaCodes bounds the error codes of a MetaError.
	MaxMetaCodes = 32
	// MaxMetaMessage bounds a MetaError's message.
	MaxMetaMessage = 4 << 10
	// maxMetaName bounds a node ID or an address.
	maxMetaName = 1 << 10
)

// MetaOp says what a MetaRequest asks.
type MetaOp uint8

// Metadata requests. Never renumber.
const (
	// MetaPropose asks the log's leader to append Entry (an encoded metadata entry) and
	// answer with the state it led to, or why the entry was refused.
	MetaPropose MetaOp = 1
	// MetaFetch asks for the node's metadata state if it is newer than the position
	// (SinceEpoch, SinceIndex): a larger epoch, or the same epoch at a larger log index.
	MetaFetch MetaOp = 2
)

// MetaRequest is a proposal or a fetch.
type MetaRequest struct {
	Op MetaOp
	// Entry is a proposal's entry, as the metadata log stores it.
	Entry []byte
	// SinceEpoch and SinceIndex are a fetch's position: the asker's own.
	SinceEpoch, SinceIndex uint64
}

// MetaResponse answers a MetaRequest.
type MetaResponse struct {
	// State is an encoded metadata state at the position (Epoch, Index): the state a
	// proposal led to, or a fetch's newer state. Nil when a fetch found nothing newer (then
	// Epoch and Index are the responder's position) and when Err is set.
	State        []byte
	Epoch, Index uint64
	// LeaderID and LeaderAddr are the log's leader as the responder knows it, empty when
	// it does not; a proposal sent to a node that is not the leader is answered with them
	// and an error.
	LeaderID, LeaderAddr string
	// Err says why a proposal was not applied; nil otherwise.
	Err *MetaError
}

// MetaError is a failed proposal: Codes name the errors it is (package metalog numbers
// them, so that the proposer's caller can test for the one it needs), Message is its text.
type MetaError struct {
	Codes   []uint16
	Message string
}

const (
	metaHasState byte = 1 << 0
	metaHasErr   byte = 1 << 1
)

// AppendMetaRequest appends m's encoding to dst.
func AppendMetaRequest(dst []byte, m *MetaRequest) []byte {
	dst = append(dst, MetaVersion, byte(m.Op))
	if m.Op == MetaPropose {
		return appendBytes(dst, m.Entry)
	}
	dst = binary.AppendUvarint(dst, m.SinceEpoch)
	return binary.AppendUvarint(dst, m.SinceIndex)
}

// DecodeMetaRequest parses a MetaRequest; Entry aliases b.
func DecodeMetaRequest(b []byte) (MetaRequest, error) {
	d, err := newMetaDecoder(b)
	if err != nil {
		return MetaRequest{}, err
	}
	op, err := d.byte()
	if err != nil {
		return MetaRequest{}, err
	}
	m := MetaRequest{Op: MetaOp(op)}
	switch m.Op {
	case MetaPropose:
		if m.Entry, err = d.bytes(MaxMetaBytes); err != nil {
			return MetaRequest{}, err
		}
	case MetaFetch:
		if m.SinceEpoch, err = d.uvarint(); err != nil {
			return MetaRequest{}, err
		}
		if m.SinceIndex, err = d.uvarint(); err != nil {
			return MetaRequest{}, err
		}
	default:
		return MetaRequest{}, fmt.Errorf("%w: metadata request %d", ErrCorrupt, op)
	}
	return m, d.end()
}

// AppendMetaResponse appends m's encoding to dst. An error's codes past MaxMetaCodes and
// its message past MaxMetaMessage bytes are left out.
func AppendMetaResponse(dst []byte, m *MetaResponse) []byte {
	var flags byte
	if m.State != nil {
		flags |= metaHasState
	}
	if m.Err != nil {
		flags |= metaHasErr
	}
	dst = append(dst, MetaVersion, flags)
	dst = binary.AppendUvarint(dst, m.Epoch)
	dst = binary.AppendUvarint(dst, m.Index)
	dst = appendBytes(dst, []byte(m.LeaderID))
	dst = appendBytes(dst, []byte(m.LeaderAddr))
	if m.State != nil {
		dst = appendBytes(dst, m.State)
	}
	if m.Err != nil {
		codes := m.Err.Codes[:min(len(m.Err.Codes), MaxMetaCodes)]
		dst = binary.AppendUvarint(dst, uint64(len(codes)))
		for _, c := range codes {
			dst = binary.AppendUvarint(dst, uint64(c))
		}
		dst = appendBytes(dst, []byte(truncate(m.Err.Message, MaxMetaMessage)))
	}
	return dst
}

// truncate cuts s to at most n bytes, at a UTF-8 character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// DecodeMetaResponse parses a MetaResponse; State aliases b.
func DecodeMetaResponse(b []byte) (MetaResponse, error) {
	d, err := newMetaDecoder(b)
	if err != nil {
		return MetaResponse{}, err
	}
	flags, err := d.byte()
	if err != nil {
		return MetaResponse{}, err
	}
	if flags&^(metaHasState|metaHasErr) != 0 {
		return MetaResponse{}, fmt.Errorf("%w: metadata response flags %#x", ErrCorrupt, flags)
	}
	var m MetaResponse
	if m.Epoch, err = d.uvarint(); err != nil {
		return MetaResponse{}, err
	}
	if m.Index, err = d.uvarint(); err != nil {
		return MetaResponse{}, err
	}
	if m.LeaderID, err = d.string(maxMetaName); err != nil {
		return MetaResponse{}, err
	}
	if m.LeaderAddr, err = d.string(maxMetaName); err != nil {
		return MetaResponse{}, err
	}
	if flags&metaHasState != 0 {
		if m.State, err = d.bytes(MaxMetaBytes); err != nil {
			return MetaResponse{}, err
		}
	}
	if flags&metaHasErr != 0 {
		if m.Err, err = d.metaError(); err != nil {
			return MetaResponse{}, err
		}
	}
	return m, d.end()
}

func (d *decoder) metaError() (*MetaError, error) {
	n, err := d.count(MaxMetaCodes)
	if err != nil {
		return nil, err
	}
	e := &MetaError{}
	for range n {
		c, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		if c > math.MaxUint16 {
			return nil, fmt.Errorf("%w: error code %d", ErrCorrupt, c)
		}
		e.Codes = append(e.Codes, uint16(c))
	}
	if e.Message, err = d.string(MaxMetaMessage); err != nil {
		return nil, err
	}
	return e, nil
}

func (d *decoder) string(limit int) (string, error) {
	b, err := d.bytes(limit)
	return string(b), err
}

func newMetaDecoder(b []byte) (*decoder, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != MetaVersion {
		return nil, fmt.Errorf("%w %d of a metadata message (this node speaks %d)", ErrVersion, b[0], MetaVersion)
	}
	return &decoder{buf: b[1:]}, nil
}
