package replica

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// A FLUSHALL over the transport: the prepare answers with a fresh timestamp of the
// node's clock; the flush tombstones every row the replica holds as of its timestamp,
// counts them, advances the clock past it and tells the node (Flushed); writes with later
// timestamps survive.
func TestReplicaFlushDeletesEveryRowAsOfItsTimestamp(t *testing.T) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var flushed []int64
	clock := hlc.New(nil)
	h := &Handler{Engine: eng, Clock: clock, Flushed: func(ts int64) { flushed = append(flushed, ts) }}
	srv, err := transport.NewServer(h, transport.ServerConfig{})
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
	t.Cleanup(func() { cl.Close(); srv.Close(); eng.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	before := clock.Now()
	out, err := cl.Call(ctx, wire.MethodFlush, wire.AppendFlushRequest(nil, &wire.FlushRequest{Prepare: true}))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := wire.DecodeFlushResponse(out); err != nil || resp.Clock <= before {
		t.Fatalf("prepare: %+v %v, want a clock above %d", resp, err, before)
	}
	ts := time.Now().UnixMicro() + 1_000_000 // ahead of the clock, which must catch up
	if err := h.Write([]row.Mutation{
		{Key: []byte("a"), Row: cellRow("old", ts-10)}, {Key: []byte("b"), Row: cellRow("old", ts-5)},
		{Key: []byte("c"), Row: cellRow("new", ts+1)},
	}); err != nil {
		t.Fatal(err)
	}
	out, err = cl.Call(ctx, wire.MethodFlush, wire.AppendFlushRequest(nil, &wire.FlushRequest{Timestamp: ts}))
	if err != nil {
		t.Fatal(err)
	}
	if now := clock.Now(); now <= ts {
		t.Errorf("after the flush the clock issues %d, not above the flush's %d", now, ts)
	}
	if resp, err := wire.DecodeFlushResponse(out); err != nil || resp.Rows != 3 {
		t.Fatalf("flush response %+v %v, want 3 rows", resp, err)
	}
	if len(flushed) != 1 || flushed[0] != ts {
		t.Fatalf("Flushed called with %v, want [%d]", flushed, ts)
	}
	for key, want := range map[string]int{"a": 0, "b": 0, "c": 1} {
		r, err := h.Read([]byte(key), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(r.Row.Visible(ts + 2)); got != want || r.Row.Deleted != ts {
			t.Errorf("%s after the flush: %d visible cells, row tombstone %d; want %d and %d", key, got, r.Row.Deleted, want, ts)
		}
	}
	if _, err := cl.Call(ctx, wire.MethodFlush, []byte{wire.FlushVersion + 1}); err == nil {
		t.Error("a flush message of an unknown version was taken")
	}
}

// A write older than the last flush that arrives after it (a QUORUM write on its way to
// the last replica when the FLUSHALL came) lands deleted; a newer one lands as it is.
func TestReplicaWriteOlderThanTheLastFlushLandsDeleted(t *testing.T) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	h := &Handler{Engine: eng}
	ts := time.Now().UnixMicro()
	if _, err := h.Flush(ts); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Flush(ts - 100); err != nil { // an older flush does not lower the mark
		t.Fatal(err)
	}
	if err := h.Write([]row.Mutation{{Key: []byte("late"), Row: cellRow("old", ts-1)}, {Key: []byte("new"), Row: cellRow("v", ts+1)}}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"late": 0, "new": 1} {
		r, err := h.Read([]byte(key), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(r.Row.Visible(ts + 2)); got != want {
			t.Errorf("%s: %d visible cells, want %d", key, got, want)
		}
	}
}
