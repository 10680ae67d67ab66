package meta

import (
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// Placement answers where a key's token lives at one epoch: the replica sets to write
// and to read. It is built once per epoch (NewPlacement) and is immutable, so it is
// safe for concurrent use; the node hands it to its coordinators and a request carries
// its Epoch.
type Placement struct {
	Epoch    uint64
	RF       int
	Strategy ring.Strategy
	// Ring is the current ring: a token outside the change's ranges is placed by it.
	Ring   *ring.Ring
	ranges []RangeState // the change's, or nil
}

// NewPlacement returns the placement of s at its epoch.
func NewPlacement(s *State) (*Placement, error) {
	if s.Epoch == 0 {
		return nil, ErrNotBootstrapped
	}
	strategy, err := s.strategy()
	if err != nil {
		return nil, err
	}
	r, err := s.CurrentRing()
	if err != nil {
		return nil, fmt.Errorf("meta: current ring: %w", err)
	}
	p := &Placement{Epoch: s.Epoch, RF: s.RF, Strategy: strategy, Ring: r}
	if s.Change != nil {
		p.ranges = s.Change.Clone().Ranges
	}
	return p, nil
}

// Clone returns a deep copy of c.
func (c *Change) Clone() *Change {
	s := State{Change: c}
	return s.Clone().Change
}

// WriteGroups returns the replica groups a write to token t goes to: the range's current
// set and, while the range is moving, its pending set (the set it will have), in that
// order. A write is acknowledged when its consistency level is met in each group
// separately; a node in both groups counts in both. The slices are the caller's.
func (p *Placement) WriteGroups(t ring.Token) [][]ring.NodeID {
	if i := rangeFor(p.ranges, t); i >= 0 {
		r := p.ranges[i]
		if r.Moved {
			return [][]ring.NodeID{slices.Clone(r.New)}
		}
		return [][]ring.NodeID{slices.Clone(r.Old), slices.Clone(r.New)}
	}
	return [][]ring.NodeID{p.Strategy.Replicas(p.Ring, t, p.RF)}
}

// ReadSet returns the replicas a read of token t goes to: the range's current set (its
// old set until the range has moved, then its new one). It is always the first write
// group. The slice is the caller's.
func (p *Placement) ReadSet(t ring.Token) []ring.NodeID {
	return p.WriteGroups(t)[0]
}

// RangeEnds returns, in token order, the last tokens of the ranges over which
// WriteGroups and ReadSet give the same sets: range i holds the tokens after
// RangeEnds[i-1] up to RangeEnds[i], the first wrapping from the last. They are the
// current ring's range ends and the ends of the change's ranges and of the ranges before
// them, so that a coordinator computes each range's sets once (machine.Placement). The
// slice is the caller's.
func (p *Placement) RangeEnds() []ring.Token {
	ends := make([]ring.Token, 0, p.Ring.RangeCount()+2*len(p.ranges))
	for i := range p.Ring.RangeCount() {
		ends = append(ends, p.Ring.RangeEnd(i))
	}
	for _, r := range p.ranges {
		ends = append(ends, r.Range.Start, r.Range.End)
	}
	slices.Sort(ends)
	return slices.Compact(ends)
}

// Moving returns the ranges of the change in flight, in token order, with their old and
// new sets and whether each has moved. The caller must not modify them.
func (p *Placement) Moving() []RangeState { return p.ranges }
