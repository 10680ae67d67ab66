// Package meta is the cluster metadata's replicated state machine: it decides, from the
// metadata log's entries applied in order, the members and their states, the ring, the
// change in flight with each of its ranges' progress, the voter set, and from them every
// key's placement at each epoch. docs/design/membership.md is the design; this package is
// its first step.
//
// It is pure: no Raft, no I/O, no clock, no randomness. Whatever it cannot know comes in
// the entries from their proposer: liveness and the consistency level a change must keep
// (StartChange.Down, Level), the transfers move.Plan chose. Every replica applying the
// same entries reaches the same State, refuses the same entries for the same reasons, and
// computes the same placement with the same ring.Strategy.
//
// # What it decides
//
//   - Entries (Bootstrap, Register, StartChange, TransfersDone, RangesMoved, FinishChange,
//     CancelChange, SetVoters) and whether each is valid: State.Apply either applies one or refuses it
//     with an error for the operator, changing nothing. Every accepted entry that changes
//     placement increments the epoch exactly once (Register, SetVoters and TransfersDone do not
//     change it).
//   - Pending ranges. A StartChange records the target ring and cuts the token space, as
//     move.Plan does, into the ranges whose replica set differs between the rings; each
//     has an old and a new set. Until a range has moved (RangesMoved), writes go to both
//     sets and must meet their level in each separately, and reads go to the old set;
//     after, both go to the new set (Placement.WriteGroups, ReadSet).
//   - Refusals: a change while another is in flight (saying whether they overlap), a
//     change after which some moved range has fewer live replicas than the proposer's
//     consistency level needs, a copy with no live source, transfers that do not cover
//     the change exactly, a change planned at another epoch.
//   - Cancelling: ranges not yet moved revert at once; ranges already moved took writes
//     in their new sets alone, so they move back: the change turns into a reverting one
//     over those ranges, whose finish restores the ring before the change.
//   - Voters (ChooseVoters) and the one-at-a-time steps to reach them (VoterSteps).
//   - The entries' encoding (Encode, Decode) and the state's (EncodeState, DecodeState:
//     what a Raft snapshot and a node's saved copy hold), each with a version byte.
//
// # What it leaves to others
//
// The Raft driver (hashicorp/raft) orders the entries, stores them and snapshots, proposes
// SetVoters after carrying out each VoterSteps step on the Raft configuration, lets
// non-voters pull entries, and keeps the log index (the epoch names placements, not
// entries). The proposer (the node that runs an operation) chooses tokens
// (move.JoinTokens), plans transfers (move.Plan with ring successors), supplies liveness
// and the level, and reports completed ranges once streaming made them durable. The node
// builds a Placement per epoch and hands it to its coordinators (package machine),
// which count a write's acknowledgements per group.
package meta
