package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// A client's scan page (wire.MethodScanRead) is served like a refill's (MethodScan), but
// refused while the replica refills, as reads are; a refill's scans go on.
func TestReplicaRefusesScanReadsWhileRefilling(t *testing.T) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	h := &Handler{Engine: eng}
	now := time.Now().UnixMicro()
	if err := h.Write([]row.Mutation{{Key: []byte("a"), Row: cellRow("1", now)}, {Key: []byte("b"), Row: cellRow("2", now)}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &wire.ScanRequest{Rows: 10, Bytes: 1 << 20}
	page := func(method uint16, payload []byte) (int, error) {
		b, err := h.Handle(ctx, method, payload)
		if err != nil {
			return 0, err
		}
		resp, err := wire.DecodeScanResponse(b)
		return len(resp.Rows), err
	}
	if n, err := page(wire.MethodScanRead, wire.AppendScanReadRequest(nil, req)); err != nil || n != 2 {
		t.Fatalf("scan read: %d rows, %v", n, err)
	}
	h.SetRefilling(true)
	if _, err := page(wire.MethodScanRead, wire.AppendScanReadRequest(nil, req)); !errors.Is(err, ErrRefilling) {
		t.Errorf("scan read while refilling: %v", err)
	}
	if n, err := page(wire.MethodScan, wire.AppendScanRequest(nil, req)); err != nil || n != 2 {
		t.Errorf("a refill's scan while refilling: %d rows, %v", n, err)
	}
}
