package movesim

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// lossChange returns the change that takes the nodes at indexes lost (dead) out of the
// ring, and the fabric of every node of the current ring (the lost ones are down).
func (c *cluster) lossChange(lost []int) (move.Change, move.Fabric, error) {
	nodes := c.ring.Nodes()
	down := map[ring.NodeID]bool{}
	var rest []ring.Node
	for k, n := range nodes {
		if slices.Contains(lost, k) {
			down[n.ID] = true
			continue
		}
		rest = append(rest, n)
	}
	target, err := ring.New(rest)
	if err != nil {
		return move.Change{}, move.Fabric{}, fmt.Errorf("movesim: the ring without the lost nodes: %w", err)
	}
	return move.Change{Current: c.ring, Target: target, Strategy: c.strategy, RF: c.s.RF, Sizes: c.sizes, Down: down},
		c.s.fabric(nodes), nil
}

// lossRecovery is the re-replication problem of a change that takes dead nodes out of the
// ring, as copies says (Scenario.Copies), and the problem its bound is computed on: with
// CopiesFree both are every range the dead nodes replicated, cut as Plan cuts the ring,
// needing as many new replicas as it lost (move.RecoveryFromChange); with CopiesHandoff the
// copies are those of the ring move.HandOff gives, merged from every live peer as a kura
// node merges them (move.RecoveryOfPlan), and the bound's problem is the same merged
// copies with their destinations free. It is the one place the scenarios build a recovery.
func lossRecovery(change move.Change, fabric move.Fabric, copies string) (run, bound *move.Recovery, err error) {
	if copies == CopiesFree {
		r, err := move.RecoveryFromChange(change, fabric)
		return r, r, err
	}
	change.Strict = true
	opts := move.RecoveryOptions{FromEveryPeer: true}
	hs, err := move.HandOff(change, fabric, opts)
	if err != nil {
		return nil, nil, err
	}
	handed := change
	if handed.Target, err = move.ApplyHandoffs(change.Target, hs); err != nil {
		return nil, nil, err
	}
	mv, err := move.Plan(handed)
	if err != nil {
		return nil, nil, err
	}
	if run, err = move.RecoveryOfPlan(handed, mv, fabric); err != nil {
		return nil, nil, err
	}
	bound, err = move.RecoveryFromChangeWith(change, fabric, opts)
	return run, bound, err
}

// loss simulates losing the nodes at indexes lost, scheduled by sch.
func (c *cluster) loss(lost []int, sch move.Scheduler) (*ScenarioResult, error) {
	change, fabric, err := c.lossChange(lost)
	if err != nil {
		return nil, err
	}
	res := &ScenarioResult{Scenario: c.s, Scheduler: sch.Name(), Timings: c.timings, Before: change.Current, After: change.Target}
	for _, k := range lost {
		res.EventNodes = append(res.EventNodes, c.ring.Nodes()[k].ID)
	}
	start := c.now()
	r, boundR, err := lossRecovery(change, fabric, c.s.Copies)
	if err != nil {
		return nil, err
	}
	schedule, err := sch.Schedule(r)
	if err != nil {
		return nil, err
	}
	res.Timings.PlanSeconds = c.since(start)
	start = c.now()
	bound, err := move.BoundRecovery(boundR)
	if err != nil {
		return nil, err
	}
	res.Timings.BoundSeconds = c.since(start)
	start = c.now()
	run, err := Run(r, schedule, Options{Bound: &bound, Timeline: c.s.Timeline})
	if err != nil {
		return nil, err
	}
	res.Timings.SimulationSeconds = c.since(start)
	res.Transfers, res.MovedBytes = len(r.Copies), r.CopyBytes()
	for _, nd := range boundR.Short {
		res.ShortBytes += nd.Bytes * int64(nd.Missing)
	}
	res.MinimumBytes = lostBytes(boundR) + res.ShortBytes
	res.fill(run, c.s.traffic(fabric, run.Load.Sent, run.Load.Received))
	return res, nil
}

// fill copies a finished simulation's figures into res.
func (res *ScenarioResult) fill(run *Result, nodes []NodeTraffic) {
	res.Run, res.Seconds, res.Bound, res.MaxActive, res.Nodes = run, run.Seconds, run.Bound, run.MaxActive, nodes
	res.Ratio, res.WholeRatio = run.Ratio, run.WholeRatio
}

