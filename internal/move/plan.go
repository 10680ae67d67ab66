package move

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/ring"
)

// Change is one change of the ring to plan: any number of joins, leaves (decommissions),
// removals of dead nodes, replacements and token moves, taken together. The planner reads
// nothing else; the caller builds Target from the change (a replacement takes the dead
// node's tokens; a leaving or removed node is absent from it).
type Change struct {
	// Current is the ring as it is; Target the ring after the change.
	Current, Target *ring.Ring
	// Strategy and RF place replicas in both rings, exactly as the nodes do (the strategy
	// ring.StrategyByName gives for the configured placement).
	Strategy ring.Strategy
	RF       int
	// Sizes gives the bytes one replica holds in each range.
	Sizes Sizes
	// Down lists the nodes that are not live: never a source. A node not listed is live.
	Down map[ring.NodeID]bool
	// Rehome chooses the new replica sets of the ranges that lose a replica leaving the
	// ring; nil means RingSuccessors.
	Rehome Rehome
	// Strict makes the replica that gives up a range the source of the copy that replaces
	// it, whenever it is live (see Transfer.Leaving). Otherwise the planner moves such
	// copies, whole or in part, to other live replicas wherever a node would exceed the
	// bound, and the plan's load is the bound.
	Strict bool
	// SharedLimit says that a node's sends and receives share one rate limit, so that its
	// load is what it sends plus what it receives; by default they have a limit each and
	// its load is the larger of the two. It changes the bound and the balancing.
	SharedLimit bool
}

// Rehome is the seam where the destinations of a departing node's ranges are chosen:
// today the target ring's placement (RingSuccessors, Cassandra's choice); the
// re-replication scheduler will plug in here to spread the copies of a dead node's ranges
// elsewhere.
type Rehome interface {
	// NewReplicas returns the replica set range r will have after the change, given its
	// replicas in the current ring (old) and those the target ring's placement gives it
	// (target), both primary first. The planner asks only for ranges where a node of old
	// is absent from the target ring (it left, was removed or was replaced), and plans
	// copies to every returned node that is not in old. The returned nodes must be
	// distinct and in the target ring. Called from the planner's goroutine, once per
	// range, in token order; the slices are the planner's and must not be kept.
	NewReplicas(r Range, old, target []ring.NodeID) []ring.NodeID
}

// RingSuccessors is the Rehome of today: a range's new replicas are those the target
// ring's placement gives it, the departing node's ring successors.
type RingSuccessors struct{}

// NewReplicas implements Rehome.
func (RingSuccessors) NewReplicas(_ Range, _, target []ring.NodeID) []ring.NodeID { return target }

// Transfer is a copy of a range, or of part of one, to a node that does not hold it.
type Transfer struct {
	Range       Range
	Source      ring.NodeID
	Destination ring.NodeID
	Bytes       int64
	// Leaving says the source is the replica whose place the destination takes in the
	// range's replica set (it leaves the set). Such a copy keeps every write on as many
	// replicas of the new set as it had in the old one; a copy from another replica may
	// miss a write that replica missed, so the streamer must merge it from enough
	// replicas (as a refill does) or repair the range after.
	Leaving bool
}

// Shortfall is a range that some of its new replicas need while none of its old replicas
// is live: its data cannot be copied now (a data loss risk if they stay down).
type Shortfall struct {
	Range        Range
	Destinations []ring.NodeID
	Bytes        int64 // per destination
}

// Movement is the plan of one change: what to copy from whom to whom, and what the
// copies cost per node.
type Movement struct {
	// Transfers are in token order, then in the order of the range's new replica set; a
	// copy split among sources is consecutive sub-ranges, the leaving replica's first.
	Transfers  []Transfer
	Shortfalls []Shortfall
	// MovedBytes is the sum of the transfers; MinimumBytes is Σ over ranges of
	// |new set \ old set| × range bytes, which MovedBytes equals when there is no
	// shortfall (and falls short of by the shortfalls' bytes when there is).
	MovedBytes, MinimumBytes int64
	// Send and Receive are the bytes each node sends and receives (nodes with transfers).
	Send, Receive map[ring.NodeID]int64
	// Load is the plan's largest per-node load under the change's limit model: the
	// largest send or receive, or with SharedLimit the largest send plus receive.
	Load int64
	// Bound is the least Load any choice of live sources could have (MinMaxLoad over the
	// transfers' candidate sources), computed apart from the choice made.
	Bound Bound
}

// BoundSeconds returns the bound on the movement's duration at a per-node limit of
// bytesPerSecond (each of send and receive, or both together with SharedLimit).
func (m *Movement) BoundSeconds(bytesPerSecond float64) float64 {
	return float64(m.Bound.Bytes) / bytesPerSecond
}

// ErrInvalidChange is wrapped by the errors Plan returns for a change it cannot plan.
var ErrInvalidChange = errors.New("move: invalid change")

