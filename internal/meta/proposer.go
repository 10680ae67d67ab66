package meta

import (
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// What a proposer needs from the state machine to plan entries it will accept.

// Target returns the ring e would lead to if applied to s now: the same computation
// Apply makes, so that a proposer plans transfers (move.Plan) against exactly the ring
// the state machine will record. It refuses what Apply would refuse for the change's
// members (roles, states, liveness); it does not check transfers or levels.
func (s *State) Target(e StartChange) (*ring.Ring, error) {
	nts, err := s.targetOf(e)
	if err != nil {
		return nil, err
	}
	return s.ringOf(nts)
}

// RangeOf returns the index in c.Ranges of the range that holds all of r (a transfer's
// range: a range of the change, or a piece of one when the planner split its copy
// among sources), or -1 when no range of c does.
func (c *Change) RangeOf(r move.Range) int {
	i := rangeFor(c.Ranges, r.End)
	if i < 0 {
		return -1
	}
	if _, _, ok := within(r, c.Ranges[i].Range); !ok {
		return -1
	}
	return i
}
