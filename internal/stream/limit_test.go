package stream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// lowerBound is the least time b bytes can take through a limiter of l bytes per second
// that starts with a full burst, less a tenth for the timers' slack. Only lower bounds are
// asserted: this machine is shared, and an upper bound would test its load.
func lowerBound(b, l int64) time.Duration {
	return time.Duration(0.9 * float64(b-int64(burstBytes(l))) / float64(l) * float64(time.Second))
}

// Waits share a limiter: four goroutines passing 160 KiB each through 1 MiB/s take at
// least (640 KiB - the burst) / 1 MiB/s; a wait larger than the burst is not refused; the
// limit changes at run time and 0 lifts it; a cancelled wait returns its context's error;
// a nil limiter never waits.
func TestLimiterPacesSharedWaits(t *testing.T) {
	const limit = 1 << 20
	l := NewLimiter(limit)
	if l.Limit() != limit {
		t.Fatalf("limit %d", l.Limit())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = l.Wait(ctx, 160<<10) })
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if min := lowerBound(4*160<<10, limit); el < min {
		t.Fatalf("640 KiB at 1 MiB/s took %v, want at least %v", el, min)
	}
	t.Logf("640 KiB at 1 MiB/s in %v", el)

	l.SetLimit(0)
	if l.Limit() != 0 {
		t.Fatalf("limit %d after SetLimit(0)", l.Limit())
	}
	if err := l.Wait(ctx, 1<<30); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
	l.SetLimit(1) // a byte a second: the next chunk waits about a day
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := l.Wait(short, 1<<20); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	var none *Limiter
	if err := none.Wait(ctx, 1<<30); err != nil || none.Limit() != 0 {
		t.Fatalf("nil limiter: %v, limit %d", err, none.Limit())
	}
}

// A reservation takes its bytes when made and is due when the limit has passed them, so a
// page's time under the receive limit runs while the source paces it; a page smaller than
// its reservation leaves the difference as credit, which the next reservation or wait
// takes first; a cancelled reservation is credit too, up to a second at the limit; a
// reservation covers at most half a second.
func TestReservationRunsAheadAndKeepsCredit(t *testing.T) {
	const limit = 1 << 20
	l := NewLimiter(limit)
	ctx := context.Background()
	burst := burstBytes(limit)

	made := time.Now()
	r := l.Reserve(256 << 10)
	want := time.Duration(float64((256<<10)-burst) / limit * float64(time.Second))
	if got := r.due.Sub(made); got < want-5*time.Millisecond || got > want+5*time.Millisecond {
		t.Fatalf("256 KiB reserved on a full burst of %d is due after %v, want about %v", burst, got, want)
	}
	if err := r.Settle(ctx, 128<<10); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(r.due) {
		t.Fatalf("Settle returned before the reservation was due")
	}
	if l.credit != 128<<10 {
		t.Fatalf("credit %d after a page of 128 KiB settled a reservation of 256 KiB, want %d", l.credit, 128<<10)
	}
	// The credit covers the next reservation whole: due at once, and no tokens taken.
	r2 := l.Reserve(100 << 10)
	if r2.due.After(time.Now()) || l.credit != 28<<10 {
		t.Fatalf("a reservation covered by credit is due in %v with %d credit left", time.Until(r2.due), l.credit)
	}
	// A page larger than its reservation waits for the rest: here the credit covers it.
	if err := r2.Settle(ctx, 120<<10); err != nil || l.credit != 8<<10 {
		t.Fatalf("settling 120 KiB on 100 reserved: %v, credit %d, want %d", err, l.credit, 8<<10)
	}
	l.Reserve(64 << 10).Cancel()
	if l.credit != 64<<10 {
		t.Fatalf("credit %d after a cancelled reservation of 64 KiB (with 8 KiB before), want %d", l.credit, 64<<10)
	}
	if r := l.Reserve(4 << 20); r.n != limit/2 {
		t.Fatalf("a reservation of 4 MiB under 1 MiB/s took %d, want half a second of the limit (%d)", r.n, limit/2)
	}
	l.addCredit(1 << 30)
	if l.credit != limit {
		t.Fatalf("credit %d after 1 GiB given back, want it capped at a second (%d)", l.credit, limit)
	}
	unlimited := NewLimiter(0)
	if err := unlimited.Reserve(1<<30).Settle(ctx, 1<<30); err != nil || unlimited.credit != 0 {
		t.Fatalf("unlimited: %v, credit %d", err, unlimited.credit)
	}
	var none *Limiter
	if err := none.Reserve(1<<30).Settle(ctx, 1<<30); err != nil {
		t.Fatalf("nil limiter: %v", err)
	}
	none.Reserve(1).Cancel()
}
