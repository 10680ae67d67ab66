package meta

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// claimRoles checks that no node of e is asked to do two things.
func claimRoles(e StartChange) error {
	seen := map[ring.NodeID]string{}
	claim := func(id ring.NodeID, role string) error {
		if prev, ok := seen[id]; ok {
			return fmt.Errorf("%w: %s is asked to %s and to %s", ErrInvalid, id, prev, role)
		}
		seen[id] = role
		return nil
	}
	var err error
	for _, j := range e.Joins {
		err = cmp.Or(err, claim(j.ID, "join"))
	}
	for _, id := range e.Leaves {
		err = cmp.Or(err, claim(id, "decommission"))
	}
	for _, id := range e.Removes {
		err = cmp.Or(err, claim(id, "be removed"))
	}
	for _, r := range e.Replaces {
		err = cmp.Or(err, claim(r.Old, "be replaced"), claim(r.New, "replace "+string(r.Old)))
	}
	return err
}

func (s *State) startChange(e StartChange) error {
	if s.Epoch == 0 {
		return ErrNotBootstrapped
	}
	if e.Epoch != s.Epoch {
		return fmt.Errorf("%w: the change was planned at epoch %d, the cluster is at %d; plan it again", ErrStaleEpoch, e.Epoch, s.Epoch)
	}
	if e.ID < s.NextChange || e.ID == 0 {
		return fmt.Errorf("%w: change ID %d was used already (next is %d)", ErrInvalid, e.ID, max(s.NextChange, 1))
	}
	if e.Level < coord.One || e.Level > coord.All {
		return fmt.Errorf("%w: consistency level %s", ErrInvalid, e.Level)
	}
	if len(e.Joins)+len(e.Leaves)+len(e.Removes)+len(e.Replaces) == 0 {
		return fmt.Errorf("%w: the change changes nothing", ErrInvalid)
	}
	if s.Change != nil {
		return s.inFlight(e)
	}
	target, err := s.targetOf(e)
	if err != nil {
		return err
	}
	ranges, err := s.rangesBetween(s.currentTokens(), target)
	if err != nil {
		return err
	}
	down := toSet(e.Down)
	need := e.Level.Required(s.RF)
	for _, r := range ranges {
		if live := countLive(r.New, down); live < need {
			return fmt.Errorf("%w: range %s would have %d live of %v, %s needs %d", ErrTooFewLive, r.Range, live, r.New, e.Level, need)
		}
	}
	if err := checkTransfers(ranges, e.Transfers, down); err != nil {
		return err
	}
	for _, id := range e.Leaves {
		s.setState(id, Leaving)
	}
	for _, id := range e.Removes {
		s.setState(id, Leaving)
	}
	for _, r := range e.Replaces {
		s.setState(r.Old, Leaving)
	}
	c := &Change{ID: e.ID, Leaves: slices.Clone(e.Leaves), Removes: slices.Clone(e.Removes),
		Replaces: slices.Clone(e.Replaces), Target: target, Ranges: ranges, Transfers: slices.Clone(e.Transfers),
		Done: make([]bool, len(e.Transfers))}
	for _, j := range e.Joins {
		c.Joins = append(c.Joins, j.ID)
	}
	s.Change, s.NextChange = c, e.ID+1
	s.Epoch++
	return nil
}

