package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// Placement says where keys live at one epoch of the cluster metadata (meta.Placement
// satisfies it): the replica sets to write and to read each token at. While a range
// moves between replica sets (membership.md, section 2), it is written to both and read
// from its current one. Implementations are immutable and safe for concurrent use.
type Placement interface {
	// WriteGroups returns the replica groups a write to token t goes to: the current set
	// and, while t's range is moving, its pending set, in that order. A write is
	// acknowledged once its consistency level is met in each group separately. The
	// slices are the caller's.
	WriteGroups(t ring.Token) [][]ring.NodeID
	// ReadSet returns the replicas a read of token t goes to: the current set. The slice
	// is the caller's.
	ReadSet(t ring.Token) []ring.NodeID
	// RangeEnds returns, in token order, the last tokens of ranges over which WriteGroups
	// and ReadSet give the same sets (the range of RangeEnds[i] holds the tokens after
	// RangeEnds[i-1], the first range wrapping from the last end). The slice is the
	// caller's.
	RangeEnds() []ring.Token
}

// placed is a placement as a view holds it.
type placed struct {
	epoch uint64
	p     Placement
	// ranges has one vnode per range of p (Placement.RangeEnds), owned by a node named
	// "placement": a ring for its ranges only (RangeIndex, RangeEnd), which the view's
	// cache of replica sets and a scan's spans (RingView) are indexed by.
	ranges *ring.Ring
}

// ErrNoRanges is SetPlacement's error for a placement with no ranges.
var ErrNoRanges = errors.New("machine: placement has no ranges")

// SetPlacement makes p, the cluster metadata's placement at epoch, place keys from now
// on: writes go to its WriteGroups (every group with the failure detector's opinion of
// each replica, hinted when down, as a single set is), reads, scans and Leaders to its
// ReadSet. A nil p places keys by the gossip ring (SetView) and the configured strategy
// again, as before any placement, at epoch 0. Membership (liveness, roles, hosts) still
// comes from SetView. Requests started after it returns use it; it and SetView replace
// the view in the order of the calls.
//
// Replica sets are computed once per range of p and cached until the next SetView or
// SetPlacement, so that a token outside a moving range costs what it costs without a
// placement.
func (n *Node) SetPlacement(epoch uint64, p Placement) error {
	var pl *placed
	if p != nil {
		ends := p.RangeEnds()
		if len(ends) == 0 {
			return ErrNoRanges
		}
		r, err := ring.New([]ring.Node{{ID: "placement", Tokens: ends}})
		if err != nil {
			return fmt.Errorf("machine: placement's ranges: %w", err)
		}
		pl = &placed{epoch: epoch, p: p, ranges: r}
	}
	n.setMu.Lock()
	defer n.setMu.Unlock()
	old := n.view.Load()
	n.store(&view{ring: old.ring, members: old.members, behind: old.behind, placed: pl})
	return nil
}

// Epoch returns the epoch of the placement keys are placed by (SetPlacement), 0 when
// none: the epoch the driver puts on the internode requests it sends.
func (n *Node) Epoch() uint64 {
	if pl := n.view.Load().placed; pl != nil {
		return pl.epoch
	}
	return 0
}

// placedSets computes the replica sets of token t by v's placement. A range written to
// one group that is its read set costs what a range of the gossip ring does.
func (n *Node) placedSets(v *view, t ring.Token) *rangeSets {
	read := v.placed.p.ReadSet(t)
	groups := v.placed.p.WriteGroups(t)
	s := &rangeSets{read: n.decorate(v, read)}
	if len(groups) == 1 && slices.Equal(groups[0], read) {
		return s
	}
	s.groups = make([][]coord.Replica, len(groups))
	for i, g := range groups {
		if slices.Equal(g, read) {
			s.groups[i] = s.read
		} else {
			s.groups[i] = n.decorate(v, g)
		}
		for _, r := range s.groups[i] {
			if !slices.ContainsFunc(s.all, func(o coord.Replica) bool { return o.ID == r.ID }) {
				s.all = append(s.all, r)
			}
		}
	}
	return s
}
