package meta

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/ring"
)

// Apply applies e to s. An entry it refuses changes nothing and the error says why (the
// proposer shows it to the operator); every replica refuses the same entries, because
// the answer depends only on s and e. An accepted entry that changes placement
// increments s.Epoch exactly once.
func (s *State) Apply(e Entry) error {
	next := s.Clone()
	var err error
	switch e := e.(type) {
	case Bootstrap:
		err = next.bootstrap(e)
	case Register:
		err = next.register(e)
	case StartChange:
		err = next.startChange(e)
	case RangesMoved:
		err = next.rangesMoved(e)
	case FinishChange:
		err = next.finishChange(e)
	case CancelChange:
		err = next.cancelChange(e)
	case SetVoters:
		err = next.setVoters(e)
	case TransfersDone:
		err = next.transfersDone(e)
	case SetACL:
		err = next.setACL(e)
	default:
		err = fmt.Errorf("%w: unknown entry %T", ErrInvalid, e)
	}
	if err != nil {
		return err
	}
	*s = *next
	return nil
}

// ErrACLChanged refuses a SetACL made from users that have changed since.
var ErrACLChanged = errors.New("meta: the users changed meanwhile; read them again and retry")

func (s *State) setACL(e SetACL) error {
	switch {
	case e.Base != s.ACLVersion:
		return fmt.Errorf("%w (made at version %d, now %d)", ErrACLChanged, e.Base, s.ACLVersion)
	case len(e.Users) == 0:
		return fmt.Errorf("%w: SetACL without users", ErrInvalid)
	case len(e.Users) > MaxACLBytes:
		return fmt.Errorf("%w: users of %d bytes (at most %d)", ErrInvalid, len(e.Users), MaxACLBytes)
	}
	s.ACL, s.ACLVersion = bytes.Clone(e.Users), s.ACLVersion+1
	return nil
}

func (s *State) bootstrap(e Bootstrap) error {
	if s.Epoch != 0 || len(s.Members) > 0 {
		return ErrBootstrapped
	}
	if _, err := ring.StrategyByName(e.Strategy); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if e.RF < 1 || e.RF > maxRF {
		return fmt.Errorf("%w: replication factor %d", ErrInvalid, e.RF)
	}
	s.Strategy, s.RF = e.Strategy, e.RF
	for _, m := range e.Members {
		if err := validID(m.ID); err != nil {
			return err
		}
		if len(m.Tokens) == 0 {
			return fmt.Errorf("%w: first member %s has no tokens", ErrInvalid, m.ID)
		}
		m.State, m.Tokens = Normal, slices.Clone(m.Tokens)
		if err := s.addMember(m); err != nil {
			return err
		}
	}
	if _, err := s.CurrentRing(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s.Epoch = 1
	return nil
}

// maxRF bounds the replication factor an entry may set (a sanity limit, not a policy).
const maxRF = 16

func validID(id ring.NodeID) error {
	if id == "" || len(id) > maxString {
		return fmt.Errorf("%w: node ID %q", ErrInvalid, id)
	}
	return nil
}

// addMember inserts m, keeping Members sorted; an existing ID is an error.
func (s *State) addMember(m Member) error {
	i, ok := s.memberIndex(m.ID)
	if ok {
		return fmt.Errorf("%w: %s is listed twice", ErrInvalid, m.ID)
	}
	s.Members = slices.Insert(s.Members, i, m)
	return nil
}

func (s *State) register(e Register) error {
	if s.Epoch == 0 {
		return ErrNotBootstrapped
	}
	if err := validID(e.ID); err != nil {
		return err
	}
	i, ok := s.memberIndex(e.ID)
	if !ok {
		return s.addMember(Member{ID: e.ID, Host: e.Host, Rack: e.Rack, Role: e.Role, Addr: e.Addr, State: Joining})
	}
	m := &s.Members[i]
	switch {
	case m.State == Left || m.State == Removed:
		return fmt.Errorf("%w: %s is %s; node IDs are never reused", ErrMember, e.ID, m.State)
	case m.Host != e.Host || m.Rack != e.Rack || m.Role != e.Role:
		return fmt.Errorf("%w: %s registered again as %s/%s %s, was %s/%s %s (placement depends on them)",
			ErrMember, e.ID, e.Rack, e.Host, e.Role, m.Rack, m.Host, m.Role)
	}
	m.Addr = e.Addr
	return nil
}

func (s *State) setVoters(e SetVoters) error {
	if s.Epoch == 0 {
		return ErrNotBootstrapped
	}
	next := slices.Clone(e.Voters)
	slices.SortFunc(next, func(a, b ring.NodeID) int { return strings.Compare(string(a), string(b)) })
	if len(slices.Compact(slices.Clone(next))) != len(next) {
		return fmt.Errorf("%w: a voter is listed twice", ErrVoters)
	}
	if len(next) == 0 || len(next) > MaxVoters+1 {
		return fmt.Errorf("%w: %d voters (want 1 to %d, one more while a voter is replaced)", ErrVoters, len(next), MaxVoters+1)
	}
	added, removed := diff(s.Voters, next), diff(next, s.Voters)
	if len(s.Voters) > 0 && len(added)+len(removed) != 1 {
		return fmt.Errorf("%w: from %v to %v adds %d and removes %d; one at a time", ErrVoters, s.Voters, next, len(added), len(removed))
	}
	for _, id := range added {
		if m, ok := s.Member(id); !ok || m.State != Normal {
			return fmt.Errorf("%w: %s is not a normal member", ErrVoters, id)
		}
	}
	s.Voters = next
	return nil
}

// diff returns the IDs of b that are not in a.
func diff(a, b []ring.NodeID) []ring.NodeID {
	var out []ring.NodeID
	for _, id := range b {
		if !slices.Contains(a, id) {
			out = append(out, id)
		}
	}
	return out
}
