package stream

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// serveAt serves h over the transport at addr ("127.0.0.1:0" for any port) and returns
// the server and the address it listens on.
func serveAt(t *testing.T, h transport.Handler, addr string, cfg transport.ServerConfig) (*transport.Server, string) {
	t.Helper()
	cfg.Logger = quiet()
	srv, err := transport.NewServer(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

func client(t *testing.T, addr string, cfg transport.ClientConfig) *transport.Client {
	t.Helper()
	cfg.BackoffBase, cfg.BackoffMax = 10*time.Millisecond, 100*time.Millisecond
	c, err := transport.NewClient(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A source whose server is killed mid-stream (its connections reset) and started again
// on the same address: the transfer retries from the page it was on, and completes with
// every row.
func TestTransferSurvivesASourceKilledAndRestarted(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	rows := fill(t, src, rng, 800, now)
	srv, addr := serveAt(t, src, "127.0.0.1:0", transport.ServerConfig{})
	cl := client(t, addr, transport.ClientConfig{})
	killed := make(chan struct{})
	pages := 0
	sink := sinkFunc(func(ms []row.Mutation) error {
		if pages++; pages == 3 {
			srv.Close()
			close(killed)
		}
		return dst.Write(ms)
	})
	cfg := config(t, cl, sink)
	cfg.RetryBase, cfg.RetryMax = 10*time.Millisecond, 100*time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}})
	}()
	<-killed
	time.Sleep(300 * time.Millisecond) // the transfer fails meanwhile, and waits
	serveAt(t, src, addr, transport.ServerConfig{})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the transfer did not complete after the source came back")
	}
	checkCopied(t, rows, dump(t, dst), whole)
	p := s.Peers()["n1"]
	if p.Failures == 0 {
		t.Fatalf("peer counters %+v: no failure counted while the source was down", p)
	}
	t.Logf("peer counters %+v", p)
}

// oldSource is a replica as nodes before scan version 2 run it: a MethodScan request of
// another version than 1 fails in its decoder, with its words.
type oldSource struct {
	h        *replica.Handler
	v1, v2   atomic.Int64
	versions sync.Map
}

func (o *oldSource) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if method == wire.MethodScan && len(payload) > 0 {
		if payload[0] != wire.Version {
			o.v2.Add(1)
			return nil, fmt.Errorf("%w %d (this node speaks %d)", wire.ErrVersion, payload[0], wire.Version)
		}
		o.v1.Add(1)
	}
	return o.h.Handle(ctx, method, payload)
}

// A new destination streams from a source that predates scan version 2 (over a transport
// that predates frame version 2 too): refused once, it asks in version 1 from then on,
// gets every row, and counts the pages as unchecked. A refill's Puller does the same.
func TestNewDestinationStreamsFromAnOldSource(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	rows := fill(t, src, rng, 500, now)
	old := &oldSource{h: src}
	_, addr := serveAt(t, old, "127.0.0.1:0", transport.ServerConfig{MaxVersion: 1})
	cl := client(t, addr, transport.ClientConfig{})
	s, err := New(config(t, cl, dst))
	if err != nil {
		t.Fatal(err)
	}
	r := rangeOf(0.7, 0.3) // wraps: two key ranges
	if err := s.Run(context.Background(), Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: r, Source: "old", Destination: "n2"}}); err != nil {
		t.Fatal(err)
	}
	checkCopied(t, rows, dump(t, dst), r)
	p := s.Peers()["old"]
	if old.v2.Load() != 1 || p.Pages != old.v1.Load()-0 || p.UncheckedPages != p.Pages || p.Failures != 0 {
		t.Fatalf("old source saw %d version 2 and %d version 1 requests; peer counters %+v", old.v2.Load(), old.v1.Load(), p)
	}

	dst2 := replicaOn(t, "memory")
	pl := &Puller{Source: func(ring.NodeID) (Caller, error) { return cl, nil }, Gone: func(ring.NodeID) bool { return false },
		Sink: dst2, PageRows: 64, PageBytes: 1 << 20, Timeout: 5 * time.Second, Retry: time.Millisecond, Logger: quiet()}
	n := 0
	for _, kr := range r.Keys() {
		got, ok := pl.Pull("old", kr, nil)
		if !ok {
			t.Fatal("pull stopped")
		}
		n += got
	}
	checkCopied(t, rows, dump(t, dst2), r)
	if old.v2.Load() != 2 {
		t.Fatalf("the Puller asked in version 2 %d times; want once", old.v2.Load()-1)
	}
}

// A destination that predates scan version 2 (version 1 requests, a transport of frame
// version 1) streams from a new source: every page comes back in version 1, byte for
// byte what it reads, unpaced by the source's send limit, and the range is whole.
func TestOldDestinationStreamsFromANewSource(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src := replicaOn(t, "memory")
	rows := fill(t, src, rng, 500, now)
	paced := &countingPacer{}
	src.StreamPacer = paced
	_, addr := serveAt(t, src, "127.0.0.1:0", transport.ServerConfig{})
	cl := client(t, addr, transport.ClientConfig{MaxVersion: 1})
	ctx := context.Background()
	got := map[string]row.Row{}
	r := rangeOf(0.1, 0.6)
	for _, kr := range r.Keys() {
		lo := kr.Lo
		for {
			b, err := cl.Call(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Lo: lo, Hi: kr.Hi, Rows: 32, Bytes: 1 << 20, Version: wire.Version}))
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != wire.Version {
				t.Fatalf("a version 1 request answered in version %d", b[0])
			}
			resp, err := wire.DecodeScanResponse(b)
			if err != nil || resp.Checksummed {
				t.Fatalf("page: %v (checksummed %v)", err, resp.Checksummed)
			}
			for _, m := range resp.Rows {
				got[string(m.Key)] = m.Row.Clone()
			}
			if resp.Next == nil {
				break
			}
			lo = resp.Next
		}
	}
	checkCopied(t, rows, got, r)
	if paced.n.Load() != 0 {
		t.Fatalf("%d version 1 pages were paced", paced.n.Load())
	}
}

type countingPacer struct{ n atomic.Int64 }

func (p *countingPacer) Wait(context.Context, int) error { p.n.Add(1); return nil }