// targetOf checks what each node of e is asked to do and returns the target ring: the
// current one without the nodes leaving, with the joiners and with each replacement in
// its dead node's place.
func (s *State) targetOf(e StartChange) ([]NodeTokens, error) {
	if err := claimRoles(e); err != nil {
		return nil, err
	}
	down := toSet(e.Down)
	out := map[ring.NodeID][]ring.Token{}
	for _, nt := range s.currentTokens() {
		out[nt.ID] = nt.Tokens
	}
	inRing := func(id ring.NodeID, role string, wantDown bool) error {
		m, ok := s.Member(id)
		switch {
		case !ok || m.State != Normal || len(m.Tokens) == 0:
			return fmt.Errorf("%w: cannot %s %s: not a normal member of the ring", ErrMember, role, id)
		case wantDown && !down[id]:
			return fmt.Errorf("%w: cannot %s %s: it is live (only a dead node is removed or replaced; decommission a live one)", ErrMember, role, id)
		case !wantDown && down[id]:
			return fmt.Errorf("%w: cannot %s %s: it is down (remove it instead)", ErrMember, role, id)
		}
		delete(out, id)
		return nil
	}
	joining := func(id ring.NodeID, role string) error {
		if m, ok := s.Member(id); !ok || m.State != Joining || len(m.Tokens) > 0 {
			return fmt.Errorf("%w: cannot %s %s: not a registered joining member", ErrMember, role, id)
		}
		return nil
	}
	for _, id := range e.Leaves {
		if err := inRing(id, "decommission", false); err != nil {
			return nil, err
		}
	}
	for _, id := range e.Removes {
		if err := inRing(id, "remove", true); err != nil {
			return nil, err
		}
	}
	for _, rp := range e.Replaces {
		tokens := out[rp.Old]
		if err := inRing(rp.Old, "replace", true); err != nil {
			return nil, err
		}
		if err := joining(rp.New, "replace "+string(rp.Old)+" with"); err != nil {
			return nil, err
		}
		out[rp.New] = tokens
	}
	removed := map[ring.Token]bool{}
	for _, id := range e.Removes {
		m, _ := s.Member(id)
		for _, t := range m.Tokens {
			removed[t] = true
		}
	}
	leaving := toSet(e.Leaves)
	for _, h := range e.Handoffs {
		m, ok := s.Member(h.To)
		switch {
		case !removed[h.Token]:
			return nil, fmt.Errorf("%w: token %d handed off to %s is not a token of a node this change removes (or is handed twice)", ErrInvalid, h.Token, h.To)
		case !ok || m.State != Normal || out[h.To] == nil || down[h.To] || leaving[h.To]:
			return nil, fmt.Errorf("%w: token %d handed off to %s, which is not a live normal member staying in the ring", ErrInvalid, h.Token, h.To)
		}
		delete(removed, h.Token)
		out[h.To] = append(slices.Clone(out[h.To]), h.Token)
	}
	for _, j := range e.Joins {
		if err := joining(j.ID, "join"); err != nil {
			return nil, err
		}
		if len(j.Tokens) == 0 {
			return nil, fmt.Errorf("%w: joiner %s has no tokens", ErrInvalid, j.ID)
		}
		out[j.ID] = slices.Clone(j.Tokens)
	}
	var target []NodeTokens
	for _, m := range s.Members { // member order: sorted by ID
		if t, ok := out[m.ID]; ok {
			target = append(target, NodeTokens{ID: m.ID, Tokens: t})
		}
	}
	return target, nil
}

// inFlight refuses e while another change is in flight, saying whether they overlap (as
// far as e can be planned against the current ring). Disjoint changes at once are left
// for later (docs/design/membership.md, section 4).
func (s *State) inFlight(e StartChange) error {
	var ranges []RangeState
	if target, err := s.targetOf(e); err == nil {
		ranges, _ = s.rangesBetween(s.currentTokens(), target)
	}
	for _, a := range ranges {
		for _, b := range s.Change.Ranges {
			if overlaps(a.Range, b.Range) {
				return fmt.Errorf("%w: change %d is moving %s, which this change moves too", ErrOverlap, s.Change.ID, b.Range)
			}
		}
	}
	return fmt.Errorf("%w: change %d; one change at a time (finish or cancel it first)", ErrChangeInFlight, s.Change.ID)
}

// rangesBetween returns the ranges whose replica sets differ between the two rings, as
// move.Plan cuts them (move.Change.Pieces).
func (s *State) rangesBetween(from, to []NodeTokens) ([]RangeState, error) {
	strategy, err := s.strategy()
	if err != nil {
		return nil, err
	}
	cur, err := s.ringOf(from)
	if err != nil {
		return nil, err
	}
	next, err := s.ringOf(to)
	if err != nil {
		return nil, fmt.Errorf("%w: target ring: %w", ErrInvalid, err)
	}
	pieces, err := move.Change{Current: cur, Target: next, Strategy: strategy, RF: s.RF}.Pieces()
	if err != nil {
		return nil, err
	}
	out := make([]RangeState, len(pieces))
	for i, p := range pieces {
		out[i] = RangeState{Range: p.Range, Old: p.Before, New: p.After}
	}
	return out, nil
}

