package move

import (
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// RefillTask is one ring range for a node to pull from its other replicas.
type RefillTask struct {
	// Keys are the range's bounds in the engines' key order (ring.EngineKeyRanges).
	Keys []ring.KeyRange
	// Sources are the range's other replicas, write-optimized ones first: they took
	// every write synchronously. A refill pulls from every one of them, not just one: a
	// write acknowledged at QUORUM is on at least one replica besides the refilling one,
	// but not necessarily on any particular one.
	Sources []ring.NodeID
}

// Refill lists the ranges of r whose replica sets (under strategy and rf) hold self, with
// the other replicas of each.
func Refill(r *ring.Ring, strategy ring.Strategy, rf int, self ring.NodeID) []RefillTask {
	var tasks []RefillTask
	for i := range r.RangeCount() {
		set := strategy.Replicas(r, r.RangeEnd(i), rf)
		if !slices.Contains(set, self) {
			continue
		}
		t := RefillTask{Keys: ring.EngineKeyRanges(r.RangeStart(i), r.RangeEnd(i))}
		for _, id := range set {
			if id != self {
				t.Sources = append(t.Sources, id)
			}
		}
		slices.SortStableFunc(t.Sources, func(a, b ring.NodeID) int {
			return writeFirst(r, a) - writeFirst(r, b)
		})
		tasks = append(tasks, t)
	}
	return tasks
}

func writeFirst(r *ring.Ring, id ring.NodeID) int {
	if n, ok := r.Node(id); ok && n.Role == ring.WriteOptimized {
		return 0
	}
	return 1
}
