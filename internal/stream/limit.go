package stream

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// Limiter paces bytes to a rate in bytes per second: a node's receive limit, shared by all
// the transfers it runs (Config.Receive), or its send limit, shared by every stream page it
// serves (replica.Handler.StreamPacer). It is a token bucket (golang.org/x/time/rate)
// whose burst is a twentieth of a second at the limit, at least 64 KiB: after a pause, that
// much goes at once. Safe for concurrent use.
type Limiter struct {
	l *rate.Limiter
}

// minBurstBytes is the smallest burst: a page waits in chunks of at most the burst, and
// chunks much smaller than a page would only cost wake-ups.
const minBurstBytes = 64 << 10

// NewLimiter returns a limiter of bytesPerSecond; 0 (or less) is unlimited.
func NewLimiter(bytesPerSecond int64) *Limiter {
	l := &Limiter{l: rate.NewLimiter(rate.Inf, minBurstBytes)}
	l.SetLimit(bytesPerSecond)
	return l
}

// SetLimit changes the limit at once, for waits that start from now on (a chunk already
// waiting keeps its time: at most a burst's worth at the old limit); 0 (or less) is
// unlimited.
func (l *Limiter) SetLimit(bytesPerSecond int64) {
	if bytesPerSecond <= 0 {
		l.l.SetLimit(rate.Inf)
		return
	}
	l.l.SetBurst(burstBytes(bytesPerSecond))
	l.l.SetLimit(rate.Limit(bytesPerSecond))
}

func burstBytes(bytesPerSecond int64) int {
	return int(max(bytesPerSecond/20, minBurstBytes))
}

// Limit returns the limit in bytes per second, 0 when unlimited. A nil Limiter is
// unlimited.
func (l *Limiter) Limit() int64 {
	if l == nil || l.l.Limit() == rate.Inf {
		return 0
	}
	return int64(l.l.Limit())
}

// Wait blocks until n more bytes may pass, or until ctx ends (then it returns ctx's error
// and gives back what it had not waited for yet). It waits in chunks of at most the burst,
// so a page larger than the burst waits its full time rather than failing. A nil Limiter
// never waits.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	for n > 0 {
		c := min(n, l.l.Burst())
		r := l.l.ReserveN(time.Now(), c)
		if !r.OK() {
			continue // the burst shrank under a concurrent SetLimit: take a smaller chunk
		}
		if d := r.Delay(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				r.Cancel()
				return ctx.Err()
			}
		}
		n -= c
	}
	return nil
}
