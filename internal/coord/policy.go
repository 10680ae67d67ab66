package coord

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// Replica is one member of a key's replica set as the coordinator sees it now.
type Replica struct {
	ID   ring.NodeID
	Up   bool      // the failure detector's view; down replicas are not asked
	Role ring.Role // the replica's engine role, for engine-aware policies
	// Refilling replicas take writes but are asked no reads and count toward no read
	// level: an in-memory replica that restarted with less than it had acknowledged is
	// pulling its rows back from its peers, and would answer "not found" for the rest.
	Refilling bool
	// Lagging marks a replica that may not hold yet a write this coordinator made: to the
	// key moments ago, because its copy was sent without waiting for it (the
	// read-optimized replica under EngineAware), or to any key, because the coordinator
	// holds a hint for it (a deferred or undelivered write). LoadAware reads ask it last.
	Lagging bool
	// Latency is this coordinator's recent view of the replica's response time (0:
	// unknown). LoadAware reads ask an overloaded replica last.
	Latency time.Duration
	// Backlogged marks a replica whose writes are sent without waiting for it and whose
	// pace (route.Pace) takes no more now: EngineAware defers its write to a hint instead,
	// so that a read-optimized replica that cannot keep up lags and catches up from hints
	// rather than taking the disk or the cores its host's other replicas need.
	Backlogged bool
}

// readable reports whether r may be asked to read.
func (r Replica) readable() bool { return r.Up && !r.Refilling }

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
	// Deferred are live replicas outside Counted that get a hint instead of the write
	// (backlogged ones). Should a counted target fail or be slow, they are sent the
	// write after all, and their acknowledgements count.
	Deferred []ring.NodeID
}

// ReadPlan is a policy's decision for one read.
type ReadPlan struct {
	Data    ring.NodeID   // asked for the row
	Digests []ring.NodeID // asked for a digest of the row; R-1 of them
	Spare   []ring.NodeID // live replicas not asked, in the order to ask them if one fails
	// Widen, when the answers disagree, asks every spare for its row as well as the
	// replicas that answered, so that the reply merges every live replica's cells and
	// every stale replica is repaired, the ones not asked at first included (the
	// engine-aware read's fallback to the write-optimized replica, seed 000, 3.3).
	Widen bool
}

// Policy decides, for one request, which replicas to ask and whose answers count. It
// must be deterministic and may assume that at least need replicas are up (the caller
// has checked). Implementations must not retain or modify replicas.
type Policy interface {
	Name() string
	PlanWrite(replicas []Replica, need int) WritePlan
	PlanRead(replicas []Replica, need int) ReadPlan
}

