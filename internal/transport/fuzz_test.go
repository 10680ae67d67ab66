package transport

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
)

// fuzzMaxPayload is the payload limit of the fuzzed decoders: small, so the fuzzer reaches
// it.
const fuzzMaxPayload = 64

// FuzzDecode feeds arbitrary bytes to both decoders: no panic; every frame Decode accepts
// re-encodes to exactly the bytes it took; Decoder reads the same frames and stops with the
// same error (or io.EOF / io.ErrUnexpectedEOF where Decode asks for more bytes).
func FuzzDecode(f *testing.F) {
	req := AppendFrame(nil, Frame{Type: TypeRequest, Method: 3, ID: 1, Timeout: 1500, Payload: []byte("ping")})
	resp := AppendFrame(nil, Frame{Type: TypeResponse, Method: 3, ID: 1, Payload: []byte("pong")})
	errf := AppendFrame(nil, Frame{Type: TypeError, Method: 3, ID: 2, Payload: errorPayload(CodePanic, "boom")})
	f.Add(req)
	f.Add(append(append(bytes.Clone(req), resp...), errf...))
	f.Add(resp[:HeaderSize+2])              // truncated payload
	f.Add(req[:7])                          // truncated header
	f.Add(append([]byte{2}, req[1:]...))    // bad version
	f.Add(append([]byte{1, 4}, req[2:]...)) // reserved type
	f.Add(AppendFrame(nil, Frame{Type: TypeRequest, Payload: make([]byte, fuzzMaxPayload+1)}))
	f.Add(AppendFrame(nil, Frame{Type: TypeError, Payload: []byte{0}}))
	f.Add([]byte{})
	// Both versions on one stream (a hello and its answer, then stamped frames), and a
	// version 2 header cut where a version 1 header would be whole.
	v1 := AppendFrame(nil, Frame{Version: Version1, Type: TypeRequest, Method: helloMethod, ID: helloID, Payload: []byte{Version}})
	v2 := AppendFrame(nil, Frame{Type: TypeResponse, Method: helloMethod, ID: helloID, Clock: 1 << 50, Wall: 1 << 50, Epoch: 3, Payload: []byte{Version}})
	f.Add(append(bytes.Clone(v1), v2...))
	f.Add(append(AppendFrame(nil, Frame{Type: TypeRequest, Method: 1, ID: 9, Timeout: 7, Clock: -1, Wall: 0, Payload: []byte("stamped")}), v1...))
	f.Add(v2[:HeaderSizeV1+1])
	f.Add(append([]byte{3}, v2[1:]...)) // a version from the future
	// Epochs: a request at the largest epoch and its stale-epoch refusal, stamped with the
	// server's.
	f.Add(append(AppendFrame(nil, Frame{Type: TypeRequest, Method: 2, ID: 5, Epoch: math.MaxUint64, Payload: []byte("w")}),
		AppendFrame(nil, Frame{Type: TypeError, Method: 2, ID: 5, Epoch: 9, Payload: errorPayload(CodeStaleEpoch, "stale epoch")})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var frames []Frame
		var sliceErr error
		for rest := b; ; {
			fr, n, err := Decode(rest, fuzzMaxPayload)
			if err != nil {
				sliceErr = err
				break
			}
			if n == 0 {
				if len(rest) == 0 {
					sliceErr = io.EOF
				} else {
					sliceErr = io.ErrUnexpectedEOF
				}
				break
			}
			if enc := AppendFrame(nil, fr); !bytes.Equal(enc, rest[:n]) {
				t.Fatalf("frame %+v re-encodes to %x, decoded from %x", fr, enc, rest[:n])
			}
			frames = append(frames, fr)
			rest = rest[n:]
		}
		var r io.Reader = bytes.NewReader(b)
		if len(b)%2 == 1 {
			r = iotest.OneByteReader(r)
		}
		dec := NewDecoder(r, fuzzMaxPayload)
		for i, want := range frames {
			got, err := dec.Next()
			if err != nil || !sameFrame(got, want) {
				t.Fatalf("frame %d: Decoder read %+v, %v; Decode read %+v", i, got, err, want)
			}
		}
		_, err := dec.Next()
		if err == nil || !sameSentinel(err, sliceErr) {
			t.Fatalf("after %d frames: Decoder stopped with %v, Decode with %v", len(frames), err, sliceErr)
		}
	})
}

func sameSentinel(a, b error) bool {
	for _, s := range []error{io.EOF, io.ErrUnexpectedEOF, ErrBadVersion, ErrUnknownType, ErrFrameTooLarge, ErrMalformedFrame} {
		if errors.Is(a, s) {
			return errors.Is(b, s)
		}
	}
	return false
}
