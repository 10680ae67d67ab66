package transport

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Frame versions. Version 2 adds the sender's clocks and ring epoch to the header; a peer
// reads both versions and answers a request in the version it came in. A client speaks
// version 2 only to a server that said it does (see the package doc, "Versions"): a
// server that predates it rejects a version 2 frame and closes the connection.
const (
	// Version1 is the first format: a 20-byte header.
	Version1 = 1
	// Version is the newest format, which this package writes whenever the peer reads it:
	// a 44-byte header carrying the sender's clocks and epoch.
	Version = 2
)

// Header sizes in bytes, by version (layout in the package doc).
const (
	HeaderSizeV1 = 20
	HeaderSize   = 44
)

// Frame header offsets. Version 2's header is version 1's followed by the stamps.
const (
	offVersion = 0
	offType    = 1
	offMethod  = 2
	offLength  = 4
	offID      = 8
	offTimeout = 16
	offClock   = 20
	offWall    = 28
	offEpoch   = 36
)

// headerSize returns the header size of a frame of version v, which parseHeader checked.
func headerSize(v byte) int {
	if v == Version1 {
		return HeaderSizeV1
	}
	return HeaderSize
}

// FrameType says what a frame carries.
type FrameType uint8

// Frame types. Type 4 is reserved for one-way messages (a request that wants no response);
// this version of the protocol rejects it like any other unknown type.
const (
	TypeRequest  FrameType = 1 // a call: Method, ID, Timeout and the request payload
	TypeResponse FrameType = 2 // the handler's answer to request ID
	TypeError    FrameType = 3 // the call failed: payload is a 2-byte code and a message
)

