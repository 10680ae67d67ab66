package bench

import (
	"fmt"
	"time"
)

// startProgress prints a status line every ProgressInterval until the returned function
// is called, which prints the last line. Progress follows the real clock: it is for
// people watching, not part of the measurement.
func (r *run) startProgress() (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(r.cfg.ProgressInterval)
		defer t.Stop()
		began, last, lastAt := time.Now(), int64(0), time.Now()
		for {
			select {
			case <-done:
				r.printProgress(began, &last, &lastAt, true)
				return
			case <-t.C:
				r.printProgress(began, &last, &lastAt, false)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func (r *run) printProgress(began time.Time, last *int64, lastAt *time.Time, final bool) {
	now := time.Now()
	done := r.rec.done.Load()
	rate := float64(done-*last) / now.Sub(*lastAt).Seconds()
	*last, *lastAt = done, now
	line := fmt.Sprintf("[%s %s] %s %s ops, %s ops/s, %d errors", r.cfg.Phase, r.cfg.Workload.Name,
		now.Sub(began).Round(time.Second), group(done), group(int64(rate)), r.rec.errs.Load())
	if r.clock.Now().Before(r.measure) {
		line += ", warming up"
	} else if eta, ok := r.eta(done, rate); ok && !final {
		line += ", ETA " + eta.Round(time.Second).String()
	}
	switch {
	case r.cfg.Live && final:
		fmt.Fprintf(r.cfg.Progress, "\r%s\033[K\n", line)
	case r.cfg.Live:
		fmt.Fprintf(r.cfg.Progress, "\r%s\033[K", line)
	default:
		fmt.Fprintln(r.cfg.Progress, line)
	}
}

// eta estimates the time left from the operation limit or the time limit, whichever
// comes first.
func (r *run) eta(done int64, rate float64) (time.Duration, bool) {
	var eta time.Duration
	ok := false
	if r.limit > 0 && rate > 0 {
		eta, ok = time.Duration(float64(r.limit-done)/rate*float64(time.Second)), true
	}
	if !r.end.IsZero() {
		left := r.end.Sub(r.clock.Now())
		if !ok || left < eta {
			eta, ok = left, true
		}
	}
	return max(eta, 0), ok
}

// group formats n with thousands separators: 1234567 -> "1,234,567".
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
