package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/row"
)

func TestMessagesRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 200 {
		var w WriteRequest
		for i := range rng.IntN(5) {
			r := enginetest.RandomRow(rng, 1+rng.IntN(4), rng.IntN(64), int64(1+rng.IntN(1000)))
			w.Mutations = append(w.Mutations, row.Mutation{Key: fmt.Appendf(nil, "k%d", i), Row: r})
		}
		got, err := DecodeWriteRequest(AppendWriteRequest(nil, &w))
		if err != nil || len(got.Mutations) != len(w.Mutations) {
			t.Fatalf("write request: %v, %d mutations, want %d", err, len(got.Mutations), len(w.Mutations))
		}
		for i := range w.Mutations {
			if !bytes.Equal(got.Mutations[i].Key, w.Mutations[i].Key) || !enginetest.RowsEqual(got.Mutations[i].Row, w.Mutations[i].Row) {
				t.Fatalf("mutation %d changed in transit", i)
			}
		}
		rr := ReadRequest{Key: []byte("key"), Digest: rng.IntN(2) == 0}
		if got, err := DecodeReadRequest(AppendReadRequest(nil, &rr)); err != nil || !bytes.Equal(got.Key, rr.Key) || got.Digest != rr.Digest {
			t.Fatalf("read request: %+v %v", got, err)
		}
		resp := ReadResponse{Found: rng.IntN(3) > 0, Digest: rng.Uint64()}
		if resp.Found {
			resp.Row = enginetest.RandomRow(rng, 3, 16, 7)
		}
		digest := rng.IntN(2) == 0
		got2, err := DecodeReadResponse(AppendReadResponse(nil, &resp, digest))
		switch {
		case err != nil:
			t.Fatal(err)
		case digest && got2.Digest != resp.Digest:
			t.Fatalf("digest %x, want %x", got2.Digest, resp.Digest)
		case !digest && (got2.Found != resp.Found || resp.Found && !enginetest.RowsEqual(got2.Row, resp.Row)):
			t.Fatalf("read response %+v, want %+v", got2, resp)
		}
	}
}

func TestScanMessagesRoundTrip(t *testing.T) {
	for _, req := range []ScanRequest{
		{Lo: nil, Hi: nil, Rows: 10, Bytes: 100},
		{Lo: []byte("a"), Hi: []byte("b"), Rows: 1, Bytes: 1},
		{Lo: []byte{}, Hi: []byte{0xff}, Rows: MaxScanRows, Bytes: MaxScanBytes},
	} {
		got, err := DecodeScanRequest(AppendScanRequest(nil, &req))
		if err != nil || !bytes.Equal(got.Lo, req.Lo) || !bytes.Equal(got.Hi, req.Hi) || (got.Hi == nil) != (req.Hi == nil) ||
			got.Rows != req.Rows || got.Bytes != req.Bytes {
			t.Fatalf("scan request %+v came back as %+v, %v", req, got, err)
		}
	}
	// Limits are clamped, not trusted: a peer cannot ask for an unbounded page.
	got, err := DecodeScanRequest(AppendScanRequest(nil, &ScanRequest{Rows: 1 << 30, Bytes: 0}))
	if err != nil || got.Rows != MaxScanRows || got.Bytes != 1 {
		t.Fatalf("clamped scan request: %+v, %v", got, err)
	}
	r := row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 3}}}
	for _, resp := range []ScanResponse{
		{},
		{Rows: []row.Mutation{{Key: []byte("k1"), Row: r}}, Next: []byte("k1\x00")},
		{Rows: []row.Mutation{{Key: []byte("k1"), Row: r}, {Key: []byte("k2"), Row: r}}},
	} {
		got, err := DecodeScanResponse(AppendScanResponse(nil, &resp))
		if err != nil || len(got.Rows) != len(resp.Rows) || !bytes.Equal(got.Next, resp.Next) || (got.Next == nil) != (resp.Next == nil) {
			t.Fatalf("scan response %+v came back as %+v, %v", resp, got, err)
		}
		for i := range resp.Rows {
			if !bytes.Equal(got.Rows[i].Key, resp.Rows[i].Key) || !enginetest.RowsEqual(got.Rows[i].Row, resp.Rows[i].Row) {
				t.Fatalf("scan row %d changed in transit", i)
			}
		}
	}
	for name, b := range map[string][]byte{
		"flag byte of 2": {Version, 0, 2}, // the bound flag of a request, the continuation flag of a response
		"truncated":      {Version, 3, 'a'},
	} {
		_, err1 := DecodeScanRequest(b)
		_, err2 := DecodeScanResponse(b)
		if !errors.Is(err1, ErrCorrupt) || !errors.Is(err2, ErrCorrupt) {
			t.Errorf("%s: %v / %v", name, err1, err2)
		}
	}
}

func TestDecodersRejectMalformedPayloads(t *testing.T) {
	good := AppendWriteRequest(nil, &WriteRequest{Mutations: []row.Mutation{{Key: []byte("k"),
		Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}}})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"future version": append([]byte{9}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 0),
		"too many":       {Version, 0xff, 0xff, 0x01},
	} {
		if _, err := DecodeWriteRequest(b); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeReadRequest([]byte{Version, 2, 0}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad flags: %v", err)
	}
	if _, err := DecodeReadResponse([]byte{Version, 7}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad kind: %v", err)
	}
}

func FuzzDecoders(f *testing.F) {
	f.Add(AppendWriteRequest(nil, &WriteRequest{Mutations: []row.Mutation{{Key: []byte("k"),
		Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}}}))
	f.Add(AppendReadRequest(nil, &ReadRequest{Key: []byte("k"), Digest: true}))
	f.Add(AppendReadResponse(nil, &ReadResponse{Digest: 42}, true))
	f.Add(AppendScanRequest(nil, &ScanRequest{Lo: []byte("a"), Hi: []byte("b"), Rows: 5, Bytes: 500}))
	f.Add(AppendScanResponse(nil, &ScanResponse{Rows: []row.Mutation{{Key: []byte("k"),
		Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}}, Next: []byte("k\x00")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeScanRequest(b); err == nil {
			if _, err := DecodeScanRequest(AppendScanRequest(nil, &s)); err != nil {
				t.Fatalf("re-encoded scan request does not decode: %v", err)
			}
		}
		if s, err := DecodeScanResponse(b); err == nil {
			again, err := DecodeScanResponse(AppendScanResponse(nil, &s))
			if err != nil || len(again.Rows) != len(s.Rows) || !bytes.Equal(again.Next, s.Next) {
				t.Fatalf("re-encoded scan response does not decode alike: %v", err)
			}
		}
		if w, err := DecodeWriteRequest(b); err == nil {
			again, err := DecodeWriteRequest(AppendWriteRequest(nil, &w))
			if err != nil || len(again.Mutations) != len(w.Mutations) {
				t.Fatalf("re-encoded write request does not decode: %v", err)
			}
		}
		_, _ = DecodeReadRequest(b)
		if r, err := DecodeReadResponse(b); err == nil && r.Found {
			if _, err := DecodeReadResponse(AppendReadResponse(nil, &r, false)); err != nil {
				t.Fatalf("re-encoded read response does not decode: %v", err)
			}
		}
	})
}
