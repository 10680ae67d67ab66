package movesim

import (
	"fmt"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Limits are how many transfers run at once, as a move.Schedule's stream limits are: per
// node (Default for a node absent from Nodes) and per rack across its uplink. Zero is no
// limit.
type Limits struct {
	Nodes   map[ring.NodeID]move.Streams
	Default move.Streams
	Racks   map[string]move.Streams
}

// RunTransfers simulates transfers whose sources and destinations are already chosen
// (move.Plan's) on fabric f: each a flow over the same links as a recovery's copy, started
// in order, at time 0 and whenever transfers complete, as limits allow. opts.Bound, when
// given, is the bound the result's ratios are against (a plan's bound is not a recovery's,
// so Run's is not computed: without it Bound is zero).
//
// The transfers run through Run's driver as a recovery of one copy per transfer, whose
// only source is the transfer's and whose schedule sends it to the transfer's
// destination: the executor is the same one. That recovery keeps only the host rule (a
// node never copies to itself) and the fabric's free space.
func RunTransfers(f move.Fabric, transfers []move.Transfer, limits Limits, opts Options) (*Result, error) {
	needs := make([]move.Need, len(transfers))
	order := make([]move.Assignment, len(transfers))
	for k, t := range transfers {
		needs[k] = move.Need{Range: t.Range, Bytes: t.Bytes, Peers: []ring.NodeID{t.Source}, Missing: 1}
		order[k] = move.Assignment{Copy: k, Source: t.Source, Destination: t.Destination}
	}
	r, err := move.NewRecovery(f, move.Rules{RF: 1}, nil, needs)
	if err != nil {
		return nil, fmt.Errorf("movesim: transfers: %w", err)
	}
	if len(r.Copies) != len(transfers) {
		return nil, fmt.Errorf("movesim: transfers: %d of %d have no room at any destination", len(transfers)-len(r.Copies), len(transfers))
	}
	s := &move.Schedule{Scheduler: "plan", Order: order, Streams: limits.Nodes, Default: limits.Default, RackStreams: limits.Racks}
	var b move.RecoveryBound
	if opts.Bound != nil {
		b = *opts.Bound
	}
	opts.Bound = &b
	return Run(r, s, opts)
}
