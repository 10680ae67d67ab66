package row

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
)

func TestCodecRoundTripsRandomRows(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	for i := 0; i < 5000; i++ {
		r := randomRow(rng)
		// Real timestamps are large; make sure deltas from the base are exercised.
		for j := range r.Cells {
			r.Cells[j].Timestamp += 1_700_000_000_000_000
			if r.Cells[j].ExpiresAt != 0 {
				r.Cells[j].ExpiresAt += 1_700_000_000_000_000
			}
		}
		enc := Encode(&r)
		if len(enc) > EncodedSize(&r) {
			t.Fatalf("encoding of %d bytes exceeds EncodedSize %d", len(enc), EncodedSize(&r))
		}
		got, err := Decode(enc)
		if err != nil {
			t.Fatalf("decode %s: %v", rowString(r), err)
		}
		if rowString(got) != rowString(r) {
			t.Fatalf("round trip: got %s, want %s", rowString(got), rowString(r))
		}
	}
}

func TestCodecIsCompactForOneWrite(t *testing.T) {
	// A 10-column write with one timestamp pays for that timestamp once.
	var r Row
	for i := 0; i < 10; i++ {
		r.Cells = append(r.Cells, Cell{Name: []byte{'f', byte('0' + i)}, Timestamp: 1_763_700_000_000_000, Value: bytes.Repeat([]byte{'x'}, 100)})
	}
	enc := Encode(&r)
	payload := 10 * (2 + 100)
	if overhead := len(enc) - payload; overhead > 2+1+8+10*4 {
		t.Fatalf("overhead %d bytes for 10 cells", overhead)
	}
}

func TestDecodeRejectsDamagedInput(t *testing.T) {
	r := Row{Deleted: 3, Cells: []Cell{cell("a", 5, "hello"), tomb("b", 6)}}
	enc := Encode(&r)
	for n := 0; n < len(enc); n++ {
		if _, err := Decode(enc[:n]); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("truncation to %d bytes: err %v", n, err)
		}
	}
	if _, err := Decode(append(enc, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := append([]byte{}, enc...)
	bad[0] = 99
	if _, err := Decode(bad); !errors.Is(err, ErrVersion) {
		t.Fatalf("bad version: %v", err)
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts is a valid row
// that re-encodes to something that decodes to the same row.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		r := randomRow(rng)
		f.Add(Encode(&r))
	}
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 1, 5, 1, 7, 1, 'a', 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded an invalid row: %v", err)
		}
		again, err := Decode(Encode(&r))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if rowString(again) != rowString(r) {
			t.Fatalf("re-encode changed the row: %s vs %s", rowString(again), rowString(r))
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	var r Row
	for i := 0; i < 10; i++ {
		r.Cells = append(r.Cells, Cell{Name: []byte{'f', byte('0' + i)}, Timestamp: 1_763_700_000_000_000, Value: bytes.Repeat([]byte{'x'}, 100)})
	}
	enc := Encode(&r)
	b.Run("op=encode/cols=10", func(b *testing.B) {
		buf := make([]byte, 0, EncodedSize(&r))
		for i := 0; i < b.N; i++ {
			buf = AppendEncode(buf[:0], &r)
		}
	})
	b.Run("op=decode/cols=10", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=merge/cols=10", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = Merge(r, r)
		}
	})
}
