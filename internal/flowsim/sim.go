package flowsim

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// LinkID names a link: its index in Config.Links.
type LinkID int32

// FlowID names a flow: Start hands them out in order from 0.
type FlowID int32

// Link is a shared resource with a capacity: a disk's read or write side, a NIC's send or
// receive side, a rack's uplink or downlink.
type Link struct {
	// Name labels the link in the timeline's CSV; it need not be unique.
	Name string
	// CapacityBytesPerSecond is what all the flows crossing the link may carry together; it
	// must be positive and finite.
	CapacityBytesPerSecond float64
}

// Flow is a transfer of SizeBytes over every link of Route at once.
type Flow struct {
	// SizeBytes is the amount to move; zero is allowed (the flow completes at once).
	SizeBytes float64
	// Route lists the links the flow crosses, each at most once, in any order. Start copies it.
	Route []LinkID
}

// Config describes the links and what to record.
type Config struct {
	// Links are the resources flows share; LinkID i is Links[i].
	Links []Link
	// Timeline records, after every recomputation, the new rate of every link whose rate
	// changed (see Timeline and WriteTimelineCSV). Off by default: a 1,000-node join records
	// millions of samples.
	Timeline bool
}

// Errors returned by New and Start.
var (
	ErrBadLink = errors.New("flowsim: bad link")
	ErrBadFlow = errors.New("flowsim: bad flow")
)

// Sim is the simulator. It is not safe for concurrent use.
type Sim struct {
	links    []linkState
	flows    []flowState
	now      float64
	active   int
	finishes minHeap // active flows by predicted completion time

	// What changed since the last solve: flows started, and the links of flows that finished.
	added []FlowID
	freed []LinkID
	dirty bool

	solver solver

	record    bool
	timeline  []Sample
	lastIndex []int32 // per link, its latest sample in timeline, or -1

	// full makes every solve a solve from scratch of all active flows (tests compare it with
	// the incremental solve).
	full bool
}

type linkState struct {
	name     string
	capacity float64
	flows    []FlowID // active flows crossing the link, in no particular order
	load     float64  // sum of the rates of flows, as of the last solve that touched the link
	// tight is load >= capacity within tightTolerance as of the last solve that touched the
	// link: a link on which some flow may be bottlenecked (solve.go says why that matters).
	tight bool
	bytes float64 // bytes of flows that finished crossing it
}

type flowState struct {
	size      float64
	route     []LinkID
	pos       []int32 // pos[i]: the flow's index in links[route[i]].flows
	rate      float64 // bytes per second since last
	remaining float64 // bytes left at time last
	last      float64
	start     float64
	end       float64
	active    bool
}

// New returns a simulator at time 0 with no flows.
func New(cfg Config) (*Sim, error) {
	s := &Sim{links: make([]linkState, len(cfg.Links)), record: cfg.Timeline}
	for i, l := range cfg.Links {
		c := l.CapacityBytesPerSecond
		if !(c > 0) || math.IsInf(c, 1) {
			return nil, fmt.Errorf("%w: link %d (%q) has capacity %v bytes/s", ErrBadLink, i, l.Name, c)
		}
		s.links[i].name, s.links[i].capacity = l.Name, c
	}
	s.solver.init(len(cfg.Links))
	if s.record {
		s.lastIndex = make([]int32, len(cfg.Links))
		for i := range s.lastIndex {
			s.lastIndex[i] = -1
		}
	}
	return s, nil
}

// Start begins f at the current time and returns its id. The rates of the flows it shares
// links with are recomputed at the next call that needs them (Step, Next, Run, Rate).
func (s *Sim) Start(f Flow) (FlowID, error) {
	if !(f.SizeBytes >= 0) || math.IsInf(f.SizeBytes, 1) {
		return -1, fmt.Errorf("%w: size %v bytes", ErrBadFlow, f.SizeBytes)
	}
	if len(f.Route) == 0 {
		return -1, fmt.Errorf("%w: empty route", ErrBadFlow)
	}
	for i, l := range f.Route {
		if l < 0 || int(l) >= len(s.links) {
			return -1, fmt.Errorf("%w: route names link %d of %d", ErrBadFlow, l, len(s.links))
		}
		if slices.Contains(f.Route[:i], l) {
			return -1, fmt.Errorf("%w: route crosses link %d twice", ErrBadFlow, l)
		}
	}
	id := FlowID(len(s.flows))
	fs := flowState{
		size: f.SizeBytes, route: slices.Clone(f.Route), pos: make([]int32, len(f.Route)),
		remaining: f.SizeBytes, last: s.now, start: s.now, end: math.NaN(), active: true,
	}
	for i, l := range fs.route {
		fs.pos[i] = int32(len(s.links[l].flows))
		s.links[l].flows = append(s.links[l].flows, id)
	}
	s.flows = append(s.flows, fs)
	s.active++
	s.added = append(s.added, id)
	s.dirty = true
	return id, nil
}

