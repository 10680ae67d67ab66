package coord

import (
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
)

// Replica is one member of a key's replica set as the coordinator sees it now.
type Replica struct {
	ID   ring.NodeID
	Up   bool        // the failure detector's view; down replicas are not asked
	Role engine.Role // the replica's engine role, for engine-aware policies
}

// WritePlan is a policy's decision for one write.
type WritePlan struct {
	// Targets are the replicas sent the write, all at once.
	Targets []ring.NodeID
	// Counted, when not nil, are the targets whose acknowledgements complete the write;
	// once one of them fails or times out, every target's acknowledgement counts. Nil
	// means every target counts from the start.
	Counted []ring.NodeID
	// Hinted are the replicas that get a hint instead of the write (down replicas).
	Hinted []ring.NodeID
}

// ReadPlan is a policy's decision for one read.
type ReadPlan struct {
	Data    ring.NodeID   // asked for the row
	Digests []ring.NodeID // asked for a digest of the row; R-1 of them
	Spare   []ring.NodeID // live replicas not asked, in the order to ask them if one fails
}

// Policy decides, for one request, which replicas to ask and whose answers count. It
// must be deterministic and may assume that at least need replicas are up (the caller
// has checked). Implementations must not retain or modify replicas.
type Policy interface {
	Name() string
	PlanWrite(replicas []Replica, need int) WritePlan
	PlanRead(replicas []Replica, need int) ReadPlan
}

// Uniform is Cassandra's routing: a write goes to every live replica and any need
// acknowledgements complete it; a read asks the first live replica (in the order given,
// which the driver sorts by proximity or recent latency) for data and the next need-1 for
// digests.
type Uniform struct{}

// Name implements Policy.
func (Uniform) Name() string { return "uniform" }

// PlanWrite implements Policy.
func (Uniform) PlanWrite(replicas []Replica, _ int) WritePlan {
	var p WritePlan
	for _, r := range replicas {
		if r.Up {
			p.Targets = append(p.Targets, r.ID)
		} else {
			p.Hinted = append(p.Hinted, r.ID)
		}
	}
	return p
}

// PlanRead implements Policy.
func (Uniform) PlanRead(replicas []Replica, need int) ReadPlan {
	var p ReadPlan
	for _, r := range replicas {
		switch {
		case !r.Up:
		case p.Data == "":
			p.Data = r.ID
		case len(p.Digests) < need-1:
			p.Digests = append(p.Digests, r.ID)
		default:
			p.Spare = append(p.Spare, r.ID)
		}
	}
	return p
}

// live counts the replicas that are up.
func live(replicas []Replica) int {
	n := 0
	for _, r := range replicas {
		if r.Up {
			n++
		}
	}
	return n
}
