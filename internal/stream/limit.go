package stream

import (
	"context"
	"sync"
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

	mu sync.Mutex
	// credit is bytes already paid for that no bytes used: a reservation larger than the
	// page it was made for leaves the difference here, and the next waits and reservations
	// take it first, so what passes over time stays what was paid for.
	credit int64
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

// takeCredit returns how much of n the credit covers, and takes it.
func (l *Limiter) takeCredit(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := int(min(int64(n), l.credit))
	l.credit -= int64(c)
	return c
}

// addCredit gives back n bytes paid for and not used, up to a second at the limit (more
// would let a burst through after many failed asks).
func (l *Limiter) addCredit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.credit = min(l.credit+int64(n), max(l.Limit(), int64(l.l.Burst())))
}

// Reservation is bytes of a limit taken ahead of the bytes themselves (Limiter.Reserve).
type Reservation struct {
	l   *Limiter
	n   int
	due time.Time
}

// Reserve takes n bytes of the limit now and returns when they are due, without waiting.
// A destination reserves a page's bytes when it asks for the page, so that the page's
// time under the source's send limit and under its own receive limit overlap, as a byte on
// a link counts against both ends at once; waiting for one limit and then the other would
// halve the rate of a transfer limited at both ends. It reserves at most half a second
// of the limit; Settle waits for the rest of a larger page. Settle or Cancel it. A nil or
// unlimited Limiter reserves nothing and never waits; n of 0 reserves nothing, and Settle
// then waits for the page's whole size.
func (l *Limiter) Reserve(n int) Reservation {
	if l == nil || l.Limit() == 0 {
		return Reservation{}
	}
	now := time.Now()
	if n <= 0 {
		return Reservation{l: l, due: now} // Settle waits for the whole page
	}
	// At most half a second of the limit: a page shorter than its reservation leaves the
	// rest paid for, held from everyone else until its time passes (credit gets back up to
	// a second of it), so an estimate too large must not cost more than that.
	n = min(n, int(max(l.Limit()/2, int64(l.l.Burst()))))
	r := Reservation{l: l, n: n, due: now}
	for left := n - l.takeCredit(n); left > 0; {
		c := min(left, l.l.Burst())
		rr := l.l.ReserveN(now, c)
		if !rr.OK() {
			continue // the burst shrank under a concurrent SetLimit
		}
		if at := now.Add(rr.DelayFrom(now)); at.After(r.due) {
			r.due = at
		}
		left -= c
	}
	return r
}

// Settle waits until the reservation is due and then for what the page had beyond it;
// what the reservation had beyond the page goes to the limiter's credit. It returns ctx's
// error if ctx ends first.
func (r Reservation) Settle(ctx context.Context, actual int) error {
	if r.l == nil {
		return nil
	}
	if actual < r.n {
		r.l.addCredit(r.n - actual)
	}
	if d := time.Until(r.due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return r.l.Wait(ctx, actual-r.n)
}

// Cancel gives the reservation's bytes back, as credit (the limiter's own tokens cannot be
// given back once later reservations are queued behind them).
func (r Reservation) Cancel() {
	if r.l != nil && r.n > 0 {
		r.l.addCredit(r.n)
	}
}

// Wait blocks until n more bytes may pass, or until ctx ends (then it returns ctx's error
// and gives back what it had not waited for yet). It waits in chunks of at most the burst,
// so a page larger than the burst waits its full time rather than failing. A nil Limiter
// never waits.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil || n <= 0 {
		return nil
	}
	n -= l.takeCredit(n)
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
