package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed for randomized tests: KURA_SEED when set, else a fresh one. The
// seed is logged so any failure can be replayed.
func testSeed(t testing.TB) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with KURA_SEED=%d)", seed, seed)
	return seed
}

// randomFrame returns a valid frame of either version: the types the protocol knows, a
// timeout only on requests and in whole microseconds, an error payload with a code, stamps
// (any 64 bits) only in version 2.
func randomFrame(rng *rand.Rand, maxPayload int) Frame {
	f := Frame{
		Version: byte(Version1 + rng.IntN(Version)),
		Type:    []FrameType{TypeRequest, TypeResponse, TypeError}[rng.IntN(3)],
		Method:  uint16(rng.Uint32()),
		ID:      rng.Uint64(),
	}
	if f.Version != Version1 {
		f.Clock, f.Wall, f.Epoch = int64(rng.Uint64()), int64(rng.Uint64()), rng.Uint64()
	}
	if f.Type == TypeRequest && rng.IntN(2) == 0 {
		f.Timeout = time.Duration(1+rng.Int64N(int64(MaxTimeout/time.Microsecond))) * time.Microsecond
	}
	n := rng.IntN(maxPayload + 1)
	if rng.IntN(4) == 0 {
		n = rng.IntN(8)
	}
	if f.Type == TypeError {
		n = max(n, errorCodeBytes)
	}
	f.Payload = make([]byte, n)
	for i := range f.Payload {
		f.Payload[i] = byte(rng.Uint32())
	}
	return f
}

func sameFrame(a, b Frame) bool {
	return a.Version == b.Version && a.Type == b.Type && a.Method == b.Method && a.ID == b.ID &&
		a.Timeout == b.Timeout && a.Clock == b.Clock && a.Wall == b.Wall && a.Epoch == b.Epoch &&
		bytes.Equal(a.Payload, b.Payload)
}

// TestFramesRoundTrip encodes random frames back to back and decodes them with both
// decoders, fed whole and one byte at a time.
func TestFramesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	const maxPayload = 300
	for round := range 200 {
		var want []Frame
		var stream []byte
		for range 1 + rng.IntN(10) {
			f := randomFrame(rng, maxPayload)
			want = append(want, f)
			stream = AppendFrame(stream, f)
		}
		rest := stream
		for i, w := range want {
			got, n, err := Decode(rest, maxPayload)
			if err != nil || n != headerSize(w.Version)+len(w.Payload) || !sameFrame(got, w) {
				t.Fatalf("round %d frame %d: Decode = %+v, %d, %v; want %+v", round, i, got, n, err, w)
			}
			rest = rest[n:]
		}
		for _, r := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream))} {
			dec := NewDecoder(r, maxPayload)
			for i, w := range want {
				if got, err := dec.Next(); err != nil || !sameFrame(got, w) {
					t.Fatalf("round %d frame %d: Next = %+v, %v; want %+v", round, i, got, err, w)
				}
			}
			if _, err := dec.Next(); err != io.EOF {
				t.Fatalf("round %d: after the last frame Next = %v, want io.EOF", round, err)
			}
		}
	}
}

func TestTimeoutEncoding(t *testing.T) {
	for _, c := range []struct {
		in, out time.Duration
	}{
		{0, 0},
		{-time.Second, 0},
		{1, time.Microsecond}, // a positive timeout never becomes "no deadline"
		{time.Microsecond, time.Microsecond},
		{1500 * time.Nanosecond, 2 * time.Microsecond},
		{time.Hour, time.Hour},
		{MaxTimeout, MaxTimeout},
		{100 * time.Hour, MaxTimeout},
	} {
		b := AppendFrame(nil, Frame{Type: TypeRequest, Timeout: c.in})
		f, _, err := Decode(b, 0)
		if err != nil || f.Timeout != c.out {
			t.Errorf("timeout %v: decoded %v, %v; want %v", c.in, f.Timeout, err, c.out)
		}
	}
}

func TestDecodeRejectsBadFrames(t *testing.T) {
	valid := AppendFrame(nil, Frame{Type: TypeRequest, Method: 7, ID: 9, Payload: []byte("abc")})
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(valid)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"version 0", mutate(func(b []byte) { b[offVersion] = 0 }), ErrBadVersion},
		{"version 3", mutate(func(b []byte) { b[offVersion] = 3 }), ErrBadVersion},
		{"type 0", mutate(func(b []byte) { b[offType] = 0 }), ErrUnknownType},
		{"type 4 (reserved one-way)", mutate(func(b []byte) { b[offType] = 4 }), ErrUnknownType},
		{"type 255", mutate(func(b []byte) { b[offType] = 255 }), ErrUnknownType},
		{"over the limit", mutate(func(b []byte) { b[offLength+3] = 5 }), ErrFrameTooLarge},
		{"4 GiB length", mutate(func(b []byte) { copy(b[offLength:], []byte{255, 255, 255, 255}) }), ErrFrameTooLarge},
		{"error without code", AppendFrame(nil, Frame{Type: TypeError, Payload: []byte{1}}), ErrMalformedFrame},
		{"response with timeout", mutate(func(b []byte) { b[offType] = byte(TypeResponse); b[offTimeout+3] = 1 }), ErrMalformedFrame},
	} {
		// The header alone is enough to reject a frame: the payload need not have arrived.
		if _, n, err := Decode(c.b[:HeaderSize], 4); !errors.Is(err, c.want) || n != 0 {
			t.Errorf("%s: Decode = %d, %v; want %v", c.name, n, err, c.want)
		}
		if _, err := NewDecoder(bytes.NewReader(c.b), 4).Next(); !errors.Is(err, c.want) {
			t.Errorf("%s: Next = %v; want %v", c.name, err, c.want)
		}
	}
	f, _, err := Decode(mutate(func(b []byte) { b[offLength+3] = 5 }), 4)
	if !errors.Is(err, ErrFrameTooLarge) || f.ID != 9 || f.Method != 7 || f.Type != TypeRequest {
		t.Errorf("an oversized request should still name itself: %+v, %v", f, err)
	}
}

