package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/scan"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// Scans (SCAN, KEYS). In a cluster a page is read span by span (package scan: a span is
// a token range, or adjacent ranges with one replica set) from a quorum of the span's
// replicas over wire.MethodScanRead (which a refilling replica refuses, as it refuses
// reads), and merged by scan.Merge; outside a cluster it is one pass over the engine.
// Package scan makes every decision; this file sends and waits.

var (
	_ resp.Scanner = (*clusterStore)(nil)
	_ resp.Scanner = localStore{}
)

// Bounds of a cluster page.
const (
	// scanPageBytes bounds the row bytes of one replica's answer to a page request.
	scanPageBytes = 4 << 20
	// maxSpansPerPage bounds the spans one SCAN call visits, so that a call over a
	// cluster of many small or empty ranges answers in bounded time; the page then ends
	// early, with a cursor that goes on from there.
	maxSpansPerPage = 64
)

// Scan implements resp.Scanner: the rows of about count keys from cursor on, read span
// by span at level ("" for the store's default), each span from a quorum of its replicas
// as the ring is when the span is read. A span that fails after earlier spans filled part
// of the page ends the page there, with the cursor of the failed span; a failure with
// nothing read is the error.
func (s *clusterStore) Scan(level string, cursor uint64, count int) ([]row.Mutation, uint64, error) {
	l := s.level
	if level != "" {
		var err error
		if l, err = coord.ParseLevel(level); err != nil {
			return nil, 0, err
		}
	}
	from := scan.From(cursor)
	var out []row.Mutation
	for range maxSpansPerPage {
		rv := s.m.RingView()
		r := rv.Ring()
		if r == nil {
			return nil, 0, fmt.Errorf("node: scan: %w: no ring yet", coord.ErrUnavailable)
		}
		span := scan.First(r, from, rv.SameReplicas)
		res, err := s.scanSpan(l, rv.Replicas(span.Range), span, max(count-len(out), 1))
		if err != nil {
			if len(out) > 0 {
				return out, scan.Cursor(from), nil
			}
			return nil, 0, err
		}
		out = append(out, res.Rows...)
		for i := range res.Rows { // as a read's row (getAt): a write after the scan lands above
			s.clock.observe(res.Rows[i].Row.Newest())
		}
		next := scan.After(res.Through)
		if next == 0 || len(out) >= count {
			return out, next, nil
		}
		from = scan.From(next)
	}
	return out, scan.Cursor(from), nil
}

