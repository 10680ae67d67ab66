package replica

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs a replica over the real transport and returns a client to it.
func serve(t *testing.T) (*transport.Client, engine.Engine) {
	t.Helper()
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := transport.NewServer(&Handler{Engine: eng}, transport.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	cl, err := transport.NewClient(ln.Addr().String(), transport.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		srv.Close()
		eng.Close()
	})
	return cl, eng
}

func cellRow(v string, ts int64) row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte(v), Timestamp: ts}}}
}

func TestReplicaAppliesWritesAndAnswersReadsAndDigests(t *testing.T) {
	cl, eng := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{
		{Key: []byte("k1"), Row: cellRow("old", 1)}, {Key: []byte("k1"), Row: cellRow("new", 2)},
		{Key: []byte("k2"), Row: cellRow("x", 3)}}})
	if _, err := cl.Call(ctx, wire.MethodWrite, w); err != nil {
		t.Fatal(err)
	}
	read := func(key string, digest bool) wire.ReadResponse {
		b, err := cl.Call(ctx, wire.MethodRead, wire.AppendReadRequest(nil, &wire.ReadRequest{Key: []byte(key), Digest: digest}))
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.DecodeReadResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	got := read("k1", false)
	if !got.Found || string(got.Row.Cells[0].Value) != "new" {
		t.Fatalf("read k1: %+v, want the newest cell", got)
	}
	if d := read("k1", true); d.Digest != row.Digest(got.Row, true) {
		t.Errorf("digest %x, want the digest of the row %x", d.Digest, row.Digest(got.Row, true))
	}
	if r := read("missing", false); r.Found {
		t.Errorf("missing key found: %+v", r)
	}
	if d := read("missing", true); d.Digest != row.Digest(row.Row{}, false) {
		t.Error("digest of a missing key differs from the empty row's")
	}
	// Stored keys are token-prefixed: the engine's order is the ring's.
	it, err := eng.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var prev ring.Token = ring.MinToken
	n := 0
	for it.Next() {
		tok, key, err := ring.SplitEngineKey(it.Key())
		if err != nil || tok != ring.TokenOf(key) || tok < prev {
			t.Fatalf("engine key %x: token %d of %q out of order (%v)", it.Key(), tok, key, err)
		}
		prev, n = tok, n+1
	}
	if n != 2 {
		t.Errorf("engine holds %d rows, want 2", n)
	}
}

func TestReplicaRejectsBadRequests(t *testing.T) {
	cl, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var re *transport.RemoteError
	if _, err := cl.Call(ctx, 99, nil); !errors.As(err, &re) {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := cl.Call(ctx, wire.MethodWrite, []byte{wire.Version, 5}); !errors.As(err, &re) {
		t.Errorf("malformed write: %v", err)
	}
	empty := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{{Key: nil, Row: cellRow("v", 1)}}})
	if _, err := cl.Call(ctx, wire.MethodWrite, empty); !errors.As(err, &re) {
		t.Errorf("empty key: %v", err)
	}
	// The replica keeps serving after bad requests.
	if _, err := cl.Call(ctx, wire.MethodRead, wire.AppendReadRequest(nil, &wire.ReadRequest{Key: bytes.Repeat([]byte("k"), 3)})); err != nil {
		t.Errorf("read after bad requests: %v", err)
	}
}

// Paging through a token range over the transport returns every row in it once, with the
// keys clients gave and tombstones included, and nothing outside it.
func TestReplicaScansARangeInPages(t *testing.T) {
	cl, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ms []row.Mutation
	now := time.Now().UnixMicro() // tombstones younger than the grace period are kept
	for i := range 500 {
		r := cellRow("v", now+int64(i))
		if i%7 == 0 {
			r = row.Row{Cells: []row.Cell{{Name: []byte("c"), Timestamp: now + int64(i), Tombstone: true}}}
		}
		ms = append(ms, row.Mutation{Key: []byte("key" + string(rune('a'+i%26)) + string(rune('0'+i/26))), Row: r})
	}
	if _, err := cl.Call(ctx, wire.MethodWrite, wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: ms})); err != nil {
		t.Fatal(err)
	}
	start, end := ring.Token(-1<<62), ring.Token(1<<62) // half the ring
	want := map[string]row.Row{}
	for _, m := range ms {
		if tok := ring.TokenOf(m.Key); tok > start && tok <= end {
			want[string(m.Key)] = m.Row
		}
	}
	got := map[string]row.Row{}
	pages := 0
	for _, kr := range ring.EngineKeyRanges(start, end) {
		lo := kr.Lo
		for {
			b, err := cl.Call(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Lo: lo, Hi: kr.Hi, Rows: 16, Bytes: 1 << 20}))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := wire.DecodeScanResponse(b)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, m := range resp.Rows {
				if _, dup := got[string(m.Key)]; dup {
					t.Fatalf("%q returned twice", m.Key)
				}
				got[string(m.Key)] = m.Row.Clone()
			}
			if resp.Next == nil {
				break
			}
			lo = resp.Next
		}
	}
	if len(got) != len(want) || pages < len(want)/16 {
		t.Fatalf("%d rows in %d pages, want %d rows", len(got), pages, len(want))
	}
	for k, r := range want {
		if g, ok := got[k]; !ok || row.Digest(g, true) != row.Digest(r, true) {
			t.Fatalf("%q: got %+v, want %+v", k, g, r)
		}
	}
	// A page stops once it holds Bytes of rows, after at least one row.
	b, err := cl.Call(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Rows: 100, Bytes: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := wire.DecodeScanResponse(b); err != nil || len(resp.Rows) != 1 || resp.Next == nil {
		t.Fatalf("a page of one byte: %d rows, next %x, %v", len(resp.Rows), resp.Next, err)
	}
}
