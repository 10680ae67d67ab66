package stream

import (
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// sources decides, for one transfer, which node to ask for the next page and how long to
// wait after a failed ask. It is plain code: no clock, no goroutine; the transfer's loop
// sleeps what it returns.
//
// The planned source is asked first. After failoverAfter failures in a row of the node
// being asked, the next of the alternatives is asked (then the planned source again, in a
// cycle); with no alternatives the planned source is asked until the caller gives up. The
// wait after the k-th failure in a row of one node is base·2^(k-1), capped at ceiling; a page
// received resets the count, and so does a switch to another node (whose first ask waits
// base). There is no jitter: transfers fail at different moments of their pages, so
// their retries do not line up.
type sources struct {
	ids           []ring.NodeID // the planned source, then the alternatives
	cur, fails    int
	base, ceiling time.Duration
	failoverAfter int
}

func newSources(src ring.NodeID, alternatives []ring.NodeID, base, ceiling time.Duration, failoverAfter int) *sources {
	ids := []ring.NodeID{src}
	for _, a := range alternatives {
		if a != src {
			ids = append(ids, a)
		}
	}
	return &sources{ids: ids, base: base, ceiling: ceiling, failoverAfter: max(failoverAfter, 1)}
}

// current is the node to ask.
func (s *sources) current() ring.NodeID { return s.ids[s.cur] }

// ok records a page received from the current node.
func (s *sources) ok() { s.fails = 0 }

// failed records a failed ask of the current node and returns how long to wait before
// the next ask (of current(), which it may have changed).
func (s *sources) failed() time.Duration {
	s.fails++
	if len(s.ids) > 1 && s.fails >= s.failoverAfter {
		s.cur, s.fails = (s.cur+1)%len(s.ids), 0
		return s.base
	}
	d := s.base
	for i := 1; i < s.fails && d < s.ceiling; i++ {
		d *= 2
	}
	return min(d, s.ceiling)
}
