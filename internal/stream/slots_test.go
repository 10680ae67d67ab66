package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// A freed slot goes to the waiting transfer whose source has the fewest transfers
// running, then the most bytes waiting, then the first to ask; a transfer whose context
// ends while it waits leaves the queue, and its slot count is untouched.
func TestSlotsSpreadOverSourcesAndLargestRemainderFirst(t *testing.T) {
	s := newSlots(2)
	ctx := context.Background()
	a1, err := s.acquire(ctx, "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := s.acquire(ctx, "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 8)
	releases := map[string]func(){}
	wait := func(name string, src ring.NodeID, bytes int64, ctx context.Context) chan error {
		errc := make(chan error, 1)
		n := len(s.waiting)
		go func() {
			rel, err := s.acquire(ctx, src, bytes)
			if err == nil {
				s.mu.Lock()
				releases[name] = rel
				s.mu.Unlock()
				granted <- name
			}
			errc <- err
		}()
		for { // queue them in a known order
			s.mu.Lock()
			queued := len(s.waiting) > n
			s.mu.Unlock()
			if queued {
				return errc
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("a3", "a", 100, ctx)
	wait("b1", "b", 100, ctx)
	cctx, cancel := context.WithCancel(ctx)
	gone := wait("d1", "d", 1000, cctx)
	wait("c1", "c", 100, ctx)
	wait("c2", "c", 100, ctx)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait returned %v", err)
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-granted:
			if got != want {
				t.Fatalf("slot went to %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no slot granted, want %s", want)
		}
	}
	// a runs 1; b, c run none: c has more waiting (200 against 100).
	a1()
	next("c1")
	// a runs none, b none, c 1: a3 and b1 tie on 100 B waiting; a3 asked first.
	a2()
	next("a3")
	s.mu.Lock()
	rel := releases["c1"]
	s.mu.Unlock()
	rel() // a 1, c 0, b 0: b1 (100) and c2 (100) tie; b1 asked first
	next("b1")
	s.mu.Lock()
	rel = releases["a3"]
	s.mu.Unlock()
	rel()
	next("c2")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) != 0 || s.free != 0 || s.running["b"] != 1 || s.running["c"] != 1 || s.running["d"] != 0 {
		t.Fatalf("waiting %d, free %d, running %v", len(s.waiting), s.free, s.running)
	}
}

// With the change's weights set, a freed slot among sources running as many here goes to
// the source with the most left in the whole change, not the most waiting here; setting
// weights grants at once; nil goes back to the bytes waiting here.
func TestSlotsFollowTheChangesWeights(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	hold, err := s.acquire(ctx, "x", 1)
	if err != nil {
		t.Fatal(err)
	}
	s.setWeights(map[ring.NodeID]int64{"a": 10, "b": 500})
	got := make(chan ring.NodeID, 4)
	for _, w := range []struct {
		src   ring.NodeID
		bytes int64
	}{{"a", 400}, {"b", 10}} {
		n := len(s.waiting)
		go func() {
			rel, err := s.acquire(ctx, w.src, w.bytes)
			if err == nil {
				got <- w.src
				rel()
			}
		}()
		for {
			s.mu.Lock()
			queued := len(s.waiting) > n
			s.mu.Unlock()
			if queued {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	hold() // b has 500 left in the change (10 here), a 10 (400 here): b first
	if first, second := <-got, <-got; first != "b" || second != "a" {
		t.Fatalf("granted %s then %s, want b then a", first, second)
	}
	s.setWeights(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.weight != nil || s.free != 1 {
		t.Fatalf("weights %v, free %d", s.weight, s.free)
	}
}
