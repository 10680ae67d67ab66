package stream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// Caller sends an internode request and waits for its answer (*transport.Client does).
// It must be safe for concurrent use; the response belongs to the caller of Call.
type Caller interface {
	Call(ctx context.Context, method uint16, payload []byte) ([]byte, error)
}

// Sink takes the rows pulled (*replica.Handler does: it merges them in as writes are, so
// rows pulled while new writes arrive lose nothing). Write may be called by several
// transfers at once; the rows are valid only until it returns (engines copy what they
// keep). What "applied" means for durability on return is the sink's: see Config.Sync.
type Sink interface {
	Write(rows []row.Mutation) error
}

// Puller copies key ranges from other replicas into a sink: a refill's copy (package
// node, refill.go), which has no progress to keep (a refilling in-memory node starts
// empty) and is not paced by the limits of membership changes' streams. Its pages are
// checked as a Streamer's are, and it speaks to sources of both scan versions.
type Puller struct {
	// Source returns the caller for a replica.
	Source func(id ring.NodeID) (Caller, error)
	// Gone reports whether a source has left the ring: a range it fails to send is then
	// skipped rather than retried.
	Gone func(id ring.NodeID) bool
	Sink Sink
	// PageRows and PageBytes bound each scan request's answer.
	PageRows, PageBytes int
	// Timeout bounds each page's request.
	Timeout time.Duration
	// Retry is how long to wait before asking a source that failed again.
	Retry  time.Duration
	Logger *slog.Logger

	once  sync.Once
	pager *pager
}

// Pull copies kr from src, page by page, retrying a failed page until it succeeds, src
// is gone, or stop is closed (false). It returns the rows copied.
func (p *Puller) Pull(src ring.NodeID, kr ring.KeyRange, stop <-chan struct{}) (rows int, ok bool) {
	lo := kr.Lo
	for {
		n, next, err := p.page(src, lo, kr.Hi)
		rows += n
		switch {
		case err == nil && next == nil:
			return rows, true
		case err == nil:
			lo = next
			continue
		}
		if p.Gone(src) {
			p.Logger.Info("stream source left the ring; skipped", "source", src)
			return rows, true
		}
		p.Logger.Warn("stream page failed; retrying", "source", src, "err", err)
		select {
		case <-stop:
			return rows, false
		case <-time.After(p.Retry):
		}
	}
}

// page asks src for the page of rows from lo and applies it to the sink.
func (p *Puller) page(src ring.NodeID, lo, hi []byte) (int, []byte, error) {
	p.once.Do(func() { p.pager = newPager(p.Source, p.Timeout) })
	resp, _, err := p.pager.fetch(context.Background(), src, wire.ScanRequest{Lo: lo, Hi: hi, Rows: p.PageRows, Bytes: p.PageBytes})
	if err != nil {
		return 0, nil, err
	}
	if len(resp.Rows) > 0 {
		if err := p.Sink.Write(resp.Rows); err != nil {
			return 0, nil, err
		}
	}
	return len(resp.Rows), resp.Next, nil
}