// PolicyByName returns the policy configured as name: uniform, engine-aware or
// load-aware.
func PolicyByName(name string) (Policy, error) {
	for _, p := range []Policy{Uniform{}, EngineAware{}, LoadAware{}} {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("coord: unknown routing policy %q (want uniform, engine-aware or load-aware)", name)
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
		case !r.readable():
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

// unavailable is ErrUnavailable for a request that needs need of replicas, saying which
// replicas it could not count on: an operator reading the error learns which node to look
// at.
func unavailable(need int, replicas []Replica, read bool) error {
	return unavailableIn(need, replicas, read, "")
}

// unavailableIn is unavailable for the replicas of one of a request's groups, named by
// where (" in replica group 2 of 2").
func unavailableIn(need int, replicas []Replica, read bool, where string) error {
	var down, refilling []string
	for _, r := range replicas {
		switch {
		case !r.Up:
			down = append(down, string(r.ID))
		case read && r.Refilling:
			refilling = append(refilling, string(r.ID))
		}
	}
	msg := fmt.Sprintf("needs %d of %d%s", need, len(replicas), where)
	if len(down) > 0 {
		msg += ", down: " + strings.Join(down, " ")
	}
	if len(refilling) > 0 {
		msg += ", refilling: " + strings.Join(refilling, " ")
	}
	return fmt.Errorf("%w (%s)", ErrUnavailable, msg)
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

// readableCount counts the replicas a read may ask.
func readableCount(replicas []Replica) int {
	n := 0
	for _, r := range replicas {
		if r.readable() {
			n++
		}
	}
	return n
}

// EngineAware is the heterogeneous cluster's routing (seed 000, sections 3.2 and 3.3):
// each request goes to the replicas whose engine serves it cheaply.
//
// Writes go to every live replica, but only the write-optimized and in-memory ones (the
// synchronous set) count toward W; the read-optimized replica's write is sent at the same
// time and its acknowledgement waited for only once a synchronous one fails (WritePlan.
// Counted), or from the start when the live synchronous replicas are fewer than W.
//
// Reads ask replicas in the order read-optimized, in-memory, write-optimized: data from
// the first, digests from the next R-1; the rest are spares, asked in that order when
// one fails. When the answers disagree, every spare is asked too (ReadPlan.Widen): the
// write-optimized replica, written synchronously, holds what the others may lack, and
// every stale replica gets the merged row.
//
// A Backlogged replica outside the synchronous set is deferred (WritePlan.Deferred):
// hinted now, sent the write only if the write falls back on it. Not when the live
// synchronous replicas are fewer than W: then every replica counts from the start.
//
// Replicas of the same role keep the order given (the ring's walk). Down replicas are
// skipped and, for writes, hinted.
type EngineAware struct{}

// Name implements Policy.
func (EngineAware) Name() string { return "engine-aware" }

// The orders in which EngineAware prefers roles: for writes, and for reads.
var (
	writeOrder = []ring.Role{ring.WriteOptimized, ring.InMemory, ring.ReadOptimized}
	readOrder  = []ring.Role{ring.ReadOptimized, ring.InMemory, ring.WriteOptimized}
)

// rank returns r's place in order; roles not in it come last.
func rank(order []ring.Role, r ring.Role) int {
	if i := slices.Index(order, r); i >= 0 {
		return i
	}
	return len(order)
}

// Synchronous reports whether EngineAware counts writes to a replica of role r from the
// start; a write to any other replica is sent without waiting for it.
func Synchronous(r ring.Role) bool { return r == ring.WriteOptimized || r == ring.InMemory }

// byRank returns the replicas stably sorted by key.
func byRank(replicas []Replica, key func(Replica) int) []Replica {
	out := slices.Clone(replicas)
	slices.SortStableFunc(out, func(a, b Replica) int { return key(a) - key(b) })
	return out
}

// PlanWrite implements Policy.
func (EngineAware) PlanWrite(replicas []Replica, need int) WritePlan {
	var p WritePlan
	for _, r := range byRank(replicas, func(r Replica) int { return rank(writeOrder, r.Role) }) {
		switch {
		case !r.Up:
			p.Hinted = append(p.Hinted, r.ID)
		case Synchronous(r.Role):
			p.Targets = append(p.Targets, r.ID)
			p.Counted = append(p.Counted, r.ID)
		case r.Backlogged:
			p.Deferred = append(p.Deferred, r.ID)
		default:
			p.Targets = append(p.Targets, r.ID)
		}
	}
	if len(p.Counted) < need {
		// Too few synchronous replicas: every acknowledgement counts, and every live
		// replica is sent the write.
		p.Counted = nil
		p.Targets = append(p.Targets, p.Deferred...)
		p.Deferred = nil
	}
	return p
}

// PlanRead implements Policy.
func (EngineAware) PlanRead(replicas []Replica, need int) ReadPlan {
	p := Uniform{}.PlanRead(byRank(replicas, func(r Replica) int { return rank(readOrder, r.Role) }), need)
	p.Widen = true
	return p
}

// LoadAware is EngineAware with two refinements for reads, beyond the paper (its sections
// 4.2 and 7 name them as future work); writes are planned as EngineAware plans them.
//
//   - A key this coordinator wrote moments ago is read from the replicas that certainly
//     have it: replicas marked Lagging (whose copy was sent without waiting, or that
//     the coordinator holds hints for) are asked last, so the read does not find a
//     stale read-optimized replica, disagree, and pay for a second round and a repair.
//   - An overloaded replica is asked after the others: one whose recent read latency is
//     over OverloadFactor times the least among the replicas that could be asked, and over
//     OverloadFloor. The paper's heterogeneous cluster lost to the baseline on the 50/50
//     workload because asynchronous writes slowed the read-optimized node, whose reads
//     then held every read back.
//   - Overloaded replicas are ranked the same way among themselves, level by level: on
//     disks, the in-memory replica is the least by far and both the read-optimized and
//     the write-optimized replica are over three times it, yet one of them must be asked
//     (R=2), and a read-optimized replica whose disk its asynchronous writes keep busy
//     can answer three times slower than a write-optimized one whose disk is idle.
//
// Otherwise the order is EngineAware's: read-optimized, in-memory, write-optimized.
type LoadAware struct{}

// OverloadFactor and OverloadFloor define an overloaded replica for LoadAware.
const (
	OverloadFactor = 3
	OverloadFloor  = time.Millisecond
)

// Name implements Policy.
func (LoadAware) Name() string { return "load-aware" }

// PlanWrite implements Policy.
func (LoadAware) PlanWrite(replicas []Replica, need int) WritePlan {
	return EngineAware{}.PlanWrite(replicas, need)
}

// PlanRead implements Policy.
func (LoadAware) PlanRead(replicas []Replica, need int) ReadPlan {
	levels := overloadLevels(replicas)
	// Overloaded after lagging after the rest; by role within each.
	key := func(r Replica) int {
		k := rank(readOrder, r.Role)
		if r.Lagging {
			k += 10
		}
		return k + 20*levels[r.ID]
	}
	p := Uniform{}.PlanRead(byRank(replicas, key), need)
	p.Widen = true
	return p
}

// overloadLevels returns each replica's overload level: 0 for the replicas whose latency
// is unknown, under OverloadFloor or within OverloadFactor of the least among the
// readable replicas; the others are level 1 or more, found the same way among
// themselves. Each level's least is over OverloadFactor times the one before, so there
// are at most as many levels as replicas.
func overloadLevels(replicas []Replica) map[ring.NodeID]int {
	levels := make(map[ring.NodeID]int, len(replicas))
	for level := 0; ; level++ {
		least := time.Duration(0)
		for _, r := range replicas {
			if levels[r.ID] == level && r.readable() && r.Latency > 0 && (least == 0 || r.Latency < least) {
				least = r.Latency
			}
		}
		moved := false
		for _, r := range replicas {
			if least > 0 && levels[r.ID] == level && r.Latency > OverloadFloor && r.Latency > OverloadFactor*least {
				levels[r.ID], moved = level+1, true
			}
		}
		if !moved {
			return levels
		}
	}
}
