package main

import (
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// bounds fills the lost bytes, kura's plan's loads and the physical bounds, from the rows'
// sizes placed on the rings before and after the removal (the ring after is the one the
// removal recorded: the dead node's tokens gone, or handed to survivors).
func (r *Row) bounds(before, after *cluster, keys []keySize, ids map[int]string) error {
	cur, err := buildRing(before)
	if err != nil {
		return err
	}
	target, err := buildRing(after)
	if err != nil {
		return err
	}
	strategy, err := ring.StrategyByName(before.Placement)
	if err != nil {
		return err
	}
	victim := ring.NodeID(r.VictimID)
	sizes := make([]int64, cur.RangeCount())
	lost := map[int]bool{}
	for _, k := range keys {
		r.ReplicaBytes += k.bytes
		i := cur.RangeIndex(k.token)
		sizes[i] += k.bytes
		if slices.Contains(strategy.Replicas(cur, k.token, r.RF), victim) {
			r.LostBytes += k.bytes
			lost[i] = true
		}
	}
	r.LostRanges = len(lost)
	// Both rings have the same tokens, or the target fewer (the dead node's): every piece
	// the planner cuts is a range of cur, whose bytes PerRange has exactly; only a copy the
	// planner splits among sources gets a share by width.
	pr, err := move.NewPerRange(cur, sizes)
	if err != nil {
		return err
	}
	change := move.Change{Current: cur, Target: target, Strategy: strategy, RF: r.RF, Sizes: pr,
		Down: map[ring.NodeID]bool{victim: true}, Strict: true}
	return r.physicalBounds(change, target, ids)
}

// physicalBounds fills kura's plan (move.Plan's transfers as a kura node runs them,
// move.RecoveryOfPlan), the physical bounds with one source per copy and with every peer
// a source, the row's Bound and ratios, and the simulated time of kura's scheduler.
func (r *Row) physicalBounds(change move.Change, target *ring.Ring, ids map[int]string) error {
	// Without a limit (the calibration) the bounds are computed at 1 B/s: their seconds
	// are the bytes the busiest resource must carry, and over the recovery's time they
	// give the rate every node streamed at as far as the bound sees it (EffectiveBps).
	rate := float64(r.Limit)
	if rate <= 0 {
		rate = 1
	}
	var fab move.Fabric
	for _, n := range target.Nodes() {
		fab.Nodes = append(fab.Nodes, move.Hardware{ID: n.ID, Host: n.Host, Rack: n.Rack, Role: n.Role, FreeBytes: 1 << 50,
			DiskReadBps: rate, DiskWriteBps: rate, NICSendBps: rate, NICRecvBps: rate})
	}
	if err := r.plan(change, fab, ids); err != nil {
		return err
	}
	rec, err := move.RecoveryFromChange(change, fab)
	if err != nil {
		return err
	}
	if r.OneSource, err = boundOf(rec); err != nil {
		return err
	}
	every, err := move.RecoveryFromChangeWith(change, fab, move.RecoveryOptions{FromEveryPeer: true})
	if err != nil {
		return err
	}
	eb, err := boundOf(every)
	if err != nil {
		return err
	}
	r.EveryPeer, r.BoundKind, r.Bound = &eb, "every-peer", eb.Seconds
	switch {
	case r.Recovery <= 0:
	case r.Limit > 0:
		r.Ratio = r.Bound / r.Recovery
		r.PlanRatio = r.PlanSeconds / r.Recovery
	default:
		r.EffectiveBps = r.Bound / r.Recovery
	}
	if r.Limit > 0 {
		if r.SimSeconds, err = simulate(rec); err != nil {
			return err
		}
		err = r.handOffCheck(change, fab)
	}
	return err
}

// plan fills what kura's plan moves: move.Plan's transfers as a kura node runs them (a
// copy from the leaving replica when it is live, else a merge from every replica that
// stays, every old one when none does), per node, and the time of those copies at the
// limit (their bound with every endpoint fixed). WaitsOnDead counts the transfers whose
// merge a kura node would also ask of the dead node (none of the old replicas stays and
// internal/node's mergeSources then takes every old one, down or not): they never finish.
func (r *Row) plan(change move.Change, fab move.Fabric, ids map[int]string) error {
	mv, err := move.Plan(change)
	if err != nil {
		return err
	}
	pieces, err := change.Pieces()
	if err != nil {
		return err
	}
	r.PlanTransfers = len(mv.Transfers)
	for _, tr := range mv.Transfers {
		if tr.Leaving && !change.Down[tr.Source] {
			continue
		}
		for _, p := range pieces {
			if p.Range.End == tr.Range.End || contains(p.Range, tr.Range.End) {
				stays := slices.ContainsFunc(p.Before, func(id ring.NodeID) bool { return id != tr.Destination && slices.Contains(p.After, id) })
				if !stays && slices.ContainsFunc(p.Before, func(id ring.NodeID) bool { return change.Down[id] }) {
					r.WaitsOnDead++
					r.WaitsOnDeadBytes += tr.Bytes
				}
				break
			}
		}
	}
	rec, err := move.RecoveryOfPlan(change, mv, fab)
	if err != nil {
		return err
	}
	num := map[ring.NodeID]int{}
	for k, id := range ids {
		num[ring.NodeID(id)] = k
	}
	r.PlanSend, r.PlanReceive = map[int]int64{}, map[int]int64{}
	for i, c := range rec.Copies {
		to := rec.Candidates(i)
		if len(c.Sources) == 0 || len(to) == 0 {
			continue
		}
		r.PlanSend[num[c.Sources[0]]] += c.Bytes
		r.PlanReceive[num[to[0]]] += c.Bytes
		r.PlanMovedSum += c.Bytes
	}
	var most int64
	for k, b := range r.PlanSend {
		if b > most {
			most, r.PlanBusiest = b, fmt.Sprintf("n%d send", k)
		}
	}
	for k, b := range r.PlanReceive {
		if b > most {
			most, r.PlanBusiest = b, fmt.Sprintf("n%d receive", k)
		}
	}
	if r.Limit > 0 {
		r.PlanSeconds = float64(most) / float64(r.Limit)
		r.SimPlanSeconds, err = simulatePlan(rec)
	}
	return err
}

// contains reports whether token t is in rg, (Start, End], wrapping.
func contains(rg move.Range, t ring.Token) bool {
	if rg.Start < rg.End {
		return rg.Start < t && t <= rg.End
	}
	return t > rg.Start || t <= rg.End
}

func boundOf(rec *move.Recovery) (Bound, error) {
	b, err := move.BoundRecovery(rec)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Seconds: b.Seconds, WholeSeconds: b.WholeSeconds, Exact: b.Exact, Limits: b.Limits,
		CopyBytes: rec.CopyBytes(), Copies: len(rec.Copies)}, nil
}

