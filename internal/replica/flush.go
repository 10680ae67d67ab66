package replica

import (
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// FLUSHALL's replica side (wire.MethodFlush): a prepare answers with a fresh timestamp of
// the node's clock; a flush makes the clock issue only later timestamps and deletes every
// row the engine holds, whichever token ranges they belong to.

var errNoClock = errors.New("replica: no clock to prepare a flush with")

func (h *Handler) flush(payload []byte) ([]byte, error) {
	req, err := wire.DecodeFlushRequest(payload)
	if err != nil {
		return nil, err
	}
	if req.Prepare {
		if h.Clock == nil {
			return nil, errNoClock
		}
		return wire.AppendFlushResponse(nil, &wire.FlushResponse{Clock: h.Clock.Now()}), nil
	}
	n, err := h.Flush(req.Timestamp)
	if err != nil {
		return nil, err
	}
	return wire.AppendFlushResponse(nil, &wire.FlushResponse{Rows: int64(n)}), nil
}

// Flush deletes every row of the engine as of ts (engine.DeleteAll) and returns the rows
// it tombstoned. First the node's clock (Clock, when set) observes ts, so that the writes
// the node coordinates from then on outlive the flush; once done, Flushed, when set, gets
// ts. A refilling replica flushes too: the rows it pulls from its peers afterwards carry
// their tombstones.
//
// Writes older than ts may still arrive after the engine's pass: one acknowledged at
// QUORUM just before the FLUSHALL, on its way to the last replica; a read repair; a hint.
// Until the node restarts, Write gives every mutation that holds a cell as old as the
// latest flush that flush's row tombstone (afterFlush), so that they land deleted.
func (h *Handler) Flush(ts int64) (int, error) {
	if h.Clock != nil {
		h.Clock.Observe(ts)
	}
	// Once the writes in flight are applied, later ones see the new mark: every write
	// lands either before DeleteAll's snapshot or marked.
	h.flushMu.Lock()
	h.flushedAt = max(h.flushedAt, ts)
	h.flushMu.Unlock()
	n, err := engine.DeleteAll(h.Engine, ts)
	if err != nil {
		return n, fmt.Errorf("replica: flush: %w", err)
	}
	if h.Flushed != nil {
		h.Flushed(ts)
	}
	return n, nil
}

// afterFlush returns r with the last flush's row tombstone when r holds a cell written
// before that flush, else r as it is. The caller holds flushMu shared.
func (h *Handler) afterFlush(r row.Row) row.Row {
	at := h.flushedAt
	if at == 0 || r.Deleted >= at {
		return r
	}
	for i := range r.Cells {
		if r.Cells[i].Timestamp <= at {
			r.Deleted = at
			return r
		}
	}
	return r
}