// Plan returns the movement of c: for every range whose replica set changes, a copy to
// each new replica from a live old one. See the package comment for how sources are
// chosen and what is minimal. It keeps nothing of c, and the Movement is the caller's.
func Plan(c Change) (*Movement, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	pieces, err := c.pieces()
	if err != nil {
		return nil, err
	}
	m := &Movement{Send: map[ring.NodeID]int64{}, Receive: map[ring.NodeID]int64{}}
	ids := nodeIDs(c.Current, c.Target)
	index := make(map[ring.NodeID]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	var items []item
	for _, p := range pieces {
		items = append(items, c.copies(p, index, m)...)
	}
	m.Bound = MinMaxLoad(demands(items, ids), c.SharedLimit)
	assignSources(items, len(ids), m.Bound.Bytes, c.SharedLimit, c.Strict)
	for _, it := range items {
		m.add(c.Sizes, it, ids)
	}
	m.Load = load(m.Send, m.Receive, c.SharedLimit)
	return m, nil
}

// demands returns the items as MinMaxLoad's input: every live old replica a candidate.
func demands(items []item, ids []ring.NodeID) []Demand {
	out := make([]Demand, 0, len(items))
	for _, it := range items {
		d := Demand{Bytes: it.bytes, Destination: ids[it.dest]}
		for _, s := range it.cands {
			d.Sources = append(d.Sources, ids[s])
		}
		out = append(out, d)
	}
	return out
}

// add records the transfers of an item whose sources are chosen: one per part, the
// leaving replica's first, each a sub-range of the item's range.
func (m *Movement) add(sizes Sizes, it item, ids []ring.NodeID) {
	slices.SortStableFunc(it.parts, func(a, b part) int {
		return cmp.Compare(b2i(a.node != it.pref), b2i(b.node != it.pref))
	})
	shares := make([]int64, len(it.parts))
	for k, p := range it.parts {
		shares[k] = p.bytes
	}
	ranges, owners := splitRange(sizes, it.rng, shares)
	for j, r := range ranges {
		p := it.parts[owners[j]]
		t := Transfer{Range: r, Source: ids[p.node], Destination: ids[it.dest], Bytes: sizes.Bytes(r), Leaving: p.node == it.pref}
		m.Transfers = append(m.Transfers, t)
		m.MovedBytes += t.Bytes
		m.Send[t.Source] += t.Bytes
		m.Receive[t.Destination] += t.Bytes
	}
}

func (c Change) validate() error {
	switch {
	case c.Current == nil || c.Target == nil:
		return fmt.Errorf("%w: a ring is missing", ErrInvalidChange)
	case c.Strategy == nil:
		return fmt.Errorf("%w: no placement strategy", ErrInvalidChange)
	case c.RF < 1:
		return fmt.Errorf("%w: replication factor %d", ErrInvalidChange, c.RF)
	case c.Sizes == nil:
		return fmt.Errorf("%w: no range sizes", ErrInvalidChange)
	}
	return nil
}

// piece is a range over which neither ring has a token, so that it has one replica set
// in each: before in the current ring, after in the target.
type piece struct {
	rng           Range
	before, after []ring.NodeID
}

// Piece is a range whose replica set the change alters: Before in the current ring, After
// in the target one (Rehome's answer for a range losing a departing replica).
type Piece struct {
	Range         Range
	Before, After []ring.NodeID
}

// Pieces cuts the ring where either ring has a token and returns, in token order, the
// ranges whose replica set changes, adjacent ones with the same sets joined: what Plan
// moves, for callers that track the ranges of a change (package meta). It needs only
// Current, Target, Strategy, RF and Rehome.
func (c Change) Pieces() ([]Piece, error) {
	ps, err := c.pieces()
	if err != nil {
		return nil, err
	}
	out := make([]Piece, len(ps))
	for i, p := range ps {
		out[i] = Piece{Range: p.rng, Before: p.before, After: p.after}
	}
	return out, nil
}

// pieces is Pieces, in the planner's own form.
func (c Change) pieces() ([]piece, error) {
	rehome := c.Rehome
	if rehome == nil {
		rehome = RingSuccessors{}
	}
	inTarget := map[ring.NodeID]bool{}
	for _, n := range c.Target.Nodes() {
		inTarget[n.ID] = true
	}
	cuts := cutPoints(c.Current, c.Target)
	var out []piece
	for i, end := range cuts {
		r := Range{Start: cuts[(i+len(cuts)-1)%len(cuts)], End: end}
		old := c.Strategy.Replicas(c.Current, end, c.RF)
		next := c.Strategy.Replicas(c.Target, end, c.RF)
		if slices.ContainsFunc(old, func(id ring.NodeID) bool { return !inTarget[id] }) {
			next = slices.Clone(rehome.NewReplicas(r, slices.Clone(old), slices.Clone(next)))
			if err := checkRehomed(inTarget, r, next); err != nil {
				return nil, err
			}
		}
		if sameNodes(old, next) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].rng.End == r.Start && slices.Equal(out[n-1].before, old) && slices.Equal(out[n-1].after, next) {
			out[n-1].rng.End = end
			continue
		}
		out = append(out, piece{rng: r, before: old, after: next})
	}
	return out, nil
}