// HandOffCheck is move.HandOff run on the run's rings after the fact: the tokens it hands
// off when the dead node's tokens are taken out, with the leader's estimate of the sizes
// (the data spread evenly over the ring, as topo.Plan plans) and with the rows' real sizes,
// and the time at the limit of the plan each gives (its busiest node, as plan_bound_s).
type HandOffCheck struct {
	UniformHandoffs int     `json:"uniform_handoffs"`
	UniformSeconds  float64 `json:"uniform_plan_s"`
	RowsHandoffs    int     `json:"rows_handoffs"`
	RowsSeconds     float64 `json:"rows_plan_s"`
}

// handOffCheck fills r.HandOff (limited runs only).
func (r *Row) handOffCheck(change move.Change, fab move.Fabric) error {
	var nodes []ring.Node
	for _, n := range change.Current.Nodes() {
		if !change.Down[n.ID] {
			nodes = append(nodes, n)
		}
	}
	without, err := ring.New(nodes)
	if err != nil {
		return err
	}
	// Every node of the current ring, the dead one too (a peer of its ranges, never a
	// source): at 1 B/s for HandOff as topo.Plan describes them, at the limit for the time.
	var unit, all move.Fabric
	rate := fab.Nodes[0].NICSendBps
	for _, n := range change.Current.Nodes() {
		h := move.Hardware{ID: n.ID, Host: n.Host, Rack: n.Rack, Role: n.Role, FreeBytes: 1 << 50,
			DiskReadBps: 1, DiskWriteBps: 1, NICSendBps: 1, NICRecvBps: 1}
		unit.Nodes = append(unit.Nodes, h)
		h.DiskReadBps, h.DiskWriteBps, h.NICSendBps, h.NICRecvBps = rate, rate, rate, rate
		all.Nodes = append(all.Nodes, h)
	}
	run := func(sizes move.Sizes) (int, float64, error) {
		c := change
		c.Target, c.Sizes = without, sizes
		hs, err := move.HandOff(c, unit, move.RecoveryOptions{FromEveryPeer: true})
		if err != nil {
			return 0, 0, err
		}
		if len(hs) > 0 {
			if c.Target, err = move.ApplyHandoffs(without, hs); err != nil {
				return 0, 0, err
			}
		}
		c.Sizes = change.Sizes // the time in the rows' bytes either way
		mv, err := move.Plan(c)
		if err != nil {
			return 0, 0, err
		}
		rec, err := move.RecoveryOfPlan(c, mv, all)
		if err != nil {
			return 0, 0, err
		}
		b, err := move.BoundRecovery(rec)
		return len(hs), b.Seconds, err
	}
	var hc HandOffCheck
	if hc.UniformHandoffs, hc.UniformSeconds, err = run(move.Uniform(r.ReplicaBytes)); err != nil {
		return err
	}
	if hc.RowsHandoffs, hc.RowsSeconds, err = run(change.Sizes); err != nil {
		return err
	}
	r.HandOff = &hc
	return nil
}
