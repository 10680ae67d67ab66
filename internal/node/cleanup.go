package node

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// After a membership change, the old owners of the ranges that moved still hold their
// rows. Cleanup deletes them (engine.RangeDeleter): every token range the node is in no
// replica set of, at an epoch with no change in flight. It runs when an operator asks
// (kura admin cleanup) and by itself --cleanup-delay after a change finished (10 minutes
// by default): the delay leaves the old copies in place while a mistake can still be
// undone by hand (the rows of a wrongly removed node's ranges are still on the nodes that
// gave them up), and costs only disk space meanwhile.

// errCleanupChange refuses a cleanup while a change is in flight: its pending sets are
// being written, and its cancel would stream ranges back.
var errCleanupChange = errors.New("a membership change is in flight; cleanup runs once it finished")

// cleanupCheckInterval is how often the node checks whether a cleanup is due.
var cleanupCheckInterval = time.Second

// cleanup deletes the rows of every range this node does not replicate at the current
// epoch, and returns how many ranges it deleted. It stops, with an error, if the epoch
// changes meanwhile: the ranges it has not deleted yet may be this node's again.
func (rl *ringLog) cleanup() (int, error) {
	rl.cleanMu.Lock()
	defer rl.cleanMu.Unlock()
	st := rl.state.Load()
	if st.Epoch == 0 {
		return 0, errors.New("no cluster metadata yet")
	}
	if st.Change != nil {
		return 0, errCleanupChange
	}
	del, ok := rl.c.handler.Engine.(engine.RangeDeleter)
	if !ok {
		return 0, fmt.Errorf("the %s engine cannot delete ranges", rl.c.handler.Engine.Name())
	}
	p, err := meta.NewPlacement(st)
	if err != nil {
		return 0, err
	}
	ranges := notReplicated(p, rl.c.self)
	n := 0
	for _, r := range ranges {
		if now := rl.state.Load(); now.Epoch != st.Epoch {
			return n, fmt.Errorf("the ring changed (epoch %d, then %d) after %d of %d ranges; run it again", st.Epoch, now.Epoch, n, len(ranges))
		}
		for _, kr := range ring.EngineKeyRanges(r[0], r[1]) {
			if err := del.DeleteRange(kr.Lo, kr.Hi); err != nil {
				return n, fmt.Errorf("deleting range (%d,%d]: %w", r[0], r[1], err)
			}
		}
		n++
	}
	rl.cleanedAt.Store(st.Epoch)
	if n > 0 {
		rl.c.log.Info("cleanup: deleted the rows of the ranges this node no longer replicates", "ranges", n, "epoch", st.Epoch)
	}
	return n, nil
}

// notReplicated returns the token ranges (start, end] in which self is in no replica
// group of p, adjacent ones joined.
func notReplicated(p *meta.Placement, self ring.NodeID) [][2]ring.Token {
	ends := p.RangeEnds()
	var out [][2]ring.Token
	for i, end := range ends {
		start := ends[(i+len(ends)-1)%len(ends)]
		mine := false
		for _, g := range p.WriteGroups(end) {
			mine = mine || slices.Contains(g, self)
		}
		if mine {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == start {
			out[n-1][1] = end
			continue
		}
		out = append(out, [2]ring.Token{start, end})
	}
	// The last range may continue into the first, across the wrap.
	if n := len(out); n > 1 && out[n-1][1] == out[0][0] {
		out[0][0] = out[n-1][0]
		out = out[:n-1]
	}
	return out
}

// cleanupLoop runs a cleanup --cleanup-delay after the node saw a change finish (or
// after it started, for a change that finished while it was down).
func (rl *ringLog) cleanupLoop() {
	defer rl.c.wg.Done()
	delay := rl.c.cfg.CleanupDelay
	if delay <= 0 {
		return
	}
	var since time.Time // when the node first saw the current epoch with no change in flight
	var epoch uint64
	rl.c.every(cleanupCheckInterval, func() {
		st := rl.state.Load()
		if st.Epoch == 0 || st.Change != nil || st.Epoch == rl.cleanedAt.Load() {
			since = time.Time{}
			return
		}
		if since.IsZero() || epoch != st.Epoch {
			since, epoch = time.Now(), st.Epoch
			return
		}
		if time.Since(since) >= delay {
			if _, err := rl.cleanup(); err != nil {
				rl.c.log.Warn("cleanup", "err", err)
				since = time.Time{}
			}
		}
	})
}
