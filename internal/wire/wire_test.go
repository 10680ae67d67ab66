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
	f.Fuzz(func(t *testing.T, b []byte) {
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