func (s *State) rangesMoved(e RangesMoved) error {
	c, err := s.changeNamed(e.Change)
	if err != nil {
		return err
	}
	if len(e.Ranges) == 0 {
		return fmt.Errorf("%w: no ranges", ErrInvalid)
	}
	for k, r := range e.Ranges {
		i := slices.IndexFunc(c.Ranges, func(rs RangeState) bool { return rs.Range == r })
		switch {
		case i < 0:
			return fmt.Errorf("%w: %s is not a range of change %d", ErrInvalid, r, c.ID)
		case c.Ranges[i].Moved && slices.Contains(e.Ranges[:k], r):
			return fmt.Errorf("%w: %s is listed twice", ErrInvalid, r)
		case c.Ranges[i].Moved:
			return fmt.Errorf("%w: %s has moved already", ErrInvalid, r)
		}
		c.Ranges[i].Moved = true
	}
	s.Epoch++
	return nil
}

// changeNamed returns the change in flight if its ID is id.
func (s *State) changeNamed(id uint64) (*Change, error) {
	if s.Change == nil {
		return nil, fmt.Errorf("%w: change %d (none is)", ErrNoChange, id)
	}
	if s.Change.ID != id {
		return nil, fmt.Errorf("%w: change %d (change %d is)", ErrNoChange, id, s.Change.ID)
	}
	return s.Change, nil
}

func (s *State) finishChange(e FinishChange) error {
	c, err := s.changeNamed(e.Change)
	if err != nil {
		return err
	}
	if n := pendingCount(c); n > 0 {
		return fmt.Errorf("%w: %d of %d ranges of change %d", ErrNotMoved, n, len(c.Ranges), c.ID)
	}
	if !c.Reverting {
		for _, id := range c.Joins {
			s.setState(id, Normal)
		}
		for _, r := range c.Replaces {
			s.setState(r.New, Normal)
			s.setState(r.Old, Removed)
		}
		for _, id := range c.Leaves {
			s.setState(id, Left)
		}
		for _, id := range c.Removes {
			s.setState(id, Removed)
		}
	}
	s.setTokens(c.Target)
	s.Change = nil
	s.Epoch++
	return nil
}

func (s *State) cancelChange(e CancelChange) error {
	c, err := s.changeNamed(e.Change)
	if err != nil {
		return err
	}
	if c.Reverting {
		return fmt.Errorf("%w: change %d is already cancelled and moving its ranges back", ErrInvalid, c.ID)
	}
	var back []RangeState
	for _, r := range c.Ranges {
		if r.Moved {
			back = append(back, RangeState{Range: r.Range, Old: r.New, New: r.Old})
		}
	}
	if err := checkTransfers(back, e.Transfers, toSet(e.Down)); err != nil {
		return err
	}
	for _, id := range c.Leaves {
		s.setState(id, Normal)
	}
	for _, id := range c.Removes {
		s.setState(id, Normal)
	}
	for _, r := range c.Replaces {
		s.setState(r.Old, Normal)
	}
	if len(back) == 0 {
		s.Change = nil
	} else {
		s.Change = &Change{ID: c.ID, Reverting: true, Target: s.currentTokens(), Ranges: back, Transfers: slices.Clone(e.Transfers),
			Done: make([]bool, len(e.Transfers))}
	}
	s.Epoch++
	return nil
}

func (s *State) transfersDone(e TransfersDone) error {
	c, err := s.changeNamed(e.Change)
	if err != nil {
		return err
	}
	if len(e.Transfers) == 0 {
		return fmt.Errorf("%w: no transfers", ErrInvalid)
	}
	for _, i := range e.Transfers {
		if i < 0 || i >= len(c.Transfers) {
			return fmt.Errorf("%w: change %d has no transfer %d (it has %d)", ErrInvalid, c.ID, i, len(c.Transfers))
		}
	}
	for _, i := range e.Transfers {
		c.Done[i] = true
	}
	return nil
}

func (s *State) setState(id ring.NodeID, st MemberState) {
	if i, ok := s.memberIndex(id); ok {
		s.Members[i].State = st
	}
}

// setTokens makes nts the current ring.
func (s *State) setTokens(nts []NodeTokens) {
	for i := range s.Members {
		s.Members[i].Tokens = nil
	}
	for _, nt := range nts {
		if i, ok := s.memberIndex(nt.ID); ok {
			s.Members[i].Tokens = slices.Clone(nt.Tokens)
		}
	}
}

func pendingCount(c *Change) int {
	n := 0
	for _, r := range c.Ranges {
		if !r.Moved {
			n++
		}
	}
	return n
}

func toSet(ids []ring.NodeID) map[ring.NodeID]bool {
	out := make(map[ring.NodeID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

func countLive(ids []ring.NodeID, down map[ring.NodeID]bool) int {
	n := 0
	for _, id := range ids {
		if !down[id] {
			n++
		}
	}
	return n
}
