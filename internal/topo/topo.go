// Package topo is the topology coordinator's decisions: which change to start and how,
// and which entry moves the change in flight forward. The node that leads the metadata
// log runs them (package node is the driver: it reads the state, liveness and the
// streams' reports, proposes what topo returns, and carries nothing else); an operator's
// `kura admin plan` runs Plan to show a change before committing it.
//
// It is pure: no Raft, no clock, no I/O; randomness only from the generator it is given
// (token choice). Every entry it returns is one the state machine (package meta) accepts
// when applied to the state it was computed from; Plan checks that by applying it to a
// copy.
package topo

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Ops is what one change does: any number of joins (registered joining members),
// decommissions of live members (Leaves), removals of dead ones (Removes) and
// replacements of dead ones by registered joiners, planned together.
type Ops struct {
	Joins    []ring.NodeID
	Leaves   []ring.NodeID
	Removes  []ring.NodeID
	Replaces []meta.Replacement
}

// Empty reports whether o does nothing.
func (o Ops) Empty() bool {
	return len(o.Joins)+len(o.Leaves)+len(o.Removes)+len(o.Replaces) == 0
}

// String describes o for logs and operators.
func (o Ops) String() string {
	var parts []string
	add := func(what string, ids []ring.NodeID) {
		if len(ids) > 0 {
			parts = append(parts, what+" "+joinIDs(ids))
		}
	}
	add("join", o.Joins)
	add("decommission", o.Leaves)
	add("remove", o.Removes)
	for _, r := range o.Replaces {
		parts = append(parts, fmt.Sprintf("replace %s with %s", r.Old, r.New))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Config is how changes are planned.
type Config struct {
	// TokenAllocation and NumTokens choose joiners' tokens (move.JoinTokens).
	TokenAllocation string
	NumTokens       int
	// Level is the consistency level every moved range must keep live replicas for.
	Level coord.Level
	// Sizes are the bytes a replica holds per range, for balancing the sources; nil
	// spreads 1 GiB evenly (move.Uniform), which balances by range width.
	Sizes move.Sizes
	// HandOff gives the tokens of removed nodes to survivors chosen by move.HandOff (issue
	// 33: the lost replicas spread over every node that may take them), rather than
	// letting each range fall to its ring successor. Only a change that removes nodes and
	// does nothing else hands tokens off, and only when every member reads the entries
	// that carry handoffs (the caller knows: cluster.Member.MetaVersion).
	HandOff bool
	// Free are the members' free bytes as they announced them; a member absent is not
	// limited. No member is planned to receive more than it has free.
	Free map[ring.NodeID]int64
}

// Plan returns the StartChange that carries out ops on s, with the tokens it chose for
// the joiners (drawn from rng) and the transfers move.Plan chose against the ring the
// state machine will record (meta.State.Target), with the movement that explains them.
// down are the members the failure detector holds down: never a source, and recorded in
// the entry. It refuses, with the state machine's own error, a change the state machine
// would refuse, a change some of whose ranges have no live replica to copy from, and one
// that would stream to a node held down (it would wait for that node for ever).
func Plan(s *meta.State, ops Ops, cfg Config, down map[ring.NodeID]bool, rng *rand.Rand) (meta.StartChange, *move.Movement, error) {
	e := meta.StartChange{ID: max(s.NextChange, 1), Epoch: s.Epoch, Leaves: sorted(ops.Leaves),
		Removes: sorted(ops.Removes), Replaces: slices.Clone(ops.Replaces), Level: cfg.Level}
	for _, m := range s.Members {
		if down[m.ID] {
			e.Down = append(e.Down, m.ID) // members are sorted by ID
		}
	}
	strategy, err := ring.StrategyByName(s.Strategy)
	if err != nil {
		return e, nil, err
	}
	cur, err := s.CurrentRing()
	if err != nil {
		return e, nil, fmt.Errorf("topo: current ring: %w", err)
	}
	if len(ops.Joins) > 0 {
		joins := sorted(ops.Joins)
		nodes := make([]ring.Node, len(joins))
		for i, id := range joins {
			m, ok := s.Member(id)
			if !ok {
				return e, nil, fmt.Errorf("%w: cannot join %s: not a registered member", meta.ErrMember, id)
			}
			nodes[i] = ring.Node{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role}
		}
		tokens, err := move.JoinTokens(cfg.TokenAllocation, cur, nodes, cfg.NumTokens, strategy, s.RF, rng)
		if err != nil {
			return e, nil, err
		}
		for i, id := range joins {
			e.Joins = append(e.Joins, meta.Join{ID: id, Tokens: tokens[i]})
		}
	}
	target, err := s.Target(e)
	if err != nil {
		return e, nil, err
	}
	sizes := cfg.Sizes
	if sizes == nil {
		sizes = move.Uniform(1 << 30)
	}
	if cfg.HandOff && len(e.Removes) > 0 && len(e.Joins)+len(e.Leaves)+len(e.Replaces) == 0 {
		change := move.Change{Current: cur, Target: target, Strategy: strategy, RF: s.RF, Sizes: sizes, Down: down, Strict: true}
		e.Handoffs, err = move.HandOff(change, fabricOf(s, cfg.Free), move.RecoveryOptions{FromEveryPeer: true})
		if err != nil {
			return e, nil, err
		}
		if target, err = s.Target(e); err != nil {
			return e, nil, err
		}
	}
	// Strict: a copy comes from the replica that gives up its place in the range whenever
	// that replica is live, so that the new set holds every write on as many replicas as
	// the old set did (move.Transfer.Leaving). A copy from another replica could miss a
	// write acknowledged without it; the driver merges those from every live old replica.
	mv, err := move.Plan(move.Change{Current: cur, Target: target, Strategy: strategy, RF: s.RF, Sizes: sizes, Down: down, Strict: true})
	if err != nil {
		return e, nil, err
	}
	if len(mv.Shortfalls) > 0 {
		var rs []string
		for _, sf := range mv.Shortfalls {
			rs = append(rs, sf.Range.String())
		}
		return e, mv, fmt.Errorf("%w: %d ranges have no live replica (%s)", meta.ErrNoSource, len(rs), strings.Join(rs[:min(len(rs), 3)], ", "))
	}
	received := map[ring.NodeID]int64{}
	for _, tr := range mv.Transfers {
		if down[tr.Destination] {
			return e, mv, fmt.Errorf("%w: %s would receive ranges but is down", meta.ErrTooFewLive, tr.Destination)
		}
		received[tr.Destination] += tr.Bytes
	}
	for _, id := range slices.Sorted(maps.Keys(received)) {
		if free, ok := cfg.Free[id]; ok && received[id] > free {
			return e, mv, fmt.Errorf("%w: %s would receive about %d bytes but has %d free", ErrNoRoom, id, received[id], free)
		}
	}
	e.Transfers = mv.Transfers
	if err := s.Clone().Apply(e); err != nil {
		return e, mv, err
	}
	return e, mv, nil
}

// DeadToRemove returns the normal members of s that have been down for at least after
// (since[id] is when the caller's failure detector first held each down one down, and
// down those it holds down now), sorted: the removal the leader starts on its own
// (config.AutoRemoveAfter). It returns none when after is 0, and none of a rack whose
// every normal member is down: a whole rack lost at once is more likely a switch or power
// failure that comes back than every machine in it gone, and re-replicating a rack's data
// would take longer than waiting for it (Ceph's mon_osd_down_out_subtree_limit).
func DeadToRemove(s *meta.State, since map[ring.NodeID]time.Time, down map[ring.NodeID]bool, now time.Time, after time.Duration) []ring.NodeID {
	if after <= 0 {
		return nil
	}
	rackUp := map[string]bool{}
	for _, m := range s.Members {
		if m.State == meta.Normal && !down[m.ID] {
			rackUp[m.Rack] = true
		}
	}
	var out []ring.NodeID
	for _, m := range s.Members {
		t, ok := since[m.ID]
		if m.State == meta.Normal && down[m.ID] && ok && now.Sub(t) >= after && rackUp[m.Rack] {
			out = append(out, m.ID)
		}
	}
	return out
}

// ErrNoRoom is wrapped by Plan's error when a node would receive more than it has free.
var ErrNoRoom = errors.New("topo: not enough free space")

// fabricOf describes s's members to move.HandOff: every one at the same rate (the stream
// limit is one per node), with the free bytes they announced.
func fabricOf(s *meta.State, free map[ring.NodeID]int64) move.Fabric {
	var f move.Fabric
	for _, m := range s.Members {
		fb, ok := free[m.ID]
		if !ok {
			fb = math.MaxInt64 / 2
		}
		f.Nodes = append(f.Nodes, move.Hardware{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, FreeBytes: fb,
			DiskReadBps: 1, DiskWriteBps: 1, NICSendBps: 1, NICRecvBps: 1})
	}
	return f
}

// Advance returns the entry that moves the change in flight forward, or nil when there
// is nothing to do yet: a RangesMoved of every range not moved yet all of whose
// transfers are done (recorded by TransfersDone; a range without transfers into it is
// done at once), else, when every range has moved, the FinishChange.
func Advance(s *meta.State) meta.Entry {
	c := s.Change
	if c == nil {
		return nil
	}
	ready := make([]bool, len(c.Ranges))
	for i, r := range c.Ranges {
		ready[i] = !r.Moved
	}
	for i, tr := range c.Transfers {
		if r := c.RangeOf(tr.Range); r >= 0 && (i >= len(c.Done) || !c.Done[i]) {
			ready[r] = false
		}
	}
	var moved []move.Range
	pending := 0
	for i, r := range c.Ranges {
		switch {
		case ready[i]:
			moved = append(moved, r.Range)
		case !r.Moved:
			pending++
		}
	}
	switch {
	case len(moved) > 0:
		return meta.RangesMoved{Change: c.ID, Ranges: moved}
	case pending == 0:
		return meta.FinishChange{Change: c.ID}
	}
	return nil
}

// Joiners returns the registered members waiting to join that a change should take now,
// sorted by ID, or nil to wait: the joining members without tokens, not in the change in
// flight, not held down and not staged (they wait for an operator's commit); and only
// once no new one has been seen for quiet, or window has passed since the earliest was
// (first, which the driver keeps, says when each was first seen), so that nodes started
// together are planned together, without waiting the whole window when they all came at
// once. Nothing joins while a change is in flight.
func Joiners(s *meta.State, first map[ring.NodeID]time.Time, down, staged map[ring.NodeID]bool, now time.Time, window, quiet time.Duration) []ring.NodeID {
	if s.Change != nil {
		return nil
	}
	var out []ring.NodeID
	var earliest, latest time.Time
	for _, m := range s.Members {
		if m.State != meta.Joining || len(m.Tokens) > 0 || down[m.ID] || staged[m.ID] {
			continue
		}
		seen, ok := first[m.ID]
		if !ok {
			seen = now
		}
		if earliest.IsZero() || seen.Before(earliest) {
			earliest = seen
		}
		if seen.After(latest) {
			latest = seen
		}
		out = append(out, m.ID)
	}
	if len(out) == 0 || now.Sub(earliest) < window && now.Sub(latest) < quiet {
		return nil
	}
	return out
}

func sorted(ids []ring.NodeID) []ring.NodeID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b ring.NodeID) int { return cmp.Compare(a, b) })
	return slices.Compact(out)
}

