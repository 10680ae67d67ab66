package node

import (
	"context"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/stream"
)

// Where a transfer's rows come from. A copy from the replica that leaves the range's set
// (move.Transfer.Leaving, which topo.Plan chooses whenever that replica is live) keeps
// every acknowledged write on as many replicas of the new set as the old set had it on:
// a write the leaving replica missed is on enough of the replicas that stay. A copy from
// any other single replica does not: a QUORUM write acknowledged by the leaving replica
// and one other could reach the new replica from neither. So when the planned source is
// not the leaving replica (it was down when the change was planned), or is the leaving
// replica but is down now, the destination merges the range from every replica of its
// old set that stays in the new one (as a refill merges), and the transfer is done when
// all of them have sent it, or when the planned leaving source has.

// mergeBase numbers the merge jobs of transfer i, one per old replica k:
// mergeBase + i*meta's maximum RF + k; above every transfer index (meta bounds a change's
// transfers below it), so that their progress never collides with a transfer's.
const (
	mergeBase  = 1 << 21
	mergeSlots = 16
)

func mergeID(change uint64, i, k int) stream.TransferID {
	return stream.TransferID{Change: change, Index: mergeBase + i*mergeSlots + k}
}

// transferOf returns the index of the transfer a job copies, and whether the job is one
// of its merge copies.
func transferOf(id stream.TransferID) (int, bool) {
	if id.Index >= mergeBase {
		return (id.Index - mergeBase) / mergeSlots, true
	}
	return id.Index, false
}