// scanSpan reads span from a quorum of its replica set at level, want rows or about, and
// merges the pages; pages that stop inside the span's first token (more keys share it
// than a page holds) are completed through it first.
func (s *clusterStore) scanSpan(level coord.Level, set []coord.Replica, span scan.Span, want int) (scan.Result, error) {
	ask, spares, err := scan.Ask(set, level)
	if err != nil {
		return scan.Result{}, fmt.Errorf("node: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.Timeout())
	defer cancel()
	kr := span.Keys()
	// One more row than wanted: the last token of a full page is left to the next page.
	req := &wire.ScanRequest{Lo: kr.Lo, Hi: kr.Hi, Rows: min(want+1, wire.MaxScanRows), Bytes: scanPageBytes}
	from, pages, err := s.scanQuorum(ctx, ask, spares, req)
	if err != nil {
		return scan.Result{}, err
	}
	for {
		res, err := scan.Merge(span, pages)
		if err != nil || len(res.Short) == 0 {
			return res, err
		}
		for _, i := range res.Short {
			if err := s.completePage(ctx, from[i], &pages[i], span); err != nil {
				return scan.Result{}, err
			}
		}
	}
}

// pageAnswer is one replica's answer to a page request.
type pageAnswer struct {
	from ring.NodeID
	page scan.Page
	err  error
}

// scanQuorum sends req to every replica of ask and returns the pages of len(ask) of them:
// a replica that fails is replaced by the next spare. It fails with coord.ErrTimeout at
// ctx's deadline, and with coord.ErrUnavailable once too few replicas are left.
func (s *clusterStore) scanQuorum(ctx context.Context, ask, spares []ring.NodeID, req *wire.ScanRequest) ([]ring.NodeID, []scan.Page, error) {
	payload := wire.AppendScanReadRequest(nil, req)
	answers := make(chan pageAnswer, len(ask)+len(spares)) // one per request: sends never block
	send := func(id ring.NodeID) {
		s.send(ctx, id, wire.MethodScanRead, payload, func(b []byte, err error) {
			p, err := decodePage(b, err)
			answers <- pageAnswer{from: id, page: p, err: err}
		})
	}
	for _, id := range ask {
		send(id)
	}
	from, pages := make([]ring.NodeID, 0, len(ask)), make([]scan.Page, 0, len(ask))
	var errs []error
	for out := len(ask); len(pages) < len(ask); {
		var a pageAnswer
		select {
		case a = <-answers:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("node: scan: %d of %d replicas answered in time: %w", len(pages), len(ask), coord.ErrTimeout)
		}
		out--
		if a.err == nil {
			from, pages = append(from, a.from), append(pages, a.page)
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", a.from, a.err))
		switch {
		case len(spares) > 0:
			send(spares[0])
			spares, out = spares[1:], out+1
		case out+len(pages) < len(ask):
			return nil, nil, fmt.Errorf("node: scan: %w: %w", coord.ErrUnavailable, errors.Join(errs...))
		}
	}
	return from, pages, nil
}

// completePage appends to p, read from replica id, the rest of the keys of span's first
// token, then marks it complete through that token (scan.Complete).
func (s *clusterStore) completePage(ctx context.Context, id ring.NodeID, p *scan.Page, span scan.Span) error {
	c, err := s.peer(id)
	if err != nil {
		return fmt.Errorf("node: scan: %w", err)
	}
	for next := p.Next; next != nil; {
		b, err := c.Call(ctx, wire.MethodScanRead, wire.AppendScanReadRequest(nil, &wire.ScanRequest{
			Lo: next, Hi: scan.TokenEnd(span.From), Rows: wire.MaxScanRows, Bytes: scanPageBytes}))
		more, err := decodePage(b, err)
		if err != nil {
			return fmt.Errorf("node: scan: %s: %w", id, err)
		}
		p.Rows = append(p.Rows, more.Rows...)
		next = more.Next
	}
	p.Next = scan.Complete(span)
	return nil
}

// errScanUnsupported names a replica that does not know wire.MethodScanRead.
var errScanUnsupported = errors.New("node: replica runs an older kura that serves no client scans (internode method 6): upgrade it")

// decodePage decodes a replica's answer to a page request.
func decodePage(b []byte, err error) (scan.Page, error) {
	var re *transport.RemoteError
	if errors.As(err, &re) && strings.Contains(re.Message, "unknown method") {
		return scan.Page{}, fmt.Errorf("%w (%w)", errScanUnsupported, err)
	}
	if err != nil {
		return scan.Page{}, err
	}
	r, err := wire.DecodeScanResponse(b)
	if err != nil {
		return scan.Page{}, fmt.Errorf("node: scan response: %w", err)
	}
	return scan.Page{Rows: r.Rows, Next: r.Next}, nil
}

// localStore is the resp.Store of a node outside a cluster: its engine, which holds
// clients' keys as they are, in key order. Its Scanner makes one pass over the engine per
// page (scan.Selector), keeping the keys of the lowest tokens from the cursor on, so
// that a cursor means what it means in a cluster.
type localStore struct{ engine.Engine }

// Bounds of a single node's page: each page costs a pass over the whole engine, so a
// page holds at least a singlePageShare-th of the node's rows (up to singlePageMax),
// whatever COUNT asks, and a whole scan costs a few dozen passes, not rows/COUNT.
const (
	singlePageShare = 32
	singlePageMax   = 1 << 16
)

// Scan implements resp.Scanner; level is ignored.
func (l localStore) Scan(_ string, cursor uint64, count int) ([]row.Mutation, uint64, error) {
	n := max(count, int(min(l.Stats().RowsEstimate/singlePageShare, singlePageMax)))
	from := scan.From(cursor)
	sel := scan.NewSelector(from, n)
	if err := l.pass(sel); err != nil {
		return nil, 0, err
	}
	rows, through, stuck := sel.Result()
	if stuck {
		sel = scan.Whole(from)
		if err := l.pass(sel); err != nil {
			return nil, 0, err
		}
		rows, through, _ = sel.Result()
	}
	return rows, scan.After(through), nil
}

// pass offers every row of the engine to sel.
func (l localStore) pass(sel *scan.Selector) error {
	it, err := l.NewIterator(nil, nil)
	if err != nil {
		return fmt.Errorf("node: scan: %w", err)
	}
	defer it.Close()
	for it.Next() {
		r := it.Row()
		sel.Add(ring.TokenOf(it.Key()), it.Key(), &r)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("node: scan: %w", err)
	}
	return nil
}

// keysEstimate answers DBSIZE and INFO keyspace. A single node counts its engine's rows
// (exact as the engine says). A cluster node estimates the whole cluster's keys from its
// own rows and the share of the token space it replicates (rows / share): never exact,
// since replicas differ until repaired and ownership is not even.
func (n *Node) keysEstimate() (int64, bool) {
	st := n.eng.Stats()
	c := n.clusterP.Load()
	if c == nil {
		return st.RowsEstimate, st.Exact
	}
	share := c.machine.RingView().ReplicatedShare(c.self)
	if share <= 0 {
		return 0, false
	}
	return int64(math.Round(float64(st.RowsEstimate) / share)), false
}
