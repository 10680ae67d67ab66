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
