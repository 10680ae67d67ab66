package lsm

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/lowprio"
)

// lowPriorityScheduler is a pebble.CompactionScheduler that runs as many compactions at
// once as pebble's default one (the DB's GetAllowedWithoutPermission, sampled when asked,
// on every flush and every 100 ms) and lowers the threads they run on to the lowest CPU
// priority (lowprio.LowerThisThread): a compaction's goroutines, its own and each output
// table's block writer, call the grant handle (Started, then MeasureCPU every 128 keys or
// every block), and each lowers its thread at its first call. Pebble starts a goroutine
// per compaction and per table writer, which ends with it, so the lowered threads end
// with them (see package lowprio). Flushes are lowered apart from it (eventListener).
//
// Granting follows pebble's ConcurrencyLimitScheduler, simplified: only the scheduler's
// own goroutine grants (after a poke from Done or UpdateGetAllowedWithoutPermission, or
// its tick), and it calls into the DB without holding its mutex, as pebble's lock order
// requires (the DB's mutexes before the scheduler's).
type lowPriorityScheduler struct {
	mu      sync.Mutex
	db      pebble.DBForCompaction
	running int
	closed  bool
	poke    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

var _ pebble.CompactionScheduler = (*lowPriorityScheduler)(nil)

func newLowPriorityScheduler() *lowPriorityScheduler {
	return &lowPriorityScheduler{poke: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

func (s *lowPriorityScheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go s.loop()
}

func (s *lowPriorityScheduler) Unregister() {
	s.mu.Lock()
	s.closed = true // no grant from now on
	s.mu.Unlock()
	close(s.stop)
	<-s.stopped // and none in flight
}

// TrySchedule is called with the DB's mutex held: it takes only its own.
func (s *lowPriorityScheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.db.GetAllowedWithoutPermission() <= s.running {
		return false, nil
	}
	s.running++
	return true, lowGrant{s}
}

func (s *lowPriorityScheduler) UpdateGetAllowedWithoutPermission() { s.wake() }

func (s *lowPriorityScheduler) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

func (s *lowPriorityScheduler) loop() {
	defer close(s.stopped)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.poke:
		}
		s.grant()
	}
}

// grant starts waiting compactions while the DB allows more than are running.
func (s *lowPriorityScheduler) grant() {
	for {
		s.mu.Lock()
		room := !s.closed && s.db.GetAllowedWithoutPermission() > s.running
		if room {
			s.running++ // before Schedule: the compaction may be done before it returns
		}
		s.mu.Unlock()
		if !room {
			return
		}
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting || !s.db.Schedule(lowGrant{s}) {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
			return
		}
	}
}

// lowGrant is a compaction's grant handle.
type lowGrant struct{ s *lowPriorityScheduler }

// Started is called on the compaction's goroutine as it starts: it lowers its thread.
func (lowGrant) Started() { lowprio.LowerThisThread() }

// MeasureCPU is called on each of the compaction's goroutines: it lowers its thread.
func (lowGrant) MeasureCPU(pebble.CompactionGoroutineKind) { lowprio.LowerThisThread() }

func (lowGrant) CumulativeStats(pebble.CompactionGrantHandleStats) {}

func (g lowGrant) Done() {
	g.s.mu.Lock()
	g.s.running--
	g.s.mu.Unlock()
	g.s.wake()
}