func TestDecodeWaitsForWholeFrames(t *testing.T) {
	for _, v := range []byte{Version1, Version} {
		b := AppendFrame(nil, Frame{Version: v, Type: TypeResponse, ID: 1, Clock: 7, Payload: []byte("hello")})
		for i := range len(b) {
			if f, n, err := Decode(b[:i], 100); n != 0 || err != nil || f.Payload != nil {
				t.Fatalf("version %d, %d of %d bytes: Decode = %+v, %d, %v; want need-more", v, i, len(b), f, n, err)
			}
			_, err := NewDecoder(bytes.NewReader(b[:i]), 100).Next()
			if want := io.ErrUnexpectedEOF; i == 0 && err != io.EOF || i > 0 && err != want {
				t.Fatalf("version %d, %d of %d bytes: Next = %v", v, i, len(b), err)
			}
		}
	}
}

// A version 1 frame as the code before version 2 wrote it (frame.go at 863e146): this
// code still reads it, field for field, and writes it back byte for byte.
func TestVersion1FramesReadAndWriteAsBefore(t *testing.T) {
	old := []byte{
		1, 1, 0x00, 0x02, 0, 0, 0, 3, // version 1, request, method 2, 3 bytes
		0, 0, 0, 0, 0, 0, 0x01, 0x00, // request ID 256
		0, 0, 0x05, 0xdc, // timeout 1500 µs
		'a', 'b', 'c',
	}
	want := Frame{Version: Version1, Type: TypeRequest, Method: 2, ID: 256, Timeout: 1500 * time.Microsecond, Payload: []byte("abc")}
	f, n, err := Decode(old, 100)
	if err != nil || n != len(old) || !sameFrame(f, want) {
		t.Fatalf("Decode(old frame) = %+v, %d, %v; want %+v", f, n, err, want)
	}
	if got := AppendFrame(nil, want); !bytes.Equal(got, old) {
		t.Fatalf("AppendFrame(version 1) = %x, want the old encoding %x", got, old)
	}
	// Stamps have no place in version 1: a version 1 frame carries none.
	if got := AppendFrame(nil, Frame{Version: Version1, Type: TypeRequest, Method: 2, ID: 256, Timeout: 1500 * time.Microsecond,
		Clock: 9, Wall: 9, Epoch: 9, Payload: []byte("abc")}); !bytes.Equal(got, old) {
		t.Fatalf("a version 1 frame with stamps encodes as %x, want %x", got, old)
	}
	// A peer that reads version 1 only (one that predates version 2) rejects version 2.
	v2 := AppendFrame(nil, Frame{Type: TypeRequest, Method: 2, ID: 256})
	if _, _, err := decode(v2, 100, Version1); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("a version 1 peer decoded a version 2 frame: %v", err)
	}
	if _, err := newDecoder(bytes.NewReader(v2), 100, Version1).Next(); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("a version 1 peer's decoder read a version 2 frame: %v", err)
	}
}

// Version 2's header is version 1's, then the sender's clock, wall clock and epoch, each
// 8 bytes big-endian (the layout in the package doc).
func TestVersion2HeaderCarriesTheStamps(t *testing.T) {
	f := Frame{Type: TypeResponse, Method: 0x0102, ID: 3, Clock: 0x1122334455667788, Wall: 42, Epoch: 7, Payload: []byte("x")}
	b := AppendFrame(nil, f)
	if len(b) != HeaderSize+1 || b[offVersion] != Version {
		t.Fatalf("encoded %d bytes, version %d", len(b), b[offVersion])
	}
	for _, c := range []struct {
		name     string
		off      int
		got, exp uint64
	}{
		{"clock", offClock, binary.BigEndian.Uint64(b[offClock:]), uint64(f.Clock)},
		{"wall", offWall, binary.BigEndian.Uint64(b[offWall:]), uint64(f.Wall)},
		{"epoch", offEpoch, binary.BigEndian.Uint64(b[offEpoch:]), f.Epoch},
	} {
		if c.got != c.exp {
			t.Errorf("%s at offset %d = %#x, want %#x", c.name, c.off, c.got, c.exp)
		}
	}
	if !bytes.Equal(b[1:HeaderSizeV1], AppendFrame(nil, Frame{Version: Version1, Type: f.Type, Method: f.Method, ID: f.ID, Payload: f.Payload})[1:HeaderSizeV1]) {
		t.Error("the first 20 bytes of a version 2 header differ from version 1's (but for the version byte)")
	}
}
