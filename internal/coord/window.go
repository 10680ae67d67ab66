package coord

import "time"

// AsyncWindow paces one coordinator's asynchronous writes (SendWrite.Async) to one
// replica, as a delay-based congestion window in the manner of TCP Vegas or LEDBAT:
// background traffic that yields before it slows anything else down.
//
// The window is how many asynchronous writes may be unanswered at once. An answer within
// Target grows it by one per window's worth of answers (additive increase); an answer
// later than Target, or a failure, halves it, at most once per Target so that one burst
// of late answers counts once (multiplicative decrease). A replica whose window is full
// is Backlogged: EngineAware defers its writes to hints, which the driver replays when
// the window has room.
//
// Why: the read-optimized replica's writes are asynchronous for the client but not free
// for its host. A B+tree larger than its memory turns each one into random page reads
// and writes, and on a disk it shares with the write-optimized replica it takes the I/O
// the LSM's flushes need, until the synchronous writes stall (docs/benchmarks.md, the
// HDD runs of issue 5). Its response time is the signal that it is falling behind.
//
// Pure and not safe for concurrent use: the driver holds a lock and passes the time.
type AsyncWindow struct {
	Target time.Duration // answers slower than this shrink the window; > 0
	Min    float64       // the window never shrinks below this; default 1
	Max    float64       // nor grows beyond this; default 1024

	size     float64
	inFlight int
	lastCut  time.Time
}

// DefaultAsyncWindow is where a window starts.
const DefaultAsyncWindow = 16

func (w *AsyncWindow) init() {
	if w.Min <= 0 {
		w.Min = 1
	}
	if w.Max <= 0 {
		w.Max = 1024
	}
	if w.size == 0 {
		w.size = min(max(DefaultAsyncWindow, w.Min), w.Max)
	}
}

// Full reports whether the window has no room: the replica is Backlogged.
func (w *AsyncWindow) Full() bool {
	w.init()
	return float64(w.inFlight) >= w.size
}

// Sent counts one asynchronous write sent. The driver sends only while the window is not
// Full, but a write planned just before another filled it may overshoot by a few.
func (w *AsyncWindow) Sent() { w.init(); w.inFlight++ }

// Answered takes the answer to one write counted by Sent: its response time and whether
// it failed, at now.
func (w *AsyncWindow) Answered(took time.Duration, failed bool, now time.Time) {
	w.init()
	if w.inFlight > 0 {
		w.inFlight--
	}
	if failed || took > w.Target {
		if now.Sub(w.lastCut) >= w.Target {
			w.size = max(w.size/2, w.Min)
			w.lastCut = now
		}
		return
	}
	w.size = min(w.size+1/w.size, w.Max)
}

// Size returns the current window, for metrics.
func (w *AsyncWindow) Size() float64 { w.init(); return w.size }

// InFlight returns how many writes are unanswered.
func (w *AsyncWindow) InFlight() int { return w.inFlight }