// checkRehomed checks a Rehome's answer.
func checkRehomed(inTarget map[ring.NodeID]bool, r Range, set []ring.NodeID) error {
	for i, id := range set {
		if !inTarget[id] {
			return fmt.Errorf("%w: rehomed range %s to %s, which is not in the target ring", ErrInvalidChange, r, id)
		}
		if slices.Contains(set[:i], id) {
			return fmt.Errorf("%w: rehomed range %s to %s twice", ErrInvalidChange, r, id)
		}
	}
	return nil
}

// cutPoints returns every range end of either ring, in token order, once.
func cutPoints(a, b *ring.Ring) []ring.Token {
	out := make([]ring.Token, 0, a.RangeCount()+b.RangeCount())
	for _, r := range []*ring.Ring{a, b} {
		for i := range r.RangeCount() {
			out = append(out, r.RangeEnd(i))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeIDs returns the IDs of the nodes of both rings, sorted.
func nodeIDs(a, b *ring.Ring) []ring.NodeID {
	var out []ring.NodeID
	for _, r := range []*ring.Ring{a, b} {
		for _, n := range r.Nodes() {
			out = append(out, n.ID)
		}
	}
	slices.SortFunc(out, func(x, y ring.NodeID) int { return strings.Compare(string(x), string(y)) })
	return slices.Compact(out)
}

// copies returns the copies piece p needs, one per new replica not in its old set, with
// their candidate sources (the live old replicas) and preferred source (the old replica
// whose place it takes, when live); it records what they cost in m's minimum, and a
// shortfall when no old replica is live.
func (c Change) copies(p piece, index map[ring.NodeID]int, m *Movement) []item {
	bytes := c.Sizes.Bytes(p.rng)
	var dests, leavers []ring.NodeID
	for _, id := range p.after {
		if !slices.Contains(p.before, id) {
			dests = append(dests, id)
		}
	}
	for _, id := range p.before {
		if !slices.Contains(p.after, id) {
			leavers = append(leavers, id)
		}
	}
	m.MinimumBytes += bytes * int64(len(dests))
	var cands []int
	for _, id := range p.before {
		if !c.Down[id] {
			cands = append(cands, index[id])
		}
	}
	if len(dests) > 0 && len(cands) == 0 {
		m.Shortfalls = append(m.Shortfalls, Shortfall{Range: p.rng, Destinations: dests, Bytes: bytes})
		return nil
	}
	out := make([]item, 0, len(dests))
	for k, d := range dests {
		it := item{rng: p.rng, bytes: bytes, dest: index[d], cands: cands, pref: -1}
		if k < len(leavers) && !c.Down[leavers[k]] {
			it.pref = index[leavers[k]]
		}
		out = append(out, it)
	}
	return out
}

// sameNodes reports whether a and b hold the same nodes.
func sameNodes(a, b []ring.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// load returns the largest per-node load of sends and receives under the limit model.
func load(send, recv map[ring.NodeID]int64, shared bool) int64 {
	var out int64
	for id, s := range send {
		if shared {
			s += recv[id]
		}
		out = max(out, s)
	}
	for id, r := range recv {
		if shared {
			r += send[id]
		}
		out = max(out, r)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// splitRange cuts r into consecutive sub-ranges holding shares of its bytes, in order
// (shares sum to r's bytes), and returns them with the index of the share each holds. A
// cut falls at the first token where the bytes so far reach the shares so far, found by
// bisection over sizes (which is additive), so a sub-range holds its share exactly when
// sizes can express it (always with Uniform) and within one token's bytes otherwise; a
// share that comes out empty is left out.
func splitRange(sizes Sizes, r Range, shares []int64) ([]Range, []int) {
	if len(shares) == 1 {
		return []Range{r}, []int{0}
	}
	width := uint64(r.End) - uint64(r.Start) // 0 for the whole ring: 2^64
	upTo := func(o uint64) int64 { return sizes.Bytes(Range{Start: r.Start, End: ring.Token(uint64(r.Start) + o)}) }
	var ranges []Range
	var owners []int
	start, want := r.Start, int64(0)
	for k, share := range shares[:len(shares)-1] {
		want += share
		// The least offset o in [1, width-1] at which (r.Start, r.Start+o] holds want.
		lo, hi := uint64(1), width-1
		if hi < lo || upTo(hi) < want {
			continue // what is left of the shares so far goes with the next sub-range
		}
		for lo < hi {
			if mid := lo + (hi-lo)/2; upTo(mid) >= want {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if end := ring.Token(uint64(r.Start) + lo); end != start {
			ranges, owners = append(ranges, Range{Start: start, End: end}), append(owners, k)
			start = end
		}
	}
	return append(ranges, Range{Start: start, End: r.End}), append(owners, len(shares)-1)
}
