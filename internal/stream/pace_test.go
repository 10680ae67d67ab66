package stream

import (
	"context"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// With a receive limit of L bytes per second at the destination, or a send limit of L at
// the source, a transfer of B bytes takes at least about B/L.
func TestLimitsPaceATransfer(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src := replicaOn(t, "memory")
	fill(t, src, rng, 3600, now) // about 800 KiB
	const limit = 512 << 10
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	for _, side := range []string{"receive", "send"} {
		t.Run(side, func(t *testing.T) {
			c := &direct{h: src}
			cfg := config(t, c, replicaOn(t, "memory"))
			cfg.PageBytes = 64 << 10
			if side == "receive" {
				cfg.Receive = NewLimiter(limit)
			} else {
				src.StreamPacer = NewLimiter(limit)
				defer func() { src.StreamPacer = nil }()
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := s.Run(context.Background(), Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}); err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			_, b := c.served()
			if min := lowerBound(b, limit); el < min {
				t.Fatalf("%d bytes under a %s limit of %d B/s took %v, want at least %v", b, side, limit, el, min)
			}
			t.Logf("%d bytes under a %s limit of %d B/s: %v (%.0f B/s)", b, side, limit, el, float64(b)/el.Seconds())
		})
	}
}

// Many transfers of a few rows each under a small receive limit finish in about the time
// their bytes take at the limit. Each first page reserves the transfer's planned bytes, not
// a whole page: reserving 1 MiB for a page of a few hundred bytes held a 128 KiB/s limit
// for 8 s a transfer, and a cluster of a few KiB took minutes to grow (the membership
// tests' clusters did not form in a minute). The bound asserted is 25 times the data's
// time at the limit plus 10 s, against the minutes the bug took.
func TestSmallTransfersUnderASmallReceiveLimitDoNotStall(t *testing.T) {
	rng := seeded(t)
	src := replicaOn(t, "memory")
	fill(t, src, rng, 48, time.Now().UnixMicro())
	const limit = 128 << 10
	c := &direct{h: src}
	cfg := config(t, c, replicaOn(t, "memory"))
	cfg.Receive = NewLimiter(limit)
	cfg.PageBytes = 1 << 20 // the node's
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for i := range 24 {
		r := rangeOf(float64(i)/24, float64(i+1)/24)
		jobs = append(jobs, Job{ID: TransferID{1, i}, Transfer: move.Transfer{Range: r, Source: "n1", Destination: "n2", Bytes: 512}})
	}
	start := time.Now()
	for i, err := range s.RunAll(context.Background(), jobs) {
		if err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
	}
	el := time.Since(start)
	_, b := c.served()
	limitTime := time.Duration(float64(b) / limit * float64(time.Second))
	t.Logf("24 transfers, %d B in all, under %d B/s: %v (%v at the limit)", b, limit, el, limitTime)
	if max := 25*limitTime + 10*time.Second; el > max {
		t.Fatalf("24 small transfers of %d B in all took %v under a %d B/s receive limit, more than %v", b, el, limit, max)
	}
}