// join simulates Count nodes joining at once: their tokens chosen together
// (move.JoinTokens), the movement planned by move.Plan, its transfers run from the
// sources Plan chose.
func (c *cluster) join() (*ScenarioResult, error) {
	s := c.s
	res := &ScenarioResult{Scenario: s, Scheduler: "plan", Timings: c.timings}
	start := c.now()
	joiners := make([]ring.Node, s.Count)
	for k := range joiners {
		joiners[k] = nodeAt(s.Nodes+k, s.Racks)
		res.EventNodes = append(res.EventNodes, joiners[k].ID)
	}
	method := move.BalancedTokens
	if s.TokenAllocation == AllocRandom {
		method = move.RandomTokens
	}
	tokens, err := move.JoinTokens(method, c.ring, joiners, s.VNodes, c.strategy, s.RF, rand.New(rand.NewPCG(s.Seed, streamJoin)))
	if err != nil {
		return nil, err
	}
	nodes := slices.Clone(c.ring.Nodes())
	for k, j := range joiners {
		j.Tokens = tokens[k]
		nodes = append(nodes, j)
	}
	target, err := ring.New(nodes)
	if err != nil {
		return nil, fmt.Errorf("movesim: the ring with the joiners: %w", err)
	}
	change := move.Change{Current: c.ring, Target: target, Strategy: c.strategy, RF: s.RF, Sizes: c.sizes}
	m, err := move.Plan(change)
	if err != nil {
		return nil, err
	}
	res.Timings.PlanSeconds = c.since(start)
	res.Before, res.After = c.ring, target
	fabric := s.fabric(nodes)
	start = c.now()
	bound, err := joinBound(change, m, fabric)
	if err != nil {
		return nil, err
	}
	res.Timings.BoundSeconds = c.since(start)
	start = c.now()
	run, err := RunTransfers(fabric, m.Transfers, streamLimits(fabric), Options{Bound: &bound, Timeline: s.Timeline})
	if err != nil {
		return nil, err
	}
	res.Timings.SimulationSeconds = c.since(start)
	res.Transfers, res.MovedBytes, res.MinimumBytes = len(m.Transfers), m.MovedBytes, m.MinimumBytes
	for _, sf := range m.Shortfalls {
		res.ShortBytes += sf.Bytes * int64(len(sf.Destinations))
	}
	res.fill(run, s.traffic(fabric, m.Send, m.Receive))
	return res, nil
}

// joinBound returns the physical bound of a join's movement m on fabric f, whose nodes
// all have the same rates (a Scenario's): the least time any choice of live sources, with
// copies split among them, could take.
//
// Nodes: Plan's own bound, move.MinMaxLoad, is the least largest per-node send over every
// such choice (SendBytes) and the largest receive (ReceiveBytes, fixed: the target ring
// chooses the destinations). With one send rate and one receive rate for all nodes, T is
// feasible for the nodes exactly when SendBytes fits in T at the send rate and
// ReceiveBytes at the receive rate (the two do not interact), so this is MinMaxLoad's
// max-flow with per-node rates, exact, without a network of its own; rates that differ per
// node would need the network's capacities scaled per node, which the scenarios never ask.
//
// Racks, when their links are limited: a lower bound, not exact (the multi-commodity case
// of docs/design/rereplication.md, section 2). A copy none of whose sources shares its
// destination's rack must enter that rack; one whose sources all sit on one other rack
// must leave that rack; and the copies that must cross share every uplink. Bound.Exact is
// true when no rack link is limited.
func joinBound(c move.Change, m *move.Movement, f move.Fabric) (move.RecoveryBound, error) {
	h := f.Nodes[0]
	sendBps, recvBps := min(h.DiskReadBps, h.NICSendBps), min(h.DiskWriteBps, h.NICRecvBps)
	send, recv := float64(m.Bound.SendBytes)/sendBps, float64(m.Bound.ReceiveBytes)/recvBps
	b := move.RecoveryBound{Seconds: max(send, recv), Exact: true, Limits: []string{"largest receive"}}
	if send > recv {
		b.Limits = []string{"largest send"}
	}
	if len(f.Uplinks) > 0 {
		rb, limit, err := joinRackBound(c, f)
		if err != nil {
			return b, err
		}
		b.Exact = false
		if rb > b.Seconds {
			b.Seconds, b.Limits = rb, []string{limit}
		}
	}
	// A transfer is Plan's, whole: none finishes before it would alone on its path.
	hw := map[ring.NodeID]move.Hardware{}
	for _, h := range f.Nodes {
		hw[h.ID] = h
	}
	up := map[string]move.Uplink{}
	for _, u := range f.Uplinks {
		up[u.Rack] = u
	}
	b.WholeSeconds = b.Seconds
	for _, t := range m.Transfers {
		b.WholeSeconds = max(b.WholeSeconds, float64(t.Bytes)/pathBps(hw[t.Source], hw[t.Destination], up))
	}
	return b, nil
}