// completionTolerance: flows whose predicted completion times lie within this fraction of the
// current time of the earliest one complete together, at the earliest one's time. It absorbs
// the rounding of flows that finish at the same instant in exact arithmetic.
const completionTolerance = 1e-9

// Step advances the clock to the next instant at which flows complete, if that is no later
// than untilSeconds (within completionTolerance), and returns the flows that completed then
// (in id order); otherwise it advances the clock to untilSeconds (never backwards) and
// returns none. Every call that returns flows completes at least one, so a driver loop
// always makes progress.
func (s *Sim) Step(untilSeconds float64) (nowSeconds float64, done []FlowID) {
	s.solve()
	if s.finishes.len() == 0 || s.finishes.min().key > untilSeconds+completionTolerance*untilSeconds {
		if untilSeconds > s.now && !math.IsInf(untilSeconds, 1) {
			s.now = untilSeconds
		}
		return s.now, nil
	}
	// A completion within the tolerance after untilSeconds happens at untilSeconds, so that
	// the rounding of its predicted time does not decide on which side of a driver's deadline
	// it falls.
	t := min(max(s.finishes.min().key, s.now), max(untilSeconds, s.now))
	limit := t + completionTolerance*t
	for s.finishes.len() > 0 && s.finishes.min().key <= limit {
		done = append(done, FlowID(s.finishes.pop().id))
	}
	s.now = t
	slices.Sort(done)
	for _, id := range done {
		s.finish(id)
	}
	return s.now, done
}

// Next advances to the next instant at which flows complete and returns them; with no active
// flow it returns the current time and none.
func (s *Sim) Next() (nowSeconds float64, done []FlowID) { return s.Step(math.Inf(1)) }

// Run advances until no flow is active and returns the time the last one completed.
func (s *Sim) Run() (nowSeconds float64) {
	for s.active > 0 {
		s.Next()
	}
	return s.now
}

// finish removes a completed flow from its links.
func (s *Sim) finish(id FlowID) {
	f := &s.flows[id]
	f.active, f.end, f.remaining, f.last = false, s.now, 0, s.now
	for i, l := range f.route {
		ls := &s.links[l]
		last := len(ls.flows) - 1
		if p := f.pos[i]; int(p) != last {
			moved := ls.flows[last]
			ls.flows[p] = moved
			s.flows[moved].pos[slices.Index(s.flows[moved].route, l)] = p
		}
		ls.flows = ls.flows[:last]
		ls.load -= f.rate
		ls.bytes += f.size
		s.freed = append(s.freed, l)
	}
	s.active--
	s.dirty = true
}

// Now returns the current simulated time in seconds.
func (s *Sim) Now() float64 { return s.now }

// Active returns the number of flows started and not completed.
func (s *Sim) Active() int { return s.active }

// Rate returns the flow's current rate in bytes per second (0 once it completed).
func (s *Sim) Rate(id FlowID) float64 {
	s.solve()
	if !s.flows[id].active {
		return 0
	}
	return s.flows[id].rate
}

// Times returns when the flow started and completed, in seconds; end is NaN while it is
// active.
func (s *Sim) Times(id FlowID) (startSeconds, endSeconds float64) {
	return s.flows[id].start, s.flows[id].end
}

// LinkBytes returns the bytes the link has carried up to now: all of every completed flow
// that crossed it, and what the active ones crossing it have moved so far.
func (s *Sim) LinkBytes(l LinkID) float64 {
	s.solve()
	b := s.links[l].bytes
	for _, id := range s.links[l].flows {
		f := &s.flows[id]
		b += f.size - max(f.remaining-f.rate*(s.now-f.last), 0)
	}
	return b
}

// LinkRate returns the sum of the rates of the flows crossing the link, in bytes per second.
func (s *Sim) LinkRate(l LinkID) float64 {
	s.solve()
	return s.links[l].load
}
