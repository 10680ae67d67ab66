package meta

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// MemberState is a member's place in its life cycle, as the metadata log decides it.
// Its numeric value is part of the entry and snapshot encodings: never renumber.
type MemberState uint8

// Member states. Only members in the current ring own tokens; see Member.Tokens.
const (
	// Joining: registered, not yet in the ring, or in a change that adds it.
	Joining MemberState = iota + 1
	// Normal: in the ring, serving.
	Normal
	// Leaving: in a change that takes it out of the ring (a decommission or the removal
	// of a dead node); it still serves the ranges not yet moved.
	Leaving
	// Left: decommissioned; it serves nothing and may shut down.
	Left
	// Removed: taken out while dead (removenode) or replaced; it must not come back
	// with its old data.
	Removed
)

var stateNames = map[MemberState]string{Joining: "joining", Normal: "normal", Leaving: "leaving", Left: "left", Removed: "removed"}

func (s MemberState) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("MemberState(%d)", uint8(s))
}

// Member is one node as the metadata log knows it.
type Member struct {
	ID   ring.NodeID
	Host string
	Rack string
	Role ring.Role
	// Addr is the internode address other nodes reach it at.
	Addr  string
	State MemberState
	// Tokens are the member's tokens in the current ring: nil when it is not in it (a
	// joiner before its change finishes, a member that left or was removed).
	Tokens []ring.Token
}

// RangeState is one range a change moves: a piece of the token space over which both
// the ring before the change and the ring after it have one replica set each (Old and
// New, primary first, as the strategy orders them), and whether it has moved.
type RangeState struct {
	Range move.Range
	Old   []ring.NodeID
	New   []ring.NodeID
	// Moved says every transfer into the range completed: New is its current set, read
	// and written alone. Until then Old is read and both are written.
	Moved bool
}

// Replacement is a dead node (Old) whose tokens a new node (New) takes.
type Replacement struct {
	Old, New ring.NodeID
}

// NodeTokens is one node of a ring and its tokens.
type NodeTokens struct {
	ID     ring.NodeID
	Tokens []ring.Token
}

// Change is the change in flight.
type Change struct {
	// ID is the proposer's name for the change; later entries about it repeat it, so an
	// entry meant for a change that was cancelled or finished is refused.
	ID uint64
	// What the change does, as StartChange asked.
	Joins    []ring.NodeID
	Leaves   []ring.NodeID // decommissions of live nodes
	Removes  []ring.NodeID // removals of dead nodes
	Replaces []Replacement
	// Target is the ring after the change (the current ring is the members' Tokens).
	Target []NodeTokens
	// Ranges are the ranges whose replica sets differ between the two rings, in token
	// order (the first may wrap), as move.Plan cuts them.
	Ranges []RangeState
	// Transfers are the copies the proposer planned (move.Plan), as recorded.
	Transfers []move.Transfer
	// Done says which transfers completed, durably, at their destinations
	// (TransfersDone), one flag per transfer.
	Done []bool
	// Reverting says the change was cancelled after some ranges had moved: it now moves
	// those back to their old sets, and finishing it restores the ring before the change.
	Reverting bool
}

// State is the cluster metadata: what applying the log in order gives. The zero State is
// the empty log's; Bootstrap is the first entry. A State is a value the caller owns; it is
// not safe for concurrent use, and Apply changes it in place (Clone first to keep the old).
type State struct {
	// Epoch names the placement: every accepted entry that changes it increments it once.
	Epoch uint64
	// Strategy and RF are the placement every node uses (ring.StrategyByName).
	Strategy string
	RF       int
	// Members are every node ever registered, sorted by ID.
	Members []Member
	// Change is the change in flight, or nil.
	Change *Change
	// Voters are the metadata log's voters as last recorded (SetVoters), sorted by ID.
	Voters []ring.NodeID
	// NextChange is one more than the highest change ID ever started: IDs are not reused.
	NextChange uint64
	// ACL is the cluster's users and their rules, as package acl encodes them, at
	// version ACLVersion (the number of SetACL entries applied; 0 and a nil ACL: none
	// recorded yet, each node uses its own --acl-file or --password). Never modified in
	// place: SetACL replaces it.
	ACL        []byte
	ACLVersion uint64
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	out := *s
	out.Members = slices.Clone(s.Members)
	for i := range out.Members {
		out.Members[i].Tokens = slices.Clone(out.Members[i].Tokens)
	}
	out.Voters = slices.Clone(s.Voters)
	if s.Change != nil {
		c := *s.Change
		c.Joins, c.Leaves, c.Removes = slices.Clone(c.Joins), slices.Clone(c.Leaves), slices.Clone(c.Removes)
		c.Replaces = slices.Clone(c.Replaces)
		c.Target = slices.Clone(c.Target)
		for i := range c.Target {
			c.Target[i].Tokens = slices.Clone(c.Target[i].Tokens)
		}
		c.Ranges = slices.Clone(c.Ranges)
		for i := range c.Ranges {
			c.Ranges[i].Old, c.Ranges[i].New = slices.Clone(c.Ranges[i].Old), slices.Clone(c.Ranges[i].New)
		}
		c.Transfers = slices.Clone(c.Transfers)
		c.Done = slices.Clone(c.Done)
		out.Change = &c
	}
	return &out
}

// Member returns the member id.
func (s *State) Member(id ring.NodeID) (Member, bool) {
	i, ok := s.memberIndex(id)
	if !ok {
		return Member{}, false
	}
	return s.Members[i], true
}

func (s *State) memberIndex(id ring.NodeID) (int, bool) {
	return slices.BinarySearchFunc(s.Members, id, func(m Member, id ring.NodeID) int {
		return strings.Compare(string(m.ID), string(id))
	})
}

// CurrentRing builds the current ring: every member with tokens.
func (s *State) CurrentRing() (*ring.Ring, error) {
	var nodes []ring.Node
	for _, m := range s.Members {
		if len(m.Tokens) > 0 {
			nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Tokens: m.Tokens})
		}
	}
	return ring.New(nodes)
}

// TargetRing builds the ring the change in flight leads to (the current ring when there
// is none).
func (s *State) TargetRing() (*ring.Ring, error) {
	if s.Change == nil {
		return s.CurrentRing()
	}
	return s.ringOf(s.Change.Target)
}

func (s *State) ringOf(nts []NodeTokens) (*ring.Ring, error) {
	nodes := make([]ring.Node, 0, len(nts))
	for _, nt := range nts {
		m, ok := s.Member(nt.ID)
		if !ok {
			return nil, fmt.Errorf("meta: ring node %s is not a member", nt.ID)
		}
		nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Tokens: nt.Tokens})
	}
	return ring.New(nodes)
}

// currentTokens returns the current ring as NodeTokens, in member order.
func (s *State) currentTokens() []NodeTokens {
	var out []NodeTokens
	for _, m := range s.Members {
		if len(m.Tokens) > 0 {
			out = append(out, NodeTokens{ID: m.ID, Tokens: slices.Clone(m.Tokens)})
		}
	}
	return out
}

// strategy returns the state's placement strategy.
func (s *State) strategy() (ring.Strategy, error) {
	return ring.StrategyByName(s.Strategy)
}
