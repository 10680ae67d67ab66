// Package replica serves the internode requests a node receives as a replica: it applies
// writes (client writes, hint replays, read repairs) to the local engine, answers reads
// and digest reads from it, and pages through a range of it for a peer refilling itself
// or streaming a range in a membership change (scans; a stream's pages are paced by the
// node's send limit) or for a coordinator's client scan (scan reads, refused while
// refilling), and
// deletes all its rows for a FLUSHALL (flush.go). Keys are stored token-prefixed
// (ring.EngineKey), so that the engine's order is the ring's order.
package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// Handler is the transport.Handler of a replica. Safe for concurrent use.
type Handler struct {
	Engine engine.Engine
	// Flushed, when set, is called with a FLUSHALL's timestamp once the engine has
	// flushed (flush.go): the node drops the hints that flush made moot.
	Flushed func(ts int64)
	// Clock is the node's clock, which a FLUSHALL reads and advances (flush.go). Nil: a
	// FLUSHALL's prepare is refused.
	Clock *hlc.Clock
	// StreamPacer paces the pages this replica sends to membership changes' streams
	// (scans with wire.ScanRequest.Stream set): the node's send limit, shared by all of
	// them (stream.Limiter). Nil: unpaced. Client scans (MethodScanRead) and refills
	// (scans without the flag, or of version 1) are never paced.
	StreamPacer Pacer
	// Background, when set, reads and encodes the stream pages (not refills' or clients'
	// scans) at low CPU priority, so that the foreground's requests take the CPU first.
	Background *lowprio.Lane

	streamSent atomic.Int64 // encoded stream pages sent (StreamBytesSent)
	refilling  atomic.Bool
	// flushMu orders writes and FLUSHALLs (flush.go): a write holds it shared from
	// reading flushedAt until its batch is applied, a flush exclusively to raise it.
	flushMu   sync.RWMutex
	flushedAt int64 // the last FLUSHALL's timestamp since start
}

// StreamBytesSent returns the bytes of the stream pages (scans with wire.ScanRequest.Stream)
// this replica has answered: what membership changes moved from it, counted at the
// sender.
func (h *Handler) StreamBytesSent() int64 { return h.streamSent.Load() }

// Pacer paces bytes sent. Wait blocks until n more bytes may go, or ctx ends (its error);
// it is safe for concurrent use. stream.Limiter is one.
type Pacer interface {
	Wait(ctx context.Context, n int) error
}

// ErrRefilling is a read's answer from a replica that is refilling (see SetRefilling).
var ErrRefilling = errors.New("replica: refilling from peers: not serving reads")

// SetRefilling makes the replica refuse reads (ErrRefilling) while it pulls back rows it
// lost, or serve them again. Coordinators learn of a refilling replica through gossip and
// stop asking it; this covers the moments before they do.
func (h *Handler) SetRefilling(on bool) { h.refilling.Store(on) }

// Handle decodes one request, runs it against the engine and encodes the answer.
func (h *Handler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	switch method {
	case wire.MethodWrite:
		return nil, h.write(payload)
	case wire.MethodRead:
		return h.read(payload)
	case wire.MethodScan:
		return h.scan(ctx, payload)
	case wire.MethodFlush:
		return h.flush(payload)
	case wire.MethodScanRead:
		return h.scanRead(payload)
	}
	return nil, fmt.Errorf("replica: unknown method %d", method)
}

func (h *Handler) write(payload []byte) error {
	req, err := wire.DecodeWriteRequest(payload)
	if err != nil {
		return err
	}
	return h.Write(req.Mutations)
}

// Write applies mutations (keys as clients give them) to the engine as one batch. The
// coordinator calls it directly for its own replica.
func (h *Handler) Write(mutations []row.Mutation) error {
	h.flushMu.RLock()
	defer h.flushMu.RUnlock()
	batch := make([]row.Mutation, len(mutations))
	for i, m := range mutations {
		if err := row.ValidateKey(m.Key); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		// The payload is the transport's memory until Handle returns; engines copy what
		// they keep during Apply, which returns before then.
		batch[i] = row.Mutation{Key: ring.EngineKey(m.Key), Row: h.afterFlush(m.Row)}
	}
	if err := h.Engine.Apply(batch); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return nil
}

