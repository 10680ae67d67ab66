package move

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// Scheduler chooses, for every copy of a recovery, a source and a destination, and says in
// what order and how many at once the copies run. Schedulers are deterministic functions of
// the recovery (and of the *rand.Rand a randomized one is built with).
type Scheduler interface {
	// Name is what reports call the scheduler ("kura", "hdfs", "ring", "ring-priority").
	Name() string
	// Schedule returns the schedule of r; the Schedule is the caller's.
	Schedule(r *Recovery) (*Schedule, error)
}

// Assignment is one copy's source and destination.
type Assignment struct {
	Copy        int // index into Recovery.Copies
	Source      ring.NodeID
	Destination ring.NodeID
}

// Streams limits how many copies run at once: Send of those leaving, Receive of those
// entering (a node, or a rack across its uplink). Zero is no limit.
type Streams struct {
	Send, Receive int
}

// Schedule is a recovery's plan: every copy's source and destination, the order in which
// they start, and how many may run at once. An executor (the node's streamer, or
// internal/movesim) starts, whenever a copy completes and at the start, every copy not yet
// started, in Order, whose source, destination and (between racks) racks are all below
// their limits.
type Schedule struct {
	Scheduler string
	Order     []Assignment
	// Streams are per-node limits; a node absent uses Default.
	Streams map[ring.NodeID]Streams
	Default Streams
	// RackStreams limit the copies between racks: Send those leaving the rack at once,
	// Receive those entering it. A rack absent is not limited.
	RackStreams map[string]Streams
}

// NodeStreams returns node id's limits.
func (s *Schedule) NodeStreams(id ring.NodeID) Streams {
	if st, ok := s.Streams[id]; ok {
		return st
	}
	return s.Default
}

// ErrInvalidSchedule is wrapped by the errors Check returns.
var ErrInvalidSchedule = errors.New("move: invalid schedule")

// Check returns an error unless s assigns every copy of r exactly once, from one of its
// sources, to a live node that keeps the placement rules with the copy's peers and the
// other new replicas of its range (the rack and role rules only where the copy is not
// Relaxed), and gives no node more than its free bytes.
func Check(r *Recovery, s *Schedule) error {
	seen := make([]bool, len(r.Copies))
	chosen := map[int][]int{} // group to the destinations chosen for it
	received := make([]int64, len(r.Fabric.Nodes))
	for _, a := range s.Order {
		if a.Copy < 0 || a.Copy >= len(r.Copies) || seen[a.Copy] {
			return fmt.Errorf("%w: copy %d assigned twice or unknown", ErrInvalidSchedule, a.Copy)
		}
		seen[a.Copy] = true
		c := r.Copies[a.Copy]
		src, ok1 := r.index[a.Source]
		dst, ok2 := r.index[a.Destination]
		switch {
		case !ok1 || !slices.Contains(r.sources[a.Copy], src):
			return fmt.Errorf("%w: copy %d (%s) from %s, not a live peer %v", ErrInvalidSchedule, a.Copy, c.Range, a.Source, c.Sources)
		case !ok2 || !r.live[dst]:
			return fmt.Errorf("%w: copy %d (%s) to %s, which is not a live node", ErrInvalidSchedule, a.Copy, c.Range, a.Destination)
		case !r.allows(append(slices.Clone(r.peers[a.Copy]), chosen[c.Group]...), dst, !c.Relaxed):
			return fmt.Errorf("%w: copy %d (%s) to %s breaks the placement rules with %v", ErrInvalidSchedule, a.Copy, c.Range, a.Destination, c.Peers)
		}
		chosen[c.Group] = append(chosen[c.Group], dst)
		received[dst] += c.Bytes
		if received[dst] > r.Fabric.Nodes[dst].FreeBytes {
			return fmt.Errorf("%w: %s receives %d bytes, more than its %d free", ErrInvalidSchedule, a.Destination, received[dst], r.Fabric.Nodes[dst].FreeBytes)
		}
	}
	for i, ok := range seen {
		if !ok {
			return fmt.Errorf("%w: copy %d (%s) is not assigned", ErrInvalidSchedule, i, r.Copies[i].Range)
		}
	}
	return nil
}

// Transfers returns the schedule's copies as the planner's transfers, in Order.
func (s *Schedule) Transfers(r *Recovery) []Transfer {
	out := make([]Transfer, len(s.Order))
	for k, a := range s.Order {
		c := r.Copies[a.Copy]
		out[k] = Transfer{Range: c.Range, Source: a.Source, Destination: a.Destination, Bytes: c.Bytes}
	}
	return out
}

