package route

import "time"

// Pace paces one coordinator's asynchronous writes (coord.SendWrite.Async) to one replica:
// background traffic that yields before it slows anything else down, in the manner of
// LEDBAT's congestion control.
//
// Two limits, both reported by Ready: a rate (a token bucket holding at most a tenth of a
// second's worth), and a window of unanswered writes (MaxInFlight). The rate is what
// adapts, additive increase and multiplicative decrease: each timely answer adds
// Increase/rate, so that while nothing is congested the rate grows by Increase writes a
// second every second; congestion halves it, at most once per Span (default Target) so
// that one burst of late answers counts once. Congestion is an answer from the replica later than
// Target or a failure (Answered), or a sign from elsewhere (Congested): the driver
// reports a synchronous replica on the same host answering late.
//
// A replica whose pace is not Ready is Backlogged (coord.Replica): EngineAware defers its
// writes to hints, which the node replays as the pace allows.
//
// Why a rate and not only a window: a B+tree larger than its memory answers a write from
// the page cache in microseconds and pays for it later, when its dirty pages are written
// back and synced, in random writes on the disk it shares with the write-optimized
// replica, whose flushes then stall (docs/benchmarks.md at 77be0fa, the HDD runs of issue 5). A
// window bounds what is unanswered, which is little while answers are fast; the rate
// bounds the work sent, and the co-hosted replicas' response times say when it is too
// much.
//
// Not safe for concurrent use: Pacer holds a lock around each replica's.
type Pace struct {
	Target      time.Duration // answers slower than this are congestion; > 0
	Span        time.Duration // the rate halves at most once per Span; default Target
	MinRate     float64       // writes per second the rate never falls below; default 1
	MaxRate     float64       // nor rises above; default 100,000
	Increase    float64       // rate growth per second without congestion; default DefaultPaceIncrease
	MaxInFlight int           // most unanswered writes; default DefaultPaceWindow

	rate     float64
	tokens   float64
	refilled time.Time
	inFlight int
	lastCut  time.Time
}

// Defaults of Pace.
const (
	DefaultPaceRate     = 1000 // writes per second at first
	DefaultPaceIncrease = 100  // writes per second, per second
	DefaultPaceWindow   = 64
)

func (p *Pace) init(now time.Time) {
	if p.rate != 0 {
		return
	}
	if p.MinRate <= 0 {
		p.MinRate = 1
	}
	if p.MaxRate <= 0 {
		p.MaxRate = 100_000
	}
	if p.Increase <= 0 {
		p.Increase = DefaultPaceIncrease
	}
	if p.MaxInFlight <= 0 {
		p.MaxInFlight = DefaultPaceWindow
	}
	if p.Span <= 0 {
		p.Span = p.Target
	}
	p.rate = min(max(DefaultPaceRate, p.MinRate), p.MaxRate)
	p.tokens, p.refilled = p.burst(), now
}

// burst is the bucket's size: a tenth of a second at the current rate, at least one.
func (p *Pace) burst() float64 { return max(p.rate/10, 1) }

func (p *Pace) refill(now time.Time) {
	p.init(now)
	if d := now.Sub(p.refilled); d > 0 {
		p.tokens = min(p.tokens+d.Seconds()*p.rate, p.burst())
		p.refilled = now
	}
}

// Room returns how many writes may be sent at now.
func (p *Pace) Room(now time.Time) int {
	p.refill(now)
	return max(min(int(p.tokens), p.MaxInFlight-p.inFlight), 0)
}

// Ready reports whether a write may be sent at now; if not, the replica is Backlogged.
func (p *Pace) Ready(now time.Time) bool { return p.Room(now) > 0 }

// Sent counts n writes sent at now. The driver sends only while Ready, but writes
// planned just before others took the room may overdraw it by a few.
func (p *Pace) Sent(n int, now time.Time) {
	p.refill(now)
	p.tokens -= float64(n)
	p.inFlight += n
}

// Answered takes the answer to one write counted by Sent: its response time and whether
// it failed, at now.
func (p *Pace) Answered(took time.Duration, failed bool, now time.Time) {
	p.init(now)
	if p.inFlight > 0 {
		p.inFlight--
	}
	if failed || took > p.Target {
		p.Congested(now)
		return
	}
	p.rate = min(p.rate+p.Increase/p.rate, p.MaxRate)
}

// Congested halves the rate, unless it was halved less than Span ago.
func (p *Pace) Congested(now time.Time) {
	p.refill(now)
	if !p.lastCut.IsZero() && now.Sub(p.lastCut) < p.Span {
		return
	}
	p.rate = max(p.rate/2, p.MinRate)
	p.tokens = min(p.tokens, p.burst())
	p.lastCut = now
}

// Rate returns the current rate in writes per second, for metrics.
func (p *Pace) Rate() float64 { return p.rate }

// InFlight returns how many writes are unanswered.
func (p *Pace) InFlight() int { return p.inFlight }