func (t FrameType) String() string {
	switch t {
	case TypeRequest:
		return "request"
	case TypeResponse:
		return "response"
	case TypeError:
		return "error"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Limits of the frame format.
const (
	// DefaultMaxPayloadBytes is the largest payload a peer accepts unless configured
	// otherwise.
	DefaultMaxPayloadBytes = 16 << 20
	// MaxPayloadLimit is the largest value MaxPayloadBytes may be configured to. The length
	// field could say 4 GiB; a single message that large belongs to streaming, not to
	// request/response.
	MaxPayloadLimit = 1 << 30
	// MaxTimeout is the largest remaining time a request header can carry (2^32-1 µs, about
	// 71 minutes). Longer deadlines are sent as MaxTimeout.
	MaxTimeout = time.Duration(math.MaxUint32) * time.Microsecond
	// errorCodeBytes is the size of the code that starts an error frame's payload.
	errorCodeBytes = 2
)

// Decoding errors. A connection that yields one is closed: the byte stream cannot be
// resynchronized.
var (
	ErrBadVersion     = errors.New("transport: unsupported protocol version")
	ErrUnknownType    = errors.New("transport: unknown frame type")
	ErrFrameTooLarge  = errors.New("transport: payload exceeds the size limit")
	ErrMalformedFrame = errors.New("transport: malformed frame")
)

// Frame is one protocol message.
//
// Timeout is the time the caller had left when it sent a request; zero means no deadline.
// It travels as whole microseconds (rounded up) so that clock skew between peers cannot
// shorten or stretch it; only requests carry one.
//
// Clock, Wall and Epoch are version 2's stamps, zero in a version 1 frame and zero when
// the sender has none to give: Clock is the sender's hybrid logical clock (microseconds)
// when it wrote the frame, at least every timestamp it had issued; Wall its physical
// clock then (microseconds since the Unix epoch); Epoch the sender's ring epoch then
// (for a request, at least the one it was planned under).
type Frame struct {
	Version uint8 // 1 or 2; AppendFrame writes Version (2) when 0
	Type    FrameType
	Method  uint16
	ID      uint64
	Timeout time.Duration
	Clock   int64
	Wall    int64
	Epoch   uint64
	Payload []byte
}

// timeoutMicros is the header encoding of a request's remaining time: 0 for none, else
// whole microseconds rounded up and capped at MaxTimeout, so a positive timeout never
// becomes "none".
func timeoutMicros(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	if d >= MaxTimeout {
		return math.MaxUint32
	}
	return uint32((d + time.Microsecond - 1) / time.Microsecond)
}

// putHeader writes the header of a frame of version v into h, which must be
// headerSize(v) bytes; version 2's stamps are left zero (putStamps writes them).
func putHeader(h []byte, v byte, t FrameType, method uint16, id uint64, timeout time.Duration, payloadLen int) {
	h[offVersion] = v
	h[offType] = byte(t)
	binary.BigEndian.PutUint16(h[offMethod:], method)
	binary.BigEndian.PutUint32(h[offLength:], uint32(payloadLen))
	binary.BigEndian.PutUint64(h[offID:], id)
	binary.BigEndian.PutUint32(h[offTimeout:], timeoutMicros(timeout))
	if v != Version1 {
		clear(h[offClock:HeaderSize])
	}
}

// putStamps writes version 2's stamps into h, a version 2 header.
func putStamps(h []byte, clock, wall int64, epoch uint64) {
	binary.BigEndian.PutUint64(h[offClock:], uint64(clock))
	binary.BigEndian.PutUint64(h[offWall:], uint64(wall))
	binary.BigEndian.PutUint64(h[offEpoch:], epoch)
}

// AppendFrame appends f's encoding, in f.Version (Version when 0), to dst. A version 1
// frame carries no stamps. It does not check limits: the caller checks the payload size
// against its own limit before sending.
func AppendFrame(dst []byte, f Frame) []byte {
	v := cmp.Or(f.Version, Version)
	var h [HeaderSize]byte
	putHeader(h[:], v, f.Type, f.Method, f.ID, f.Timeout, len(f.Payload))
	if v != Version1 {
		putStamps(h[:], f.Clock, f.Wall, f.Epoch)
	}
	return append(append(dst, h[:headerSize(v)]...), f.Payload...)
}

// checkVersion checks a frame's first byte against the versions a peer reads (1 up to
// maxVersion).
func checkVersion(v byte, maxVersion byte) error {
	if v < Version1 || v > maxVersion {
		return fmt.Errorf("%w: %d (this peer speaks %d to %d)", ErrBadVersion, v, Version1, maxVersion)
	}
	return nil
}

// parseHeader decodes and checks a frame header (headerSize of its version, which
// checkVersion accepted). It returns the frame without its payload and the payload's
// length. On ErrFrameTooLarge the frame's header fields are filled in, so that a server
// can answer the request before closing.
func parseHeader(h []byte, maxPayloadBytes int) (Frame, int, error) {
	f := Frame{
		Version: h[offVersion],
		Type:    FrameType(h[offType]),
		Method:  binary.BigEndian.Uint16(h[offMethod:]),
		ID:      binary.BigEndian.Uint64(h[offID:]),
		Timeout: time.Duration(binary.BigEndian.Uint32(h[offTimeout:])) * time.Microsecond,
	}
	if f.Version != Version1 {
		f.Clock = int64(binary.BigEndian.Uint64(h[offClock:]))
		f.Wall = int64(binary.BigEndian.Uint64(h[offWall:]))
		f.Epoch = binary.BigEndian.Uint64(h[offEpoch:])
	}
	n := binary.BigEndian.Uint32(h[offLength:])
	switch f.Type {
	case TypeRequest, TypeResponse:
	case TypeError:
		if n < errorCodeBytes {
			return Frame{}, 0, fmt.Errorf("%w: error frame with a %d-byte payload has no code", ErrMalformedFrame, n)
		}
	default:
		return Frame{}, 0, fmt.Errorf("%w: %d", ErrUnknownType, h[offType])
	}
	if f.Type != TypeRequest && f.Timeout != 0 {
		return Frame{}, 0, fmt.Errorf("%w: %s frame carries a timeout", ErrMalformedFrame, f.Type)
	}
	if uint64(n) > uint64(maxPayloadBytes) {
		return f, 0, fmt.Errorf("%w: %s of %d bytes, limit %d", ErrFrameTooLarge, f.Type, n, maxPayloadBytes)
	}
	return f, int(n), nil
}

// Decode decodes the frame at the start of b, a byte stream from a peer, in either
// version. It returns the frame and the number of bytes it took; n == 0 with a nil error
// means b holds only part of a frame and more bytes are needed. The payload aliases b.
// Decode checks the version as soon as b has a byte, then the type and the payload length
// against maxPayloadBytes as soon as the header is complete, before the payload has
// arrived; on ErrFrameTooLarge the returned frame carries the header's type, method and
// ID. Decode is pure and safe for concurrent use.
func Decode(b []byte, maxPayloadBytes int) (f Frame, n int, err error) {
	return decode(b, maxPayloadBytes, Version)
}

// decode is Decode for a peer that reads versions up to maxVersion.
func decode(b []byte, maxPayloadBytes int, maxVersion byte) (f Frame, n int, err error) {
	if len(b) == 0 {
		return Frame{}, 0, nil
	}
	if err := checkVersion(b[offVersion], maxVersion); err != nil {
		return Frame{}, 0, err
	}
	hs := headerSize(b[offVersion])
	if len(b) < hs {
		return Frame{}, 0, nil
	}
	f, size, err := parseHeader(b[:hs], maxPayloadBytes)
	if err != nil {
		return f, 0, err
	}
	if len(b)-hs < size {
		return Frame{}, 0, nil
	}
	f.Payload = b[hs : hs+size : hs+size]
	return f, hs + size, nil
}

// errorPayload is an error frame's payload: the code, then the message.
func errorPayload(code uint16, msg string) []byte {
	p := make([]byte, errorCodeBytes+len(msg))
	binary.BigEndian.PutUint16(p, code)
	copy(p[errorCodeBytes:], msg)
	return p
}

// parseErrorPayload is the inverse of errorPayload; the decoder has checked the length.
func parseErrorPayload(p []byte) *RemoteError {
	return &RemoteError{Code: binary.BigEndian.Uint16(p), Message: string(p[errorCodeBytes:])}
}
