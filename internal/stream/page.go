package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// errBadPage marks a page that arrived but did not decode: its checksum did not match
// (wire.ErrChecksum) or its bytes were malformed. It is asked again.
var errBadPage = errors.New("stream: bad page")

// pager asks sources for scan pages, each in the newest scan version it speaks. Safe for
// concurrent use.
//
// A source that predates wire.ScanVersion answers a version 2 request with an error
// naming wire.ErrVersion (an old decoder's); the pager then asks it again at once in
// version 1 and keeps doing so, until an ask of that source fails otherwise (it may have
// restarted upgraded). Version 1 pages carry no checksum, and an old source does not
// pace them by its send limit.
type pager struct {
	source  func(ring.NodeID) (Caller, error)
	timeout time.Duration

	mu  sync.Mutex
	old map[ring.NodeID]bool // sources asked in version 1
}

func newPager(source func(ring.NodeID) (Caller, error), timeout time.Duration) *pager {
	return &pager{source: source, timeout: timeout, old: map[ring.NodeID]bool{}}
}

// fetch asks src for one page of req (whose Version it sets) and returns it with its
// encoded size. The page's rows alias the response, which the caller owns. An error is
// the source's (unreachable, reset, timed out, its handler failed), ctx's, or wraps
// errBadPage.
func (p *pager) fetch(ctx context.Context, src ring.NodeID, req wire.ScanRequest) (wire.ScanResponse, int, error) {
	c, err := p.source(src)
	if err != nil {
		return wire.ScanResponse{}, 0, err
	}
	old := p.isOld(src)
	b, err := p.call(ctx, c, req, old)
	if err != nil && !old && isVersionRefusal(err) {
		p.setOld(src, true)
		old = true
		b, err = p.call(ctx, c, req, true)
	}
	if err != nil {
		if old && !isVersionRefusal(err) {
			p.setOld(src, false)
		}
		return wire.ScanResponse{}, 0, err
	}
	resp, err := wire.DecodeScanResponse(b)
	if err != nil {
		return wire.ScanResponse{}, 0, fmt.Errorf("%w from %s: %w", errBadPage, src, err)
	}
	return resp, len(b), nil
}

func (p *pager) call(ctx context.Context, c Caller, req wire.ScanRequest, old bool) ([]byte, error) {
	req.Version = wire.ScanVersion
	if old {
		req.Version = wire.Version
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return c.Call(ctx, wire.MethodScan, wire.AppendScanRequest(nil, &req))
}

// isVersionRefusal reports whether err is a source's refusal of the request's version:
// wire.ErrVersion itself from a caller in the same process, or its text in a remote
// error (a *transport.RemoteError carries the handler's message, not its chain).
func isVersionRefusal(err error) bool {
	return errors.Is(err, wire.ErrVersion) || strings.Contains(err.Error(), wire.ErrVersion.Error())
}

func (p *pager) isOld(src ring.NodeID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.old[src]
}

func (p *pager) setOld(src ring.NodeID, old bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old {
		p.old[src] = true
	} else {
		delete(p.old, src)
	}
}
