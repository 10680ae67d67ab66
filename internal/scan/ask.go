package scan

import (
	"fmt"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// Ask returns the replicas a page of a span is read from at level: as many as the level
// requires of the set, live and not refilling, in the set's order (machine orders a set
// with the coordinator's own copy first), and the other readable ones as spares, to ask
// in place of one that fails. It returns coord.ErrUnavailable when too few are
// readable. A refilling replica (a restarted in-memory node) is never asked: it may lack
// keys it acknowledged before.
func Ask(set []coord.Replica, level coord.Level) (ask, spares []ring.NodeID, err error) {
	need := level.Required(len(set))
	for _, r := range set {
		switch {
		case !r.Up || r.Refilling:
		case len(ask) < need:
			ask = append(ask, r.ID)
		default:
			spares = append(spares, r.ID)
		}
	}
	if len(ask) < need {
		return nil, nil, fmt.Errorf("%w: scan at %s needs %d of %d replicas, %d readable", coord.ErrUnavailable,
			level, need, len(set), len(ask))
	}
	return ask, spares, nil
}
