package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// FLUSHDB and FLUSHALL (resp.Flusher): a single node deletes its engine's rows; a cluster
// node asks every member to delete its own (wire.MethodFlush), as Cassandra's TRUNCATE
// does, and refuses while any member is down: a member that missed the flush would bring
// the keys back through read repair and its hints. Deleting is engine.DeleteAll: a row
// tombstone at one timestamp T on every row, so that writes made later survive.
//
// Nodes' clocks differ, so T is not the coordinator's time: a prepare asks every member
// for a fresh timestamp of its clock and T is the largest (or the command's, if larger),
// above every timestamp any node issued before it answered; every member's clock then
// observes T as it flushes. So a write acknowledged before FLUSHALL began is deleted
// whichever node coordinated it, and one made after FLUSHALL replied survives; one made
// meanwhile may go either way.

// flushTimeout bounds the wait for the members' flushes: each tombstones every row its
// engine holds, at the engine's write rate, while serving as usual.
const flushTimeout = 30 * time.Minute

var (
	_ resp.Flusher = localStore{}
	_ resp.Flusher = (*clusterStore)(nil)
)

// FlushAll implements resp.Flusher for a node outside a cluster.
func (l localStore) FlushAll(ts int64) error {
	_, err := engine.DeleteAll(l.Engine, ts)
	return err
}

// flushTargets returns the members a FLUSHALL must reach, in ID order, and those of them
// that are down: every member but those removed from the cluster, which hold nothing.
func flushTargets(members []cluster.Member) (targets, down []ring.NodeID) {
	for _, m := range members {
		if m.Status == cluster.Removed {
			continue
		}
		targets = append(targets, m.ID)
		if !m.Up {
			down = append(down, m.ID)
		}
	}
	slices.Sort(targets)
	slices.Sort(down)
	return targets, down
}

// FlushAll implements resp.Flusher for a cluster: it refuses with coord.ErrUnavailable,
// asking nothing, while any member is down, then asks every member at once and waits for
// them all. An error names the members that did not flush; the others have.
func (s *clusterStore) FlushAll(ts int64) error {
	targets, down := flushTargets(s.m.Members())
	if len(down) > 0 {
		return fmt.Errorf("node: FLUSHALL needs every node up, and %s %s down: nothing was flushed: %w",
			joinIDs(down), plural(len(down), "is", "are"), coord.ErrUnavailable)
	}
	// The flush's timestamp is the largest clock of all: one far ahead would delete the
	// writes made after the FLUSHALL until the other clocks caught up with it.
	if err := s.writable(); err != nil {
		return fmt.Errorf("node: FLUSHALL: nothing was flushed: %w", err)
	}
	if far := s.clock.beyond(targets); len(far) > 0 {
		return fmt.Errorf("node: FLUSHALL needs every node's clock within max_clock_offset of this one's, and %s %s not: nothing was flushed: %w",
			joinIDs(far), plural(len(far), "is", "are"), errClockOutOfSync)
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	clocks, err := s.askMembers(ctx, targets, &wire.FlushRequest{Prepare: true})
	if err != nil {
		return fmt.Errorf("node: FLUSHALL could not prepare, nothing was flushed: %w", err)
	}
	for _, r := range clocks {
		ts = max(ts, r.Clock)
	}
	flushed, err := s.askMembers(ctx, targets, &wire.FlushRequest{Timestamp: ts})
	if err != nil {
		return fmt.Errorf("node: FLUSHALL: %w; the other nodes flushed: run it again", err)
	}
	var rows int64
	for _, r := range flushed {
		rows += r.Rows
	}
	s.log.Info("FLUSHALL", "nodes", len(targets), "rows", rows, "ts", ts)
	return nil
}

// askMembers sends req to every member of ids at once and returns their answers, or an
// error naming those that failed.
func (s *clusterStore) askMembers(ctx context.Context, ids []ring.NodeID, req *wire.FlushRequest) ([]wire.FlushResponse, error) {
	payload := wire.AppendFlushRequest(nil, req)
	out := make([]wire.FlushResponse, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out[i], errs[i] = s.askMember(ctx, id, payload) })
	}
	wg.Wait()
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", ids[i], err))
		}
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("no answer from %s: %w", strings.Join(failed, ", "), errors.Join(errs...))
	}
	return out, nil
}

func (s *clusterStore) askMember(ctx context.Context, id ring.NodeID, payload []byte) (wire.FlushResponse, error) {
	p, err := s.peer(id)
	if err != nil {
		return wire.FlushResponse{}, err
	}
	b, err := p.Call(ctx, wire.MethodFlush, payload)
	if err != nil {
		return wire.FlushResponse{}, err
	}
	return wire.DecodeFlushResponse(b)
}

// flushedHints drops the hints this node holds that were created before a FLUSHALL at ts
// (replica.Handler.Flushed): they carry writes the flush deleted, which replayed would
// come back on a replica that lacked them. The repair marks of writes lost before it go
// too: the flush deleted them everywhere.
func (c *clusterNode) flushedHints(ts int64) {
	before := time.UnixMicro(ts)
	for _, target := range c.hints.MarkedTargets() {
		c.clearMarks(target, before, "a FLUSHALL deleted")
	}
	for target := range c.hints.Stats() {
		n, err := c.hints.Discard(target, before)
		c.metrics.HintsDiscarded(n)
		if err != nil {
			c.log.Warn("discarding hints a FLUSHALL deleted", "replica", target, "err", err)
			continue
		}
		if n > 0 {
			c.log.Info("discarded hints a FLUSHALL deleted", "replica", target, "hints", n)
		}
	}
}

func joinIDs(ids []ring.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