func (h *Handler) read(payload []byte) ([]byte, error) {
	req, err := wire.DecodeReadRequest(payload)
	if err != nil {
		return nil, err
	}
	resp, err := h.Read(req.Key, req.Digest)
	if err != nil {
		return nil, err
	}
	return wire.AppendReadResponse(nil, &resp, req.Digest), nil
}

// Read reads key (as clients give it) from the engine: the row, and its digest when
// digest is set. The coordinator calls it directly for its own replica.
func (h *Handler) Read(key []byte, digest bool) (wire.ReadResponse, error) {
	if h.refilling.Load() {
		return wire.ReadResponse{}, ErrRefilling
	}
	if v, ok := h.Engine.(engine.Viewer); ok && digest {
		// A digest needs only a look at the row: no copy.
		var resp wire.ReadResponse
		err := v.View(ring.EngineKey(key), func(enc []byte, found bool) {
			resp.Found, resp.Digest = found, row.DigestEncoded(enc, found)
		})
		if err != nil {
			return wire.ReadResponse{}, fmt.Errorf("replica: %w", err)
		}
		return resp, nil
	}
	r, found, err := h.Engine.Get(ring.EngineKey(key))
	if err != nil {
		return wire.ReadResponse{}, fmt.Errorf("replica: %w", err)
	}
	resp := wire.ReadResponse{Found: found, Row: r}
	if digest {
		resp.Digest = row.Digest(r, found)
	}
	return resp, nil
}

// scan answers a page of a refill's or a stream's scan (wire.MethodScan), in the version
// it was asked in. A stream's page waits for the send limit once read, with its engine
// snapshot released: a page waiting holds memory, not the engine.
func (h *Handler) scan(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := wire.DecodeScanRequest(payload)
	if err != nil {
		return nil, err
	}
	var b []byte
	work := func() {
		var resp wire.ScanResponse
		if resp, err = h.Scan(req); err == nil {
			b = wire.AppendScanResponseVersion(nil, &resp, req.Version)
		}
	}
	if req.Stream {
		h.Background.Do(work)
	} else {
		work()
	}
	if err != nil {
		return nil, err
	}
	if req.Stream && h.StreamPacer != nil {
		if err := h.StreamPacer.Wait(ctx, len(b)); err != nil {
			return nil, fmt.Errorf("replica: scan: waiting for the stream send limit: %w", err)
		}
	}
	if req.Stream {
		h.streamSent.Add(int64(len(b)))
	}
	return b, nil
}

// scanRead answers a page of a client's scan (SCAN, KEYS): a scan that a refilling
// replica refuses, as it refuses reads (wire.MethodScanRead).
func (h *Handler) scanRead(payload []byte) ([]byte, error) {
	req, err := wire.DecodeScanReadRequest(payload)
	if err != nil {
		return nil, err
	}
	if h.refilling.Load() {
		return nil, ErrRefilling
	}
	resp, err := h.Scan(req)
	if err != nil {
		return nil, err
	}
	return wire.AppendScanResponse(nil, &resp), nil
}

// Scan returns one page of the rows with req.Lo <= engine key < req.Hi, as Get returns
// them (tombstones included, so that deletes reach the peer), with the keys clients gave.
func (h *Handler) Scan(req wire.ScanRequest) (wire.ScanResponse, error) {
	it, err := h.Engine.NewIterator(req.Lo, req.Hi)
	if err != nil {
		return wire.ScanResponse{}, fmt.Errorf("replica: scan: %w", err)
	}
	defer it.Close()
	var resp wire.ScanResponse
	size := 0
	for it.Next() {
		_, key, err := ring.SplitEngineKey(it.Key())
		if err != nil {
			return wire.ScanResponse{}, fmt.Errorf("replica: scan: %w", err)
		}
		r := it.Row()
		resp.Rows = append(resp.Rows, row.Mutation{Key: bytes.Clone(key), Row: r.Clone()})
		size += row.EncodedSize(&r)
		if len(resp.Rows) == req.Rows || size >= req.Bytes {
			// The smallest engine key after this one: the next page starts there.
			resp.Next = append(bytes.Clone(it.Key()), 0)
			break
		}
	}
	if err := it.Err(); err != nil {
		return wire.ScanResponse{}, fmt.Errorf("replica: scan: %w", err)
	}
	return resp, nil
}
