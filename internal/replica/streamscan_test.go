package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// pacer records what it was asked to pace, and fails when told to.
type pacer struct {
	bytes []int
	err   error
}

func (p *pacer) Wait(_ context.Context, n int) error {
	p.bytes = append(p.bytes, n)
	return p.err
}

// A scan is answered in the version it was asked in (a node that predates version 2 gets
// the page it reads), and only a stream's pages (version 2, Stream set) wait for the
// send limit, by their encoded size, and only they are read on the background lane (low
// CPU priority): refills and clients' scans are neither paced nor lowered.
func TestReplicaAnswersScansInTheirVersionAndPacesOnlyStreams(t *testing.T) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	p := &pacer{}
	lane := lowprio.New(1)
	h := &Handler{Engine: eng, StreamPacer: p, Background: lane}
	now := time.Now().UnixMicro()
	if err := h.Write([]row.Mutation{{Key: []byte("a"), Row: cellRow("1", now)}, {Key: []byte("b"), Row: cellRow("2", now)}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		method  uint16
		req     []byte
		version byte
		paced   bool
	}{
		{"an old node's scan", wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Rows: 10, Bytes: 1 << 20, Version: wire.Version}), wire.Version, false},
		{"a refill's scan", wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Rows: 10, Bytes: 1 << 20}), wire.ScanVersion, false},
		{"a stream's scan", wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Rows: 10, Bytes: 1 << 20, Stream: true}), wire.ScanVersion, true},
		{"a client's scan", wire.MethodScanRead, wire.AppendScanReadRequest(nil, &wire.ScanRequest{Rows: 10, Bytes: 1 << 20}), wire.Version, false},
	} {
		p.bytes = nil
		b, err := h.Handle(ctx, c.method, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp, err := wire.DecodeScanResponse(b)
		switch {
		case err != nil || len(resp.Rows) != 2:
			t.Fatalf("%s: %d rows, %v", c.name, len(resp.Rows), err)
		case b[0] != c.version || resp.Checksummed != (c.version == wire.ScanVersion):
			t.Errorf("%s: answered in version %d (checksummed %v), want %d", c.name, b[0], resp.Checksummed, c.version)
		case c.paced && (len(p.bytes) != 1 || p.bytes[0] != len(b)):
			t.Errorf("%s: paced %v, want once for its %d bytes", c.name, p.bytes, len(b))
		case !c.paced && len(p.bytes) != 0:
			t.Errorf("%s: paced %v, want not paced", c.name, p.bytes)
		}
	}
	if lowered, failed := lane.Counts(); lowered+failed != 1 {
		t.Errorf("%d pages read on the background lane, want the stream's one", lowered+failed)
	}
	// A page that cannot wait for the limit (the asker's deadline) fails; it is asked again.
	p.err = context.DeadlineExceeded
	if _, err := h.Handle(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &wire.ScanRequest{Rows: 10, Bytes: 1, Stream: true})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a paced page past its deadline: %v", err)
	}
}