// joinRackBound returns joinBound's rack part and the link that sets it.
func joinRackBound(c move.Change, f move.Fabric) (float64, string, error) {
	pieces, err := c.Pieces()
	if err != nil {
		return 0, "", err
	}
	rackOf := map[ring.NodeID]string{}
	for _, h := range f.Nodes {
		rackOf[h.ID] = h.Rack
	}
	in, out := map[string]float64{}, map[string]float64{}
	var cross float64
	for _, p := range pieces {
		bytes := float64(c.Sizes.Bytes(p.Range))
		var srcRacks []string
		for _, id := range p.Before {
			if !c.Down[id] && !slices.Contains(srcRacks, rackOf[id]) {
				srcRacks = append(srcRacks, rackOf[id])
			}
		}
		for _, d := range p.After {
			if slices.Contains(p.Before, d) || len(srcRacks) == 0 || slices.Contains(srcRacks, rackOf[d]) {
				continue
			}
			in[rackOf[d]] += bytes
			cross += bytes
			if len(srcRacks) == 1 {
				out[srcRacks[0]] += bytes
			}
		}
	}
	var best, upSum, downSum float64
	var limit string
	everyRack := true
	for _, u := range f.Uplinks {
		upSum, downSum = upSum+u.UpBps, downSum+u.DownBps
		everyRack = everyRack && u.UpBps > 0 && u.DownBps > 0
		if u.DownBps > 0 && in[u.Rack]/u.DownBps > best {
			best, limit = in[u.Rack]/u.DownBps, u.Rack+" down"
		}
		if u.UpBps > 0 && out[u.Rack]/u.UpBps > best {
			best, limit = out[u.Rack]/u.UpBps, u.Rack+" up"
		}
	}
	// With every rack's links limited, the crossing bytes share the uplinks' sum, and the
	// downlinks'. (A scenario limits every rack or none.)
	if everyRack && len(f.Uplinks) == len(slices.Compact(slices.Sorted(maps.Values(rackOf)))) {
		if cross/upSum > best {
			best, limit = cross/upSum, "all uplinks"
		}
		if cross/downSum > best {
			best, limit = cross/downSum, "all downlinks"
		}
	}
	return best, limit, nil
}

// pathBps returns the rate a transfer from s to d gets alone.
func pathBps(s, d move.Hardware, up map[string]move.Uplink) float64 {
	bps := min(s.DiskReadBps, s.NICSendBps, d.DiskWriteBps, d.NICRecvBps)
	if s.Rack != d.Rack {
		if u := up[s.Rack].UpBps; u > 0 {
			bps = min(bps, u)
		}
		if u := up[d.Rack].DownBps; u > 0 {
			bps = min(bps, u)
		}
	}
	return bps
}

// streamLimits are a plan's stream limits on f, by kura's scheduler's rule (move.Kura,
// step 4): a node runs 8 × its rate over the median rate of the other side at once each
// way (at least 2), a rack as many across its limited uplink as that rate fills.
func streamLimits(f move.Fabric) Limits {
	const per = 8
	var sends, recvs []float64
	for _, h := range f.Nodes {
		sends, recvs = append(sends, min(h.DiskReadBps, h.NICSendBps)), append(recvs, min(h.DiskWriteBps, h.NICRecvBps))
	}
	medSend, medRecv := median(sends), median(recvs)
	l := Limits{Nodes: map[ring.NodeID]move.Streams{}}
	for k, h := range f.Nodes {
		l.Nodes[h.ID] = move.Streams{Send: max(2, int(math.Ceil(per*sends[k]/medRecv))), Receive: max(2, int(math.Ceil(per*recvs[k]/medSend)))}
	}
	for _, u := range f.Uplinks {
		var st move.Streams
		if u.UpBps > 0 {
			st.Send = max(2, int(math.Ceil(per*u.UpBps/medRecv)))
		}
		if u.DownBps > 0 {
			st.Receive = max(2, int(math.Ceil(per*u.DownBps/medSend)))
		}
		if st != (move.Streams{}) {
			if l.Racks == nil {
				l.Racks = map[string]move.Streams{}
			}
			l.Racks[u.Rack] = st
		}
	}
	return l
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 1
	}
	ys := slices.Sorted(slices.Values(xs))
	return ys[len(ys)/2]
}

// lostBytes returns the bytes of the replicas r's copies make, each once: a merged
// replica's copies (one per live peer, RecoveryOptions.FromEveryPeer) count as one.
func lostBytes(r *move.Recovery) int64 {
	var out float64
	for _, c := range r.Copies {
		live := 0
		for _, p := range c.Peers {
			if !r.Down[p] {
				live++
			}
		}
		if c.Sources != nil && len(c.Sources) < live {
			out += float64(c.Bytes) / float64(live) // one of a merge's copies
		} else {
			out += float64(c.Bytes)
		}
	}
	return int64(math.Round(out))
}
