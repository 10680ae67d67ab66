package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/kuradb/kura/internal/ring"
)

// StateVersion is the version byte an encoded State starts with: the Raft driver's
// snapshots and a node's saved copy of the metadata are States encoded by EncodeState.
// Version 2 adds the change's done transfers (Change.Done); version 3 the users (ACL,
// ACLVersion), after the change. DecodeState reads all three. A State is written in the
// lowest version that can carry it (3 only once users are recorded), so that a node of an
// older build can still take a snapshot until the cluster's users are first set, which
// waits for every member to read version 3 entries.
const StateVersion = 3

// EncodeState returns s's bytes: StateVersion, then every field, so that DecodeState
// gives back an equal State.
func EncodeState(s *State) []byte {
	b := encodeStateV2(s)
	if s.ACLVersion == 0 && s.ACL == nil {
		return b
	}
	b[0] = 3
	return appendBytes(binary.AppendUvarint(b, s.ACLVersion), s.ACL)
}

// encodeStateV2 is EncodeState without the users.
func encodeStateV2(s *State) []byte {
	b := []byte{2}
	b = appendUvarints(b, s.Epoch, uint64(s.RF), s.NextChange)
	b = appendString(b, s.Strategy)
	b = appendUvarints(b, uint64(len(s.Members)))
	for _, m := range s.Members {
		b = appendMember(b, m)
	}
	b = appendIDs(b, s.Voters)
	c := s.Change
	if c == nil {
		return append(b, 0)
	}
	b = append(b, 1, b2byte(c.Reverting))
	b = appendUvarints(b, c.ID)
	b = appendIDs(appendIDs(appendIDs(b, c.Joins), c.Leaves), c.Removes)
	b = appendUvarints(b, uint64(len(c.Replaces)))
	for _, r := range c.Replaces {
		b = appendString(appendString(b, string(r.Old)), string(r.New))
	}
	b = appendUvarints(b, uint64(len(c.Target)))
	for _, nt := range c.Target {
		b = appendTokens(appendString(b, string(nt.ID)), nt.Tokens)
	}
	b = appendUvarints(b, uint64(len(c.Ranges)))
	for _, r := range c.Ranges {
		b = appendIDs(appendIDs(appendRange(b, r.Range), r.Old), r.New)
		b = append(b, b2byte(r.Moved))
	}
	b = appendTransfers(b, c.Transfers)
	var done []int
	for i, d := range c.Done {
		if d {
			done = append(done, i)
		}
	}
	return appendInts(b, done)
}

func appendUvarints(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = appendUvarint(b, v)
	}
	return b
}

// DecodeState returns the State encoded in b. Like Decode it never panics; an error wraps
// ErrCorrupt. It checks the encoding, not the State's consistency: a State comes from
// this package's own EncodeState.
func DecodeState(b []byte) (*State, error) {
	if len(b) < 1 || b[0] < 1 || b[0] > StateVersion {
		return nil, fmt.Errorf("%w: not a version 1 to %d state", ErrCorrupt, StateVersion)
	}
	d := &decoder{b: b[1:], version: b[0]}
	s := &State{Epoch: d.uvarint(1<<64 - 1), RF: int(d.uvarint(maxRF)), NextChange: d.uvarint(1<<64 - 1), Strategy: d.string()}
	for range d.count() {
		s.Members = append(s.Members, d.member())
	}
	s.Voters = d.ids()
	switch d.byte() {
	case 0:
	case 1:
		s.Change = d.change()
	default:
		d.fail("a flag other than 0 or 1")
	}
	if d.version >= 3 {
		s.ACLVersion, s.ACL = d.uvarint(1<<64-1), d.bytes(MaxACLBytes)
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

func (d *decoder) change() *Change {
	c := &Change{Reverting: d.flag(), ID: d.uvarint(1<<64 - 1)}
	c.Joins, c.Leaves, c.Removes = d.ids(), d.ids(), d.ids()
	for range d.count() {
		c.Replaces = append(c.Replaces, Replacement{Old: ring.NodeID(d.string()), New: ring.NodeID(d.string())})
	}
	for range d.count() {
		c.Target = append(c.Target, NodeTokens{ID: ring.NodeID(d.string()), Tokens: d.tokens()})
	}
	for range d.count() {
		c.Ranges = append(c.Ranges, RangeState{Range: d.rng(), Old: d.ids(), New: d.ids(), Moved: d.flag()})
	}
	c.Transfers = d.transfers()
	c.Done = make([]bool, len(c.Transfers))
	if d.version >= 2 {
		for _, i := range d.ints() {
			if i >= len(c.Done) {
				d.fail(fmt.Sprintf("done transfer %d of %d", i, len(c.Done)))
				break
			}
			c.Done[i] = true
		}
	}
	return c
}
