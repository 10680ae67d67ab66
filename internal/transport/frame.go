package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Version is the protocol version carried in the first byte of every frame. A frame with
// another version is rejected with ErrBadVersion and its connection closed: a peer that
// speaks another version cannot be framed correctly.
const Version = 1

// HeaderSize is the fixed size of a frame header in bytes (layout in the package doc).
const HeaderSize = 20

// Frame header offsets.
const (
	offVersion = 0
	offType    = 1
	offMethod  = 2
	offLength  = 4
	offID      = 8
	offTimeout = 16
)

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
type Frame struct {
	Type    FrameType
	Method  uint16
	ID      uint64
	Timeout time.Duration
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

// putHeader writes a frame header into h, which must be HeaderSize bytes.
func putHeader(h []byte, t FrameType, method uint16, id uint64, timeout time.Duration, payloadLen int) {
	h[offVersion] = Version
	h[offType] = byte(t)
	binary.BigEndian.PutUint16(h[offMethod:], method)
	binary.BigEndian.PutUint32(h[offLength:], uint32(payloadLen))
	binary.BigEndian.PutUint64(h[offID:], id)
	binary.BigEndian.PutUint32(h[offTimeout:], timeoutMicros(timeout))
}

// AppendFrame appends f's encoding to dst. It does not check limits: the caller checks the
// payload size against its own limit before sending.
func AppendFrame(dst []byte, f Frame) []byte {
	var h [HeaderSize]byte
	putHeader(h[:], f.Type, f.Method, f.ID, f.Timeout, len(f.Payload))
	return append(append(dst, h[:]...), f.Payload...)
}

// parseHeader decodes and checks a frame header (HeaderSize bytes). It returns the frame
// without its payload and the payload's length. On ErrFrameTooLarge the frame's header
// fields are filled in, so that a server can answer the request before closing.
func parseHeader(h []byte, maxPayloadBytes int) (Frame, int, error) {
	if h[offVersion] != Version {
		return Frame{}, 0, fmt.Errorf("%w: %d (this peer speaks %d)", ErrBadVersion, h[offVersion], Version)
	}
	f := Frame{
		Type:    FrameType(h[offType]),
		Method:  binary.BigEndian.Uint16(h[offMethod:]),
		ID:      binary.BigEndian.Uint64(h[offID:]),
		Timeout: time.Duration(binary.BigEndian.Uint32(h[offTimeout:])) * time.Microsecond,
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

// Decode decodes the frame at the start of b, a byte stream from a peer. It returns the
// frame and the number of bytes it took; n == 0 with a nil error means b holds only part of
// a frame and more bytes are needed. The payload aliases b. Decode checks the version, the
// type, and the payload length against maxPayloadBytes as soon as the header is complete,
// before the payload has arrived; on ErrFrameTooLarge the returned frame carries the
// header's type, method and ID. Decode is pure and safe for concurrent use.
func Decode(b []byte, maxPayloadBytes int) (f Frame, n int, err error) {
	if len(b) < HeaderSize {
		return Frame{}, 0, nil
	}
	f, size, err := parseHeader(b[:HeaderSize], maxPayloadBytes)
	if err != nil {
		return f, 0, err
	}
	if len(b)-HeaderSize < size {
		return Frame{}, 0, nil
	}
	f.Payload = b[HeaderSize : HeaderSize+size : HeaderSize+size]
	return f, HeaderSize + size, nil
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
