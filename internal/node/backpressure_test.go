package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// slowCaller answers through next after delay, and counts the requests it holds at once
// and the mutations it was sent.
type slowCaller struct {
	next  caller
	delay time.Duration

	mu            sync.Mutex
	held, maxHeld int
	mutations     int
}

func (s *slowCaller) Call(ctx context.Context, m uint16, p []byte) ([]byte, error) {
	s.mu.Lock()
	s.held++
	s.maxHeld = max(s.maxHeld, s.held)
	if req, err := wire.DecodeWriteRequest(p); err == nil {
		s.mutations += len(req.Mutations)
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.held--; s.mu.Unlock() }()
	time.Sleep(s.delay)
	if s.next == nil {
		return nil, nil
	}
	return s.next.Call(ctx, m, p)
}

func (s *slowCaller) Go(ctx context.Context, m uint16, p []byte, done func([]byte, error)) {
	p = append([]byte(nil), p...)
	go func() { done(s.Call(ctx, m, p)) }()
}

func (s *slowCaller) stats() (maxHeld, mutations int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxHeld, s.mutations
}

// A read-optimized replica that answers 100 ms late: with its asynchronous writes paced,
// the coordinator keeps at most a window of them on it and defers the rest to hints;
// without, every write piles onto it. Either way every write succeeds at QUORUM.
func TestAsyncWritesToASlowReplicaAreDeferredBeyondItsWindow(t *testing.T) {
	const writes = 100
	for _, paced := range []bool{true, false} {
		var slow *slowCaller
		c := heteroTestCluster(t, coord.EngineAware{}, "n2", func(p caller) caller {
			if slow == nil {
				slow = &slowCaller{next: p, delay: 100 * time.Millisecond}
			}
			return slow
		})
		if paced {
			c.store.async = newAsyncWindows(20 * time.Millisecond)
		}
		for i := range writes {
			if err := c.store.Apply([]row.Mutation{{Key: fmt.Appendf(nil, "k%d", i), Row: cell("v", 1)}}); err != nil {
				t.Fatalf("paced=%t: write %d: %v", paced, i, err)
			}
		}
		// Let the late answers in.
		time.Sleep(300 * time.Millisecond)
		maxHeld, sent := slow.stats()
		deferred := 0
		for _, id := range c.hints() {
			if id == "n2" {
				deferred++
			}
		}
		t.Logf("paced=%t: the slow replica held at most %d writes at once; %d sent, %d deferred", paced, maxHeld, sent, deferred)
		if sent+deferred != writes {
			t.Fatalf("paced=%t: %d writes sent and %d deferred to the slow replica, want %d in all", paced, sent, deferred, writes)
		}
		if paced && (maxHeld > coord.DefaultAsyncWindow || deferred == 0) {
			t.Fatalf("paced: the slow replica held %d writes at once (window %d), %d deferred", maxHeld, coord.DefaultAsyncWindow, deferred)
		}
		if !paced && (maxHeld <= coord.DefaultAsyncWindow || deferred != 0) {
			t.Fatalf("unpaced: the slow replica held at most %d writes at once, %d deferred; the test shows nothing", maxHeld, deferred)
		}
	}
}

// Hint replay to a replica whose asynchronous writes are paced takes its window: no more
// than its room per batch, nothing while it is full, and no second batch after one
// answered late. Unpaced, a round replays every batch it may.
func TestHintReplayTakesTheReplicasWindow(t *testing.T) {
	cfg := config.Default()
	cfg.AsyncWriteTarget = 20 * time.Millisecond
	hints, err := hint.Open(t.TempDir(), hint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hints.Close() })
	c := &clusterNode{cfg: cfg, hints: hints, log: slog.New(slog.DiscardHandler),
		metrics: newClusterMetrics(prometheus.NewRegistry(), hints, engine.WriteOptimized)}
	const stored = 400
	for i := range stored {
		if err := hints.Add("n2", row.Mutation{Key: fmt.Appendf(nil, "k%d", i), Row: cell("v", 1)}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	pending := func() int64 { return hints.Stats()["n2"].Hints }

	c.async = newAsyncWindows(cfg.AsyncWriteTarget)
	late := &slowCaller{delay: 50 * time.Millisecond}
	c.replayTo("n2", late)
	if _, n := late.stats(); n != coord.DefaultAsyncWindow || pending() != stored-coord.DefaultAsyncWindow {
		t.Fatalf("a late replica was replayed %d hints (%d left), want one window's worth, %d", n, pending(), coord.DefaultAsyncWindow)
	}

	answer := c.async.sent("n2", c.async.room("n2")) // the window is full of writes in flight
	fast := &slowCaller{}
	c.replayTo("n2", fast)
	if _, n := fast.stats(); n != 0 {
		t.Fatalf("%d hints replayed into a full window", n)
	}
	answer(false)
	c.replayTo("n2", fast)
	_, n := fast.stats()
	size := c.async.w["n2"].Size() // the window only grew since the halving
	t.Logf("paced, after a halving: %d hints in one round; window now %.1f", n, size)
	if n == 0 || float64(n) > hintReplayBatches*size {
		t.Fatalf("a fast replica was replayed %d hints in one round; window now %.1f, %d batches a round", n, size, hintReplayBatches)
	}

	c.async = nil
	before := pending()
	unpaced := &slowCaller{delay: 50 * time.Millisecond}
	c.replayTo("n2", unpaced)
	if _, n := unpaced.stats(); int64(n) != min(before, hintReplayBatches*hintReplayBatch) {
		t.Fatalf("unpaced: %d hints replayed in one round, want %d", n, min(before, hintReplayBatches*hintReplayBatch))
	}
}

