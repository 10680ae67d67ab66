package node

import (
	"math"
	"testing"

	"github.com/kuradb/kura/internal/stream"
)

// The stream limit as set and the elastic factor combine: the streams run at their
// product, a new limit keeps the factor, and no limit stays no limit.
func TestStreamLimitRunsAtTheLimitTimesTheElasticFactor(t *testing.T) {
	rl := &ringLog{recv: stream.NewLimiter(0), send: stream.NewLimiter(0)}
	rl.factor.Store(math.Float64bits(1))
	check := func(step string, want int64) {
		t.Helper()
		if rl.recv.Limit() != want || rl.send.Limit() != want {
			t.Fatalf("%s: receive %d, send %d bytes/s, want %d", step, rl.recv.Limit(), rl.send.Limit(), want)
		}
	}
	rl.setStreamLimit(8000)
	check("limit 8000", 8000)
	rl.applyFactor(0.25)
	check("factor 0.25", 2000)
	rl.setStreamLimit(4000)
	check("limit 4000 at factor 0.25", 1000)
	if rl.limit.Load() != 4000 {
		t.Fatalf("the limit as set reads %d, want 4000", rl.limit.Load())
	}
	rl.setStreamLimit(0)
	check("no limit", 0)
	rl.applyFactor(1)
	rl.setStreamLimit(3000)
	check("factor back to 1", 3000)
}
