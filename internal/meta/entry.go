package meta

import (
	"errors"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Entry is one command of the metadata log. The concrete types are Bootstrap, Register,
// StartChange, RangesMoved, FinishChange, CancelChange and SetVoters; Encode and Decode
// turn them into the bytes the log stores.
type Entry interface {
	kind() kind
}

// kind is an entry's type byte in its encoding: never renumber.
type kind uint8

const (
	kindBootstrap kind = iota + 1
	kindRegister
	kindStartChange
	kindRangesMoved
	kindFinishChange
	kindCancelChange
	kindSetVoters
	kindTransfersDone
	kindSetACL
)

// Bootstrap is the log's first entry: the placement every node uses and the first
// members, normal with their tokens. Epoch 1.
type Bootstrap struct {
	Strategy string
	RF       int
	Members  []Member // State is ignored: they are normal
}

// Register is a node asking to join: it becomes a joining member without tokens, until a
// StartChange adds it. A member registering again may change its address only.
type Register struct {
	ID   ring.NodeID
	Host string
	Rack string
	Role ring.Role
	Addr string
}

// Join is a registered node and the tokens it takes.
type Join struct {
	ID     ring.NodeID
	Tokens []ring.Token
}

// StartChange starts a change: any number of joins, decommissions (Leaves), removals of
// dead nodes and replacements at once, with the transfers the proposer planned for it
// (move.Plan from the current ring to the target, with RingSuccessors). Epoch+1.
//
// The state machine cannot know liveness or the operator's consistency level, so the
// proposer puts them here (Down, Level) and the state machine checks the change against
// them: every range the change moves must keep at least Level's number of live replicas
// in its new set, and every copy must have a live source.
type StartChange struct {
	// ID names the change; it must exceed every ID started before.
	ID uint64
	// Epoch is the epoch the change was planned against: the entry is refused at any
	// other, because its transfers were computed from that epoch's ring.
	Epoch    uint64
	Joins    []Join
	Leaves   []ring.NodeID
	Removes  []ring.NodeID
	Replaces []Replacement
	// Handoffs give tokens of the removed nodes to live normal members (move.HandOff),
	// which hold them in the target ring; a removed node's token not handed off leaves the
	// ring. Encoded only in entry version 2: a change without handoffs is written as
	// version 1, so that a node of an older build still reads it.
	Handoffs []move.Handoff
	// Transfers are move.Plan's, which the state machine checks cover the change exactly.
	Transfers []move.Transfer
	// Down are the nodes the proposer's failure detector holds down.
	Down []ring.NodeID
	// Level is the consistency level every moved range must still be able to meet.
	Level coord.Level
}

// RangesMoved records that every transfer into Ranges (ranges of the change in flight,
// exactly as recorded) completed, durably: their new sets become current. Epoch+1.
type RangesMoved struct {
	Change uint64
	Ranges []move.Range
}

// FinishChange ends the change in flight once every range has moved: joiners become
// normal, decommissioned nodes left, removed and replaced ones removed, and the target
// ring current. Epoch+1.
type FinishChange struct {
	Change uint64
}

// CancelChange cancels the change in flight. Ranges not yet moved revert to their old sets
// at once. If none had moved the change ends; otherwise the moved ranges must stream back
// (their old sets missed the writes since they moved), so the change turns around: it
// becomes a reverting change whose ranges are the moved ones, with Transfers (planned by
// the proposer from the new sets to the old) and Down as in StartChange, and finishing it
// restores the ring before the change. Epoch+1.
type CancelChange struct {
	Change    uint64
	Transfers []move.Transfer
	Down      []ring.NodeID
}

// SetVoters records the metadata log's voter set after one membership step of the Raft
// driver (VoterSteps): it differs from the recorded set by one node added or removed, and
// an added voter is a normal member. It changes no placement: the epoch stays.
type SetVoters struct {
	Voters []ring.NodeID
}

// TransfersDone records that transfers of the change in flight (indexes into its
// Transfers) completed, durably, at their destinations, which report them. It changes no
// placement: the epoch stays; the proposer moves a range (RangesMoved) once every
// transfer into it is done. Reporting a transfer again is harmless.
type TransfersDone struct {
	Change    uint64
	Transfers []int
}

func (TransfersDone) kind() kind { return kindTransfersDone }

// SetACL replaces the cluster's users and their rules (package acl's encoding of a user
// set, opaque here) with Users, if the users are still at version Base: a proposer reads
// the users at some version, applies an operator's change to them (ACL SETUSER, DELUSER,
// LOAD) and proposes the result, and a change made meanwhile by another node refuses it
// (ErrACLChanged) so that neither change is lost; the proposer reads again and retries.
// The epoch does not change: the users are not placement.
type SetACL struct {
	Base  uint64
	Users []byte
}

func (SetACL) kind() kind { return kindSetACL }

func (Bootstrap) kind() kind    { return kindBootstrap }
func (Register) kind() kind     { return kindRegister }
func (StartChange) kind() kind  { return kindStartChange }
func (RangesMoved) kind() kind  { return kindRangesMoved }
func (FinishChange) kind() kind { return kindFinishChange }
func (CancelChange) kind() kind { return kindCancelChange }
func (SetVoters) kind() kind    { return kindSetVoters }

// Why an entry is refused. Apply wraps one of these with the details an operator needs.
var (
	ErrNotBootstrapped = errors.New("meta: the log has no bootstrap entry yet")
	ErrBootstrapped    = errors.New("meta: already bootstrapped")
	ErrInvalid         = errors.New("meta: invalid entry")
	ErrMember          = errors.New("meta: member cannot take part")
	ErrStaleEpoch      = errors.New("meta: planned against another epoch")
	ErrChangeInFlight  = errors.New("meta: a change is in flight")
	ErrOverlap         = errors.New("meta: overlaps the change in flight")
	ErrNoChange        = errors.New("meta: no such change in flight")
	ErrTooFewLive      = errors.New("meta: too few live replicas")
	ErrNoSource        = errors.New("meta: no live replica to copy from")
	ErrTransfers       = errors.New("meta: transfers do not match the change")
	ErrNotMoved        = errors.New("meta: ranges not moved yet")
	ErrVoters          = errors.New("meta: invalid voter step")
)
