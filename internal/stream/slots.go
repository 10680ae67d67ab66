package stream

import (
	"context"
	"slices"
	"sync"

	"github.com/kuradb/kura/internal/ring"
)

// slots hands a destination's Config.Concurrency transfer slots to the transfers waiting
// for one. A freed slot goes to the waiting transfer whose source has the fewest of this
// destination's transfers running, and among those to the one whose source has the most
// planned bytes still waiting here (the first to ask on a tie). A destination so draws
// from all its sources at once, each in proportion to what is left to take from it: no
// source is left alone with a long tail at the end of a change while the others idle,
// and a source's send limit, shared by every destination, is asked from all of them
// throughout. (Taken in arrival order, a change of many transfers ran 1.2 to 1.6 times
// its bound.)
type slots struct {
	mu      sync.Mutex
	free    int
	running map[ring.NodeID]int
	waiting []*slotWaiter
	// weight, when set (Streamer.SetSourceWeights), is each source's bytes left to send
	// to every destination of the change, which replaces the bytes waiting here as the
	// second criterion: every destination then asks the source with the most left in the
	// whole change first, so that the sender that bounds the change is never idle while
	// some destination has a slot.
	weight map[ring.NodeID]int64
}

type slotWaiter struct {
	src   ring.NodeID
	bytes int64
	ready chan struct{}
}

func newSlots(n int) *slots {
	return &slots{free: n, running: map[ring.NodeID]int{}}
}

// acquire waits for a slot for a transfer from src of about bytes, and returns its
// release; or ctx's error if ctx ends first.
func (s *slots) acquire(ctx context.Context, src ring.NodeID, bytes int64) (func(), error) {
	w := &slotWaiter{src: src, bytes: max(bytes, 0), ready: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	s.grant()
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.running[src]--
		if s.running[src] == 0 {
			delete(s.running, src)
		}
		s.free++
		s.grant()
		s.mu.Unlock()
	}
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	i := slices.Index(s.waiting, w)
	if i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
	s.mu.Unlock()
	if i < 0 {
		release() // granted as ctx ended: give it back
	}
	return nil, ctx.Err()
}

// setWeights sets (nil: clears) the sources' weights and re-grants.
func (s *slots) setWeights(w map[ring.NodeID]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.weight = w
	s.grant()
}

// grant gives free slots to waiting transfers, best first. Called with mu held.
func (s *slots) grant() {
	for s.free > 0 && len(s.waiting) > 0 {
		left := s.weight
		if left == nil {
			left = map[ring.NodeID]int64{}
			for _, w := range s.waiting {
				left[w.src] += w.bytes
			}
		}
		best := 0
		for i, w := range s.waiting[1:] {
			b := s.waiting[best]
			if r, rb := s.running[w.src], s.running[b.src]; r < rb || r == rb && left[w.src] > left[b.src] {
				best = i + 1
			}
		}
		w := s.waiting[best]
		s.waiting = slices.Delete(s.waiting, best, best+1)
		s.running[w.src]++
		s.free--
		close(w.ready)
	}
}
