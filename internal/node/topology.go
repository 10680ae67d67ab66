package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/metalog"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/topo"
)

// changeTopology runs an operator's membership change (POST /topology): it plans it against
// the state this node has, and for commit, decommission and removenode proposes it to the
// metadata log, which refuses it if the state moved on (the operator runs it again).
func (n *Node) changeTopology(req admin.TopologyRequest) (string, error) {
	c := n.clusterP.Load()
	if c == nil || c.rl == nil {
		return "", admin.ErrNoTopology
	}
	return c.rl.topology(req)
}

func (rl *ringLog) topology(req admin.TopologyRequest) (string, error) {
	st := rl.log.State()
	if st.Epoch == 0 {
		return "", fmt.Errorf("%w: this node has no cluster metadata yet", admin.ErrTopologyUnavailable)
	}
	ids := func(s []string) []ring.NodeID {
		out := make([]ring.NodeID, len(s))
		for i, v := range s {
			out[i] = ring.NodeID(v)
		}
		return out
	}
	var ops topo.Ops
	propose := true
	switch req.Op {
	case "stream-limit":
		if req.Limit < 0 {
			return "", errors.New("the stream limit must not be negative")
		}
		rl.setStreamLimit(req.Limit)
		return fmt.Sprintf("stream limit of %s: %d bytes per second sent and received, each (0: none)\n", rl.c.self, req.Limit), nil
	case "cancel":
		return rl.cancel(st)
	case "cleanup":
		n, err := rl.cleanup()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("cleanup of %s: deleted the rows of %d ranges it no longer replicates (epoch %d)\n", rl.c.self, n, st.Epoch), nil
	case "decommission":
		ops.Leaves = ids(req.Nodes)
		if len(ops.Leaves) == 0 {
			ops.Leaves = []ring.NodeID{rl.c.self}
		}
	case "removenode":
		if len(req.Nodes) == 0 {
			return "", errors.New("removenode needs the IDs of the dead nodes")
		}
		ops.Removes = ids(req.Nodes)
	case "plan", "commit":
		propose = req.Op == "commit"
		ops = topo.Ops{Joins: ids(req.Joins), Leaves: ids(req.Leaves), Removes: ids(req.Removes)}
		if ops.Empty() {
			for _, g := range rl.c.gossip.Members() {
				if m, ok := st.Member(g.ID); ok && g.Staged && m.State == meta.Joining {
					ops.Joins = append(ops.Joins, g.ID)
				}
			}
		}
		if ops.Empty() {
			return "nothing to do: no staged joiners, and no --join, --leave or --remove\n", nil
		}
	default:
		return "", fmt.Errorf("unknown topology operation %q", req.Op)
	}
	sc, mv, err := topo.Plan(st, ops, rl.planConfig(), rl.down(st), newRand())
	if err != nil {
		return "", err
	}
	report := describePlan(sc, mv, rl.recv.Limit())
	if !propose {
		return report + "not started: kura admin commit starts it\n", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	after, err := rl.log.Propose(ctx, sc) // the log hands the state to onState
	if errors.Is(err, metalog.ErrUnavailable) {
		return "", fmt.Errorf("%w: %w", admin.ErrTopologyUnavailable, err)
	}
	if err != nil {
		return "", err
	}
	return report + fmt.Sprintf("started at epoch %d: kura admin status shows its progress\n", after.Epoch), nil
}

// cancel cancels the change in flight: its moved ranges stream back.
func (rl *ringLog) cancel(st *meta.State) (string, error) {
	cc, err := topo.PlanCancel(st, rl.down(st))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	after, err := rl.log.Propose(ctx, cc)
	if errors.Is(err, metalog.ErrUnavailable) {
		return "", fmt.Errorf("%w: %w", admin.ErrTopologyUnavailable, err)
	}
	if err != nil {
		return "", err
	}
	if after.Change == nil {
		return fmt.Sprintf("change %d cancelled at epoch %d: no range had moved\n", cc.Change, after.Epoch), nil
	}
	return fmt.Sprintf("change %d cancelled at epoch %d: %d moved ranges stream back (%d transfers)\n", cc.Change, after.Epoch,
		len(after.Change.Ranges), len(after.Change.Transfers)), nil
}

// describePlan is a change's plan for the operator: what it does, the bytes each node
// sends and receives, and the time bound at the stream limit.
func describePlan(sc meta.StartChange, mv *move.Movement, limit int64) string {
	var b strings.Builder
	what := describeChange(&meta.Change{Joins: joinedIDs(sc.Joins), Leaves: sc.Leaves, Removes: sc.Removes, Replaces: sc.Replaces})
	fmt.Fprintf(&b, "change %d at epoch %d: %s\n", sc.ID, sc.Epoch, what)
	fmt.Fprintf(&b, "%d transfers, %s (the minimum is %s)\n", len(sc.Transfers), bytesString(mv.MovedBytes), bytesString(mv.MinimumBytes))
	nodes := map[ring.NodeID]bool{}
	for id := range mv.Send {
		nodes[id] = true
	}
	for id := range mv.Receive {
		nodes[id] = true
	}
	var sorted []ring.NodeID
	for id := range nodes {
		sorted = append(sorted, id)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, id := range sorted {
		fmt.Fprintf(&b, "  %s sends %s, receives %s\n", id, bytesString(mv.Send[id]), bytesString(mv.Receive[id]))
	}
	if limit > 0 {
		fmt.Fprintf(&b, "at the stream limit of %s/s it takes at least %.0f s\n", bytesString(limit), mv.BoundSeconds(float64(limit)))
	}
	return b.String()
}

func joinedIDs(js []meta.Join) []ring.NodeID {
	out := make([]ring.NodeID, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// status is the metadata part of admin status.
func (rl *ringLog) status() *admin.TopologyStatus {
	st := rl.state.Load()
	ls := rl.log.Status()
	out := &admin.TopologyStatus{Epoch: st.Epoch, Leader: string(ls.Leader), StreamLimit: rl.limit.Load(), Voter: ls.Voter}
	switch {
	case ls.Voter && !ls.Quorum:
		// A voter knows: no leader with a quorum behind it has been heard from lately.
		out.Leader, out.NoQuorum = "", true
	case !ls.Voter && !ls.LastPull.IsZero():
		out.LastPullSeconds = time.Since(ls.LastPull).Seconds()
	}
	for _, v := range st.Voters {
		out.Voters = append(out.Voters, string(v))
	}
	c := st.Change
	if c == nil {
		return out
	}
	cs := &admin.ChangeStatus{ID: c.ID, What: describeChange(c), Reverting: c.Reverting, Ranges: len(c.Ranges), Transfers: len(c.Transfers)}
	for _, r := range c.Ranges {
		if r.Moved {
			cs.Moved++
		}
	}
	for i, t := range c.Transfers {
		cs.Bytes += t.Bytes
		if c.Done[i] {
			cs.Done++
			cs.DoneBytes += t.Bytes
		}
	}
	out.Change = cs
	rl.mu.Lock()
	failed := maps.Clone(rl.failed)
	rl.mu.Unlock()
	for _, t := range rl.streamer.Transfers() {
		i, merge := transferOf(t.ID)
		if t.ID.Change != c.ID || i >= len(c.Transfers) {
			continue
		}
		out.Streams = append(out.Streams, admin.StreamStatus{Index: i, Source: string(t.Source), Bytes: t.Bytes,
			Estimate: t.EstimateBytes, RateBPS: t.BytesPerSecond, ETASeconds: t.ETA.Seconds(), Done: c.Done[i],
			Failures: int(t.Failures), ResumedFrom: t.ResumedBytes, Merge: merge, Error: failed[t.ID]})
		delete(failed, t.ID)
	}
	for id, msg := range failed { // stopped, not running now
		if i, merge := transferOf(id); id.Change == c.ID && i < len(c.Transfers) {
			tr := c.Transfers[i]
			out.Streams = append(out.Streams, admin.StreamStatus{Index: i, Source: string(tr.Source), Estimate: tr.Bytes, Merge: merge, Error: msg})
		}
	}
	slices.SortFunc(out.Streams, func(a, b admin.StreamStatus) int { return a.Index - b.Index })
	return out
}
