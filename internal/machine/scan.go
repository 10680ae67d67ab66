package machine

import (
	"math"
	"slices"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// RingView is one view's ring and replica sets, for requests that visit many token
// ranges one after another (a scan's pages): each page is placed by the view it started
// with, and a scan picks up the newest view at its next page. The zero value has no ring.
// With a placement (SetPlacement) its ranges are the placement's and its replica sets
// the placement's read sets.
type RingView struct {
	n *Node
	v *view
}

// RingView returns the current view's ring and replica sets.
func (n *Node) RingView() RingView { return RingView{n: n, v: n.view.Load()} }

// Ring is the ring whose ranges Replicas takes: the view's ring, nil while no member
// owns tokens; with a placement, a ring of its ranges (Placement.RangeEnds), for its
// ranges only (its one node, "placement", owns none of them).
func (rv RingView) Ring() *ring.Ring {
	if rv.v == nil {
		return nil
	}
	return rv.v.index
}

// Replicas returns the replica set of the ring's range i (ring.RangeIndex), as Replicas
// returns a key's: the failure detector's opinion of each, this node first when it is
// one. The caller must not modify it.
func (rv RingView) Replicas(i int) []coord.Replica { return rv.n.rangeSetsAt(rv.v, i).read }

// SameReplicas reports whether ranges i and j have the same replicas, in any order.
func (rv RingView) SameReplicas(i, j int) bool {
	a, b := rv.Replicas(i), rv.Replicas(j)
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.ContainsFunc(b, func(o coord.Replica) bool { return o.ID == r.ID }) {
			return false
		}
	}
	return true
}

// ReplicatedShare returns the share of the token space (0 to 1) whose keys node id
// holds a replica of: a node holding rows rows holds about rows/share keys of the
// cluster's. 0 when it replicates nothing.
func (rv RingView) ReplicatedShare(id ring.NodeID) float64 {
	r := rv.Ring()
	if r == nil {
		return 0
	}
	share := 0.0
	for i := range r.RangeCount() {
		if !slices.ContainsFunc(rv.Replicas(i), func(o coord.Replica) bool { return o.ID == id }) {
			continue
		}
		if r.RangeCount() == 1 {
			return 1
		}
		width := uint64(r.RangeEnd(i)) - uint64(r.RangeStart(i)) // (start, end], wrapping
		share += float64(width) / math.Exp2(64)
	}
	return share
}
