package tiered

import (
	"sync"
	"sync/atomic"
	"time"
)

// minReadShare is the share of reads among the requests of the previous window under
// which writes stop counting as accesses (Options.CountWrites).
const minReadShare = 0.1

// writeGate decides whether writes count as accesses: only while reads were at least
// minReadShare of the reads and writes the engine served in the previous window of the
// tracker. A bulk load, or a node streaming its ranges from its peers, writes each row
// once and reads none: counted, its rows would fill the fast tier, each to be displaced
// by the rows clients read (a first try, docs/benchmarks.md at 77be0fa: a 70 s load filled it with
// 50,173 rows written once, and five minutes later it served under 5% of reads). Under a
// mixed workload writes count, and the hot rows are known twice as fast. The first
// window counts none (nothing is known of reads yet). Time is passed in, in
// microseconds; safe for concurrent use.
type writeGate struct {
	reads, writes atomic.Int64 // in the window that started at start
	open          atomic.Bool  // the previous window's verdict
	start         atomic.Int64 // µs; 0 before the first request

	mu sync.Mutex // held to roll the window over
}

// read counts a read at now (µs) in a window of w.
func (g *writeGate) read(now int64, w time.Duration) {
	g.roll(now, w)
	g.reads.Add(1)
}

// write counts a batch of n writes at now and reports whether they count as accesses.
func (g *writeGate) write(n int, now int64, w time.Duration) bool {
	g.roll(now, w)
	g.writes.Add(int64(n))
	return g.open.Load()
}

// roll closes the window when w has passed since it started, deciding from its counts.
// A window with no requests at all closes the gate: nothing says that reads go on.
func (g *writeGate) roll(now int64, w time.Duration) {
	start := g.start.Load()
	if start != 0 && now-start < w.Microseconds() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch start = g.start.Load(); {
	case start == 0:
		g.start.Store(now)
	case now-start >= w.Microseconds():
		reads, writes := g.reads.Swap(0), g.writes.Swap(0)
		// Requests in an earlier window than the previous one (none came meanwhile) say
		// nothing about now.
		recent := now-start < 2*w.Microseconds()
		g.open.Store(recent && reads > 0 && float64(reads) >= minReadShare*float64(reads+writes))
		g.start.Store(now)
	}
}