// mergeSources returns the replicas transfer tr of c is merged from: those of its range's
// old set that stay in its new set. A write acknowledged at a level the old set met is on
// enough of them for the same level in the new set once they are merged: the replicas
// that leave are the only ones a merge leaves out, and they are what the new ones
// replace. When none stays (a cluster growing from fewer nodes than the replication
// factor, whose old sets are smaller than the new, or a removal whose handed-off tokens
// give a range new replicas only), it is every old replica. A node the change removes or
// replaces is never one: it is dead and gone for good, and a merge waiting for it would
// never finish (what it alone held is what the surviving replicas cannot give).
func mergeSources(c *meta.Change, tr move.Transfer) []ring.NodeID {
	r := c.RangeOf(tr.Range)
	if r < 0 {
		return nil
	}
	gone := func(id ring.NodeID) bool {
		return id == tr.Destination || slices.Contains(c.Removes, id) ||
			slices.ContainsFunc(c.Replaces, func(rp meta.Replacement) bool { return rp.Old == id })
	}
	var out []ring.NodeID
	for _, id := range c.Ranges[r].Old {
		if !gone(id) && slices.Contains(c.Ranges[r].New, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		for _, id := range c.Ranges[r].Old {
			if !gone(id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// startTransfers starts every transfer of st's change to this node not done yet and not
// running: from its planned source when that is the leaving replica and live, else
// merged from every other old replica (see above).
func (rl *ringLog) startTransfers(ctx context.Context, st *meta.State) {
	c := st.Change
	down := rl.down(st)
	rl.streamer.SetSourceWeights(sourceWeights(c, down))
	for _, j := range stream.Jobs(c.ID, c.Transfers, rl.c.self) {
		i := j.ID.Index
		if c.Done[i] {
			continue
		}
		rl.mu.Lock()
		merging := rl.merging[j.ID]
		rl.mu.Unlock()
		if !merging && j.Transfer.Leaving && !down[j.Transfer.Source] {
			rl.run(ctx, j)
			continue
		}
		if srcs := mergeSources(c, j.Transfer); j.Transfer.Leaving && len(srcs) == 1 && srcs[0] == j.Transfer.Source {
			rl.run(ctx, j) // no other copy: wait for the source
			continue
		}
		// Merge from here on: a job still asking the planned source would hold one of the
		// streamer's slots for as long as the source is down.
		rl.mu.Lock()
		rl.merging[j.ID] = true
		if cancel, ok := rl.running[j.ID]; ok {
			cancel()
		}
		rl.mu.Unlock()
		for k, id := range c.Ranges[max(c.RangeOf(j.Transfer.Range), 0)].Old {
			if !slices.Contains(mergeSources(c, j.Transfer), id) {
				continue
			}
			tr := j.Transfer
			tr.Source = id
			rl.run(ctx, stream.Job{ID: mergeID(c.ID, i, k), Transfer: tr})
		}
	}
}

// run starts job j unless it is running.
func (rl *ringLog) run(ctx context.Context, j stream.Job) {
	rl.mu.Lock()
	if _, running := rl.running[j.ID]; running || rl.finished[j.ID] {
		rl.mu.Unlock()
		return
	}
	jctx, cancel := context.WithCancel(ctx)
	rl.running[j.ID] = cancel
	rl.mu.Unlock()
	go func() {
		defer cancel()
		err := rl.streamer.Run(jctx, j)
		ctx := jctx // a cancelled job is not a failed one
		rl.mu.Lock()
		delete(rl.running, j.ID)
		if err != nil && ctx.Err() == nil {
			rl.failed[j.ID] = err.Error()
		} else {
			delete(rl.failed, j.ID)
		}
		if err == nil {
			rl.finished[j.ID] = true
		}
		rl.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			rl.c.log.Warn("stream failed; it is retried", "transfer", j.ID, "source", j.Transfer.Source, "err", err)
		}
		select {
		case rl.kick <- struct{}{}:
		default:
		}
	}()
}

// doneTransfers returns the transfers of c to this node that are complete here and not
// yet recorded: their planned source sent all of the range, or every merge source did.
func (rl *ringLog) doneTransfers(c *meta.Change) ([]int, error) {
	completed, err := rl.streamer.Completed(c.ID)
	if err != nil {
		return nil, err
	}
	have := map[stream.TransferID]bool{}
	for _, id := range completed {
		have[id] = true
	}
	var out []int
	for i, tr := range c.Transfers {
		if tr.Destination != rl.c.self || c.Done[i] {
			continue
		}
		if have[stream.TransferID{Change: c.ID, Index: i}] {
			out = append(out, i)
			continue
		}
		r := c.RangeOf(tr.Range)
		srcs := mergeSources(c, tr)
		if r < 0 || len(srcs) == 0 {
			continue
		}
		all := true
		for k, id := range c.Ranges[r].Old {
			if slices.Contains(srcs, id) && !have[mergeID(c.ID, i, k)] {
				all = false
			}
		}
		if all {
			out = append(out, i)
		}
	}
	return out, nil
}

// reportLoop records the transfers this node completed in the log.
func (rl *ringLog) reportLoop() {
	defer rl.c.wg.Done()
	rl.c.every(reportInterval, func() {
		c := rl.state.Load().Change
		if c == nil {
			return
		}
		done, err := rl.doneTransfers(c)
		if err != nil || len(done) == 0 {
			return
		}
		rl.propose(meta.TransfersDone{Change: c.ID, Transfers: done}, fmt.Sprintf("%d transfers done", len(done)))
	})
}

// sourceWeights is what each source has left to send in change c, to every destination:
// a transfer not done counts for its planned source when that is the leaving replica and
// live, else for each replica it is merged from (startTransfers' rule). Every node
// computes the same from the log, so every destination favours the same sender.
func sourceWeights(c *meta.Change, down map[ring.NodeID]bool) map[ring.NodeID]int64 {
	w := map[ring.NodeID]int64{}
	for i, tr := range c.Transfers {
		if c.Done[i] {
			continue
		}
		if tr.Leaving && !down[tr.Source] {
			w[tr.Source] += tr.Bytes
			continue
		}
		for _, id := range mergeSources(c, tr) {
			w[id] += tr.Bytes
		}
	}
	return w
}
