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