func joinIDs(ids []ring.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// PlanCancel returns the CancelChange of the change in flight: its ranges not moved yet
// revert at once, and the moved ones stream back from their new sets to their old ones,
// with the transfers move.Plan chooses from the target ring back to the current one
// (strict, as Plan), kept to the moved ranges. It refuses what the state machine would.
func PlanCancel(s *meta.State, down map[ring.NodeID]bool) (meta.CancelChange, error) {
	c := s.Change
	if c == nil {
		return meta.CancelChange{}, fmt.Errorf("%w: no change in flight", meta.ErrNoChange)
	}
	cc := meta.CancelChange{Change: c.ID}
	for _, m := range s.Members {
		if down[m.ID] {
			cc.Down = append(cc.Down, m.ID)
		}
	}
	moved := false
	for _, r := range c.Ranges {
		moved = moved || r.Moved
	}
	if moved {
		strategy, err := ring.StrategyByName(s.Strategy)
		if err != nil {
			return cc, err
		}
		cur, err1 := s.CurrentRing()
		target, err2 := s.TargetRing()
		if err1 != nil || err2 != nil {
			return cc, fmt.Errorf("topo: rings of the change: %v %v", err1, err2)
		}
		mv, err := move.Plan(move.Change{Current: target, Target: cur, Strategy: strategy, RF: s.RF,
			Sizes: move.Uniform(1 << 30), Down: down, Strict: true})
		if err != nil {
			return cc, err
		}
		for _, t := range mv.Transfers {
			if r := c.RangeOf(t.Range); r >= 0 && c.Ranges[r].Moved {
				cc.Transfers = append(cc.Transfers, t)
			}
		}
	}
	if err := s.Clone().Apply(cc); err != nil {
		return cc, err
	}
	return cc, nil
}