// Rehome returns the schedule's destinations as Plan's Rehome: a range of the recovery gets
// its peers and the destinations of its copies, a range it could not serve (Recovery.Short)
// its peers alone; any other range, the target ring's placement. Planning r's change with it moves exactly the schedule's copies (Plan's own
// source balancing then chooses the sources; Transfers has the schedule's).
func (s *Schedule) Rehome(r *Recovery) Rehome {
	sets := map[Range][]ring.NodeID{}
	for _, nd := range r.Short {
		sets[nd.Range] = slices.Clone(nd.Peers)
	}
	for _, a := range s.Order {
		c := r.Copies[a.Copy]
		if _, ok := sets[c.Range]; !ok {
			sets[c.Range] = slices.Clone(c.Peers)
		}
		sets[c.Range] = append(sets[c.Range], a.Destination)
	}
	return rehomed(sets)
}

type rehomed map[Range][]ring.NodeID

func (h rehomed) NewReplicas(rg Range, _, target []ring.NodeID) []ring.NodeID {
	if set, ok := h[rg]; ok {
		return set
	}
	return target
}

// Load is what a schedule asks of the fabric, whatever the order: the seconds each node's
// sends, receives and each rack's uplink and downlink take at full rate, and the largest.
type Load struct {
	Send, Receive map[ring.NodeID]float64
	Up, Down      map[string]float64
	// Seconds is the largest: no execution of the schedule is faster.
	Seconds float64
	// Sent and Received are the bytes per node.
	Sent, Received map[ring.NodeID]int64
}

// LoadOf returns s's load on r's fabric.
func LoadOf(r *Recovery, s *Schedule) Load {
	l := Load{Send: map[ring.NodeID]float64{}, Receive: map[ring.NodeID]float64{}, Up: map[string]float64{}, Down: map[string]float64{},
		Sent: map[ring.NodeID]int64{}, Received: map[ring.NodeID]int64{}}
	for _, a := range s.Order {
		b := r.Copies[a.Copy].Bytes
		src, dst := r.index[a.Source], r.index[a.Destination]
		l.Sent[a.Source] += b
		l.Received[a.Destination] += b
		l.Send[a.Source] += float64(b) / r.sendBps[src]
		l.Receive[a.Destination] += float64(b) / r.recvBps[dst]
		l.Seconds = max(l.Seconds, l.Send[a.Source], l.Receive[a.Destination])
		if rs, rd := r.rack[src], r.rack[dst]; rs != rd {
			if r.upBps[rs] > 0 {
				l.Up[r.racks[rs]] += float64(b) / r.upBps[rs]
				l.Seconds = max(l.Seconds, l.Up[r.racks[rs]])
			}
			if r.downBps[rd] > 0 {
				l.Down[r.racks[rd]] += float64(b) / r.downBps[rd]
				l.Seconds = max(l.Seconds, l.Down[r.racks[rd]])
			}
		}
	}
	return l
}

// Rack returns the rack of node id, and whether the fabric has it.
func (r *Recovery) Rack(id ring.NodeID) (string, bool) {
	i, ok := r.index[id]
	if !ok {
		return "", false
	}
	return r.racks[r.rack[i]], true
}

// ErrNoDestination is returned by a scheduler when the nodes that may take a copy are all
// full of the copies it gave them before.
var ErrNoDestination = errors.New("move: no destination left for a copy")

// tracker is what a scheduler has given so far: the bytes each node receives and the
// destinations of each range's copies.
type tracker struct {
	r        *Recovery
	received []int64
	chosen   map[int][]int // group to destinations
}

func newTracker(r *Recovery) *tracker {
	return &tracker{r: r, received: make([]int64, len(r.Fabric.Nodes)), chosen: map[int][]int{}}
}

// allowed reports whether copy i may go to node d now: d is one of its candidates, has room
// for it besides what it already receives, and keeps the rules with the copies of the
// same range placed so far.
func (t *tracker) allowed(i, d int) bool {
	c := &t.r.Copies[i]
	if _, ok := slices.BinarySearch(t.r.candidates[i], int32(d)); !ok {
		return false
	}
	if t.received[d]+c.Bytes > t.r.Fabric.Nodes[d].FreeBytes {
		return false
	}
	sib := t.chosen[c.Group]
	return len(sib) == 0 || t.r.allows(append(slices.Clone(t.r.peers[i]), sib...), d, !c.Relaxed)
}

// take records copy i from s to d and returns its assignment.
func (t *tracker) take(i, s, d int) Assignment {
	c := &t.r.Copies[i]
	t.received[d] += c.Bytes
	t.chosen[c.Group] = append(t.chosen[c.Group], d)
	return Assignment{Copy: i, Source: t.r.Fabric.Nodes[s].ID, Destination: t.r.Fabric.Nodes[d].ID}
}

func (t *tracker) stuck(i int) error {
	return fmt.Errorf("%w: copy %d (%s)", ErrNoDestination, i, t.r.Copies[i].Range)
}
