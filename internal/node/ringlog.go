package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/elastic"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/metalog"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/stream"
	"github.com/kuradb/kura/internal/topo"
	"github.com/kuradb/kura/internal/wire"
)

// A node started with --ring-source=log follows the cluster metadata log
// (docs/design/membership.md): the ring, its version (the epoch) and the change in flight
// come from the log (package metalog, which runs Raft among a few voters and lets the
// others pull), not from gossip, which keeps liveness, load and addresses. This file is
// that mode's driver:
//
//   - onState turns every newer state into the machine's placement (writes of a moving
//     range to its old and new replicas, reads from the old until it has moved) and into
//     this node's gossip entry;
//   - joinLog bootstraps a new cluster, or registers a new node through a seed;
//   - leaderLoop, on the log's leader only, starts changes (joiners registered within the
//     batching window, replacements) and moves them forward as transfers complete, with
//     the decisions of package topo;
//   - streamLoop pulls the transfers that come to this node (package stream), and
//     reportLoop records the completed ones in the log (meta.TransfersDone);
//   - topology serves the operator's changes (kura admin decommission, removenode, plan,
//     commit, cancel, stream-limit).

// joinQuiet is how long the leader waits after the latest joiner registered before it
// plans the joiners it has, within --join-batch-window from the first: nodes started
// together register within a second of each other.
const joinQuiet = 2 * time.Second

// Intervals of the mode's loops; variables for tests.
var (
	leaderInterval = 200 * time.Millisecond
	// rangesMovedEvery is how often the leader moves ranges whose transfers are done while
	// others are not: every RangesMoved is a new epoch, which every node applies and every
	// request planned at the one before retries against, so ranges finishing a few hundred
	// milliseconds apart are moved together. The last ranges of a change move at once. In
	// the re-replication experiment (docs/bench/recover.md) ten epochs in six seconds took
	// the foreground's p99 from tens of milliseconds to seconds.
	rangesMovedEvery = 2 * time.Second
	reportInterval   = 500 * time.Millisecond
	streamInterval   = time.Second
	// elasticTick is how often elasticLoop observes the scheduler's latency: long enough
	// for the p99 of a tick to count some hundreds of goroutine wake-ups at a modest
	// load, short enough to slow the streams within a fraction of a second.
	elasticTick = 100 * time.Millisecond
)

// ringLog is a node's part in the metadata log.
type ringLog struct {
	c        *clusterNode
	log      *metalog.Log
	streamer *stream.Streamer
	recv     *stream.Limiter // the node's receive limit, shared by its transfers
	send     *stream.Limiter // the node's send limit, shared by the stream pages it serves
	// limit is the stream limit set (--stream-limit, kura admin stream-limit); recv and
	// send run at it times the elastic factor (elasticLoop), whose bits factor holds.
	limit    atomic.Int64
	factor   atomic.Uint64
	limitsMu sync.Mutex // orders setStreamLimit's and elasticLoop's updates of recv and send
	// schedP99 is the last scheduler latency p99 elasticLoop observed, in nanoseconds.
	schedP99 atomic.Int64
	state    atomic.Pointer[meta.State]
	kick     chan struct{} // wakes streamLoop

	mu      sync.Mutex
	running map[stream.TransferID]context.CancelFunc // streamLoop's jobs in flight
	merging map[stream.TransferID]bool               // transfers merged from the replicas that stay
	failed  map[stream.TransferID]string
	// finished are the jobs whose Run returned complete: startTransfers does not run them
	// again while the change waits to record them (a Run of a complete job reads its
	// progress file and kicks streamLoop, which would run it again at once).
	finished map[stream.TransferID]bool
	first    map[ring.NodeID]time.Time // when the leader first saw each joiner
	// downSince is when the leader's failure detector first held each member down, for
	// --auto-remove-after; a member up again is forgotten, and a new leader starts afresh.
	downSince map[ring.NodeID]time.Time
	lastMoved time.Time  // when the leader last proposed a RangesMoved (rangesMovedEvery)
	lastErr   string     // the leader loop's last refusal, logged once
	applyMu   sync.Mutex // orders onState's and joinLog's hand-overs to the machine

	cleanMu   sync.Mutex    // one cleanup at a time
	cleanedAt atomic.Uint64 // the epoch of the last cleanup
}

// openRingLog opens the node's metadata log in its data directory, taking the Raft
// connections of mux, and its streamer. The state it saved is known at once.
func (c *clusterNode) openRingLog(raftLn net.Listener) (*ringLog, error) {
	rl := &ringLog{c: c, kick: make(chan struct{}, 1), running: map[stream.TransferID]context.CancelFunc{}, merging: map[stream.TransferID]bool{},
		failed: map[stream.TransferID]string{}, finished: map[stream.TransferID]bool{}, first: map[ring.NodeID]time.Time{}, downSince: map[ring.NodeID]time.Time{},
		recv: stream.NewLimiter(c.cfg.StreamLimit), send: stream.NewLimiter(c.cfg.StreamLimit)}
	rl.limit.Store(c.cfg.StreamLimit)
	rl.factor.Store(math.Float64bits(1))
	c.handler.StreamPacer = rl.send
	if c.cfg.BackgroundPriority == "low" {
		c.handler.Background = lowprio.New(streamLaneWidth) // on a P of its own: LowPriorityThreads
	}
	var err error
	mc := metalog.Config{ID: c.self, Addr: c.ln.Addr().String(),
		Listener: raftLn, Call: c.callAddr, OnState: rl.onState, Logger: c.log.With("part", "metalog")}
	if c.tls != nil {
		// Raft dials by address alone and redials whoever its configuration names, so
		// its connections check that the peer holds a node certificate of the CA, not
		// which host it is on: only nodes can be voters, and every message Raft
		// accepts is from a voter it knows by ID. The host is checked on the transport,
		// which knows it from the ring.
		mc.Dial = listener.RaftDialer(c.tls.NodeClientConfig(""))
	}
	rl.log, err = metalog.Open(filepath.Join(c.dir, "meta"), mc)
	if err != nil {
		return nil, fmt.Errorf("node: metadata log: %w", err)
	}
	rl.streamer, err = stream.New(stream.Config{Dir: filepath.Join(c.dir, "streams"), Self: c.self,
		Source: func(id ring.NodeID) (stream.Caller, error) { return c.peer(id) }, Sink: c.handler,
		Receive: rl.recv, Logger: c.log.With("part", "stream")})
	if err != nil {
		rl.log.Close()
		return nil, fmt.Errorf("node: streams: %w", err)
	}
	st := rl.log.State()
	rl.state.CompareAndSwap(nil, st) // unless the log delivered a newer one already
	st = rl.state.Load()
	c.installUsers(st) // the cluster's record wins over --acl-file (users.go)
	if c.handler.Engine.Role() == ring.InMemory && st.Change != nil {
		// An in-memory replica lost what it streamed: start its transfers over.
		_ = rl.streamer.Discard(st.Change.ID)
	}
	return rl, nil
}

// onState takes a newer state from the log (metalog.Config.OnState: in the log's order,
// never concurrently with itself): the placement for the machine, the ring and this
// node's gossip entry. It runs on the log's goroutine: it does not block.
func (rl *ringLog) onState(st *meta.State) {
	rl.applyMu.Lock()
	defer rl.applyMu.Unlock()
	if cur := rl.state.Load(); cur != nil && cur.Epoch > st.Epoch {
		return
	}
	rl.state.Store(st)
	rl.apply(st)
	rl.c.installUsers(st)
	select {
	case rl.kick <- struct{}{}:
	default:
	}
}

// apply hands st to the machine and gossip.
func (rl *ringLog) apply(st *meta.State) {
	c := rl.c
	if st.Epoch == 0 {
		return
	}
	p, err := meta.NewPlacement(st)
	if err == nil {
		err = c.machine.SetPlacement(st.Epoch, p)
	}
	if err != nil {
		c.log.Error("metadata: cannot place keys at this epoch; keeping the last placement", "epoch", st.Epoch, "err", err)
		return
	}
	if m, ok := st.Member(c.self); ok && m.State == meta.Left {
		c.log.Info("decommissioned: this node is out of the ring and holds no range; it may be shut down", "epoch", st.Epoch)
	}
	if m, ok := st.Member(c.self); ok && m.State == meta.Removed {
		// Back after its removal (kura admin removenode, or --auto-remove-after): its
		// replicas were re-made on other nodes, and what it holds is stale.
		c.removedOnce.Do(func() {
			c.removed <- fmt.Errorf("node: this node (%s) was removed from the cluster at or before epoch %d while it was down; "+
				"its ranges were re-replicated elsewhere and its data is stale: wipe its data directory (%s) to join anew",
				c.self, st.Epoch, c.dir)
		})
	}
	if c.gossip != nil {
		m, ok := st.Member(c.self)
		c.gossip.Update(func(g *cluster.Member) {
			if ok {
				g.Status, g.Tokens = gossipStatus(m.State), slices.Clone(m.Tokens)
			}
			g.Epoch = st.Epoch
		})
	}
	c.refresh()
}

// gossipStatus is the gossip status that mirrors a member's state in the log, for
// admin status and for nodes that read the ring from gossip.
func gossipStatus(s meta.MemberState) cluster.Status {
	switch s {
	case meta.Normal:
		return cluster.Normal
	case meta.Leaving:
		return cluster.Leaving
	case meta.Left, meta.Removed:
		return cluster.Removed
	}
	return cluster.Joining
}

// ring is the current ring of the state, nil before the bootstrap.
func (rl *ringLog) ring() *ring.Ring {
	st := rl.state.Load()
	if st == nil || st.Epoch == 0 {
		return nil
	}
	r, err := st.CurrentRing()
	if err != nil {
		return nil
	}
	return r
}

// selfMember returns this node as the log records it.
func (rl *ringLog) selfMember() (meta.Member, bool) {
	return rl.state.Load().Member(rl.c.self)
}

// joinLog brings this node into the log: nothing to do for a member (a restart), a
// bootstrap of a new cluster with no seeds, else a registration through the seeds,
// after which the leader plans its join.
func (rl *ringLog) joinLog(self cluster.Member) error {
	c := rl.c
	seeds := c.cfg.SeedList()
	if m, ok := rl.selfMember(); ok && (m.State == meta.Removed || m.State == meta.Left) {
		return fmt.Errorf("node: this node (%s) was %s from the cluster at or before epoch %d: it holds stale data and "+
			"must not serve it again; wipe its data directory (%s) to join anew", c.self, m.State, rl.state.Load().Epoch, c.dir)
	}
	if m, ok := rl.selfMember(); ok {
		if m.Addr != self.InternodeAddr {
			// Restarted on another internode address: the others reach it at the new one
			// once the log records it (a registration again changes the address only).
			reg := meta.Register{ID: self.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: self.InternodeAddr}
			c.wg.Go(func() {
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err := rl.log.Propose(ctx, reg)
					cancel()
					if err == nil || errors.Is(err, meta.ErrMember) || errors.Is(err, meta.ErrInvalid) {
						if err != nil {
							c.log.Warn("recording this node's new internode address", "err", err)
						}
						return
					}
					select {
					case <-c.stop:
						return
					case <-time.After(time.Second):
					}
				}
			})
		}
		if len(seeds) > 0 {
			if _, err := c.gossip.Join(seeds); err != nil {
				c.log.Warn("no seed answered; serving with the saved ring", "seeds", seeds, "err", err)
			}
		}
		rl.applyMu.Lock()
		rl.apply(rl.state.Load()) // now that gossip runs; the log may have a newer one by now
		rl.applyMu.Unlock()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if len(seeds) == 0 {
		node := ring.Node{ID: self.ID, Host: self.Host, Rack: self.Rack, Role: self.Role}
		tokens, err := move.Tokens(c.cfg.TokenAllocation, nil, node, c.cfg.NumTokens, c.strategy, c.cfg.ReplicationFactor, newRand())
		if err != nil {
			return err
		}
		st, err := rl.log.Bootstrap(ctx, meta.Bootstrap{Strategy: c.cfg.Placement, RF: c.cfg.ReplicationFactor,
			Members: []meta.Member{{ID: self.ID, Host: self.Host, Rack: self.Rack, Role: self.Role, Addr: self.InternodeAddr, Tokens: tokens}}})
		if err != nil {
			return fmt.Errorf("node: bootstrap the metadata log: %w", err)
		}
		c.log.Info("bootstrapped a new cluster", "tokens", len(tokens), "epoch", st.Epoch)
		return nil
	}
	for {
		_, err := c.gossip.Join(seeds)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node: join %v: %w", seeds, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Learn the state from any member gossip brought, then register.
	for rl.state.Load().Epoch == 0 {
		for _, m := range c.gossip.Members() {
			if m.ID != c.self && m.InternodeAddr != "" && m.Up {
				if err := rl.log.Pull(ctx, m.InternodeAddr); err != nil {
					c.log.Debug("pulling the metadata", "from", m.ID, "err", err)
				}
			}
		}
		if rl.state.Load().Epoch > 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node: no member of %v gave the cluster metadata: %w", seeds, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	reg := meta.Register{ID: self.ID, Host: self.Host, Rack: self.Rack, Role: self.Role, Addr: self.InternodeAddr}
	for {
		_, err := rl.log.Propose(ctx, reg) // the log hands the state to onState
		if err == nil {
			break
		}
		if errors.Is(err, meta.ErrMember) || errors.Is(err, meta.ErrInvalid) {
			return fmt.Errorf("node: register with the cluster: %w", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node: register with the cluster: %w", err)
		}
		c.log.Info("registering with the cluster: retrying", "err", err)
		time.Sleep(time.Second)
	}
	how := "the leader plans its join with the nodes registered within the batching window"
	switch {
	case c.cfg.Replace != "":
		how = "it replaces " + c.cfg.Replace + " once that node is down"
	case c.cfg.Join == "staged":
		how = "it waits for kura admin commit"
	}
	c.log.Info("registered with the cluster: "+how, "epoch", rl.state.Load().Epoch)
	return nil
}

// start starts the mode's loops on c's wait group.
func (rl *ringLog) start() {
	if rl.c.cfg.StreamCPUTarget > 0 {
		rl.c.wg.Add(1)
		go rl.elasticLoop()
	}
	rl.c.wg.Add(4)
	go rl.leaderLoop()
	go rl.streamLoop()
	go rl.reportLoop()
	go rl.cleanupLoop()
}

// leaderLoop, on the log's leader, starts and advances changes.
func (rl *ringLog) leaderLoop() {
	defer rl.c.wg.Done()
	rl.c.every(leaderInterval, func() {
		if st := rl.log.Status(); st.RaftState != "Leader" {
			clear(rl.downSince) // a leader again later counts afresh
			return
		}
		rl.lead(time.Now())
	})
}

// lead is one round of the leader: advance the change in flight, or start one for the
// joiners and replacements waiting.
func (rl *ringLog) lead(now time.Time) {
	st := rl.log.State()
	if st.Epoch == 0 {
		return
	}
	if st.Change != nil {
		e := topo.Advance(st)
		if rm, ok := e.(meta.RangesMoved); ok && len(rm.Ranges) < unmovedRanges(st.Change) && now.Sub(rl.lastMoved) < rangesMovedEvery {
			return // a partial move waits for the next batch
		}
		if e != nil {
			if _, ok := e.(meta.RangesMoved); ok {
				rl.lastMoved = now
			}
			rl.propose(e, "advance change")
		}
		return
	}
	down := rl.down(st)
	staged, replaces := map[ring.NodeID]bool{}, map[ring.NodeID]ring.NodeID{}
	for _, g := range rl.c.gossip.Members() {
		if g.Staged {
			staged[g.ID] = true
		}
		if g.Replaces != "" {
			staged[g.ID] = true // not a plain join
			replaces[g.ID] = g.Replaces
		}
	}
	for _, m := range st.Members {
		if m.State == meta.Joining {
			if _, ok := rl.first[m.ID]; !ok {
				rl.first[m.ID] = now
			}
		}
	}
	window := rl.c.cfg.JoinBatchWindow
	ops := topo.Ops{Joins: topo.Joiners(st, rl.first, down, staged, now, window, min(window, joinQuiet))}
	for id, old := range replaces {
		if m, ok := st.Member(id); ok && m.State == meta.Joining && !down[id] && down[old] {
			ops.Replaces = append(ops.Replaces, meta.Replacement{Old: old, New: id})
		}
	}
	for id := range rl.downSince {
		if !down[id] {
			delete(rl.downSince, id)
		}
	}
	for id := range down {
		if _, ok := rl.downSince[id]; !ok {
			rl.downSince[id] = now
		}
	}
	if ops.Empty() {
		// Nothing joining: remove the members down for longer than --auto-remove-after.
		ops.Removes = topo.DeadToRemove(st, rl.downSince, down, now, rl.c.cfg.AutoRemoveAfter)
	}
	if ops.Empty() {
		return
	}
	sc, _, err := topo.Plan(st, ops, rl.planConfig(), down, newRand())
	if err != nil {
		if msg := err.Error(); msg != rl.lastErr {
			rl.lastErr = msg
			rl.c.log.Warn("cannot start a change yet", "change", ops.String(), "err", err)
		}
		return
	}
	rl.propose(sc, "start change: "+ops.String())
}

// planConfig is how this node plans changes: the data's size for balancing the sources
// and estimating bytes is the members' announced loads over the replication factor.
func (rl *ringLog) planConfig() topo.Config {
	level, _ := coord.ParseLevel(rl.c.cfg.Consistency) // validated by config
	members := rl.c.gossip.Members()
	var load int64
	for _, g := range members {
		load += g.Load
	}
	size := max(load/int64(max(rl.c.cfg.ReplicationFactor, 1)), 1)
	cfg := topo.Config{TokenAllocation: rl.c.cfg.TokenAllocation, NumTokens: rl.c.cfg.NumTokens, Level: level, Sizes: move.Uniform(size)}
	cfg.HandOff, cfg.Free = handOffConfig(rl.state.Load(), members)
	return cfg
}

// handOffConfig says whether a removal may hand the removed nodes' tokens off (every
// live member of the ring reads the entries that carry handoffs: a dead one reads nothing
// until it is removed), and the free bytes the members announced.
func handOffConfig(st *meta.State, members []cluster.Member) (bool, map[ring.NodeID]int64) {
	byID := map[ring.NodeID]cluster.Member{}
	free := map[ring.NodeID]int64{}
	for _, g := range members {
		byID[g.ID] = g
		if g.Free > 0 {
			free[g.ID] = g.Free
		}
	}
	ok := true
	for _, m := range st.Members {
		g, known := byID[m.ID]
		if m.State == meta.Normal && known && g.Up && g.MetaVersion < meta.EntryVersionHandoffs {
			ok = false
		}
	}
	return ok, free
}

// propose proposes e and logs the outcome.
func (rl *ringLog) propose(e meta.Entry, what string) (*meta.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := rl.log.Propose(ctx, e)
	if err != nil {
		rl.c.log.Warn("metadata: "+what+" refused", "err", err)
		return nil, err
	}
	rl.c.log.Info("metadata: "+what, "epoch", st.Epoch)
	return st, nil
}

// down returns the members of st that gossip holds down (or has never heard of).
func (rl *ringLog) down(st *meta.State) map[ring.NodeID]bool {
	up := map[ring.NodeID]bool{}
	for _, g := range rl.c.gossip.Members() {
		if g.Up {
			up[g.ID] = true
		}
	}
	out := map[ring.NodeID]bool{}
	for _, m := range st.Members {
		if !up[m.ID] && (m.State == meta.Normal || m.State == meta.Leaving || m.State == meta.Joining) {
			out[m.ID] = true
		}
	}
	return out
}

// streamLoop starts the transfers to this node of the change in flight.
func (rl *ringLog) streamLoop() {
	defer rl.c.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-rl.c.stop
		cancel()
	}()
	t := time.NewTicker(streamInterval)
	defer t.Stop()
	var last uint64 // the change whose progress this node may hold
	for {
		st := rl.state.Load()
		if c := st.Change; c != nil {
			if last != 0 && last != c.ID {
				rl.discard(last)
			}
			last = c.ID
			rl.startTransfers(ctx, st)
		} else if last != 0 && rl.discard(last) {
			last = 0
			rl.streamer.SetSourceWeights(nil)
		}
		select {
		case <-rl.c.stop:
			return
		case <-rl.kick:
		case <-t.C:
		}
	}
}

// setStreamLimit sets the node's stream limit, sent and received each (0: none), which
// the streams then run at times the elastic factor.
func (rl *ringLog) setStreamLimit(limit int64) {
	rl.limitsMu.Lock()
	defer rl.limitsMu.Unlock()
	rl.limit.Store(limit)
	rl.setLimiters()
}

// applyFactor sets the elastic factor and the limiters to the limit times it.
func (rl *ringLog) applyFactor(f float64) {
	rl.limitsMu.Lock()
	defer rl.limitsMu.Unlock()
	rl.factor.Store(math.Float64bits(f))
	rl.setLimiters()
}

// setLimiters sets recv and send to the limit times the factor; under limitsMu.
func (rl *ringLog) setLimiters() {
	l := elastic.Apply(rl.limit.Load(), math.Float64frombits(rl.factor.Load()))
	rl.recv.SetLimit(l)
	rl.send.SetLimit(l)
}

// elasticLoop slows the streams when the Go scheduler's latency says the CPU is
// saturated, and lets them back up to the limit when it has room (package elastic),
// every elasticTick while a change is in flight; between changes the factor is 1.
func (rl *ringLog) elasticLoop() {
	defer rl.c.wg.Done()
	ctl := elastic.New(elastic.Config{Target: rl.c.cfg.StreamCPUTarget})
	sampler := elastic.NewSampler(0.99)
	rl.c.every(elasticTick, func() {
		p99 := sampler.Sample()
		rl.schedP99.Store(int64(p99))
		f := 1.0
		if rl.state.Load().Change != nil {
			f = ctl.Observe(p99)
		} else {
			ctl.Reset()
		}
		if f != math.Float64frombits(rl.factor.Load()) {
			rl.applyFactor(f)
		}
	})
}

// discard drops the progress of a change that ended, once no transfer of it runs.
func (rl *ringLog) discard(change uint64) bool {
	rl.mu.Lock()
	maps.DeleteFunc(rl.failed, func(id stream.TransferID, _ string) bool { return id.Change == change })
	maps.DeleteFunc(rl.merging, func(id stream.TransferID, _ bool) bool { return id.Change == change })
	maps.DeleteFunc(rl.finished, func(id stream.TransferID, _ bool) bool { return id.Change == change })
	rl.mu.Unlock()
	err := rl.streamer.Discard(change)
	if err != nil && !errors.Is(err, stream.ErrRunning) {
		rl.c.log.Warn("discarding the progress of a finished change", "change", change, "err", err)
	}
	return err == nil
}

// stats is what the node's membership metrics report (admin.MembershipCollector).
func (rl *ringLog) stats() admin.MembershipStats {
	st := rl.state.Load()
	out := admin.MembershipStats{Epoch: rl.c.machine.Epoch(), SentBytes: rl.c.handler.StreamBytesSent(), Received: map[string]admin.PeerStream{},
		StreamLimit: rl.limit.Load(), StreamEffectiveLimit: rl.recv.Limit(), SchedLatencyP99: time.Duration(rl.schedP99.Load())}
	for id, p := range rl.streamer.Peers() {
		out.Received[string(id)] = admin.PeerStream{Bytes: p.Bytes, Ranges: p.Ranges, Failures: p.Failures}
	}
	if c := st.Change; c != nil {
		out.Transfers = len(c.Transfers)
		for _, d := range c.Done {
			if d {
				out.TransfersDone++
			}
		}
	}
	return out
}

// describeChange says what a change does, for admin status and plans.
func describeChange(c *meta.Change) string {
	ops := topo.Ops{Joins: c.Joins, Leaves: c.Leaves, Removes: c.Removes, Replaces: c.Replaces}
	if ops.Empty() {
		return "moving ranges back" // a cancelled change's reverting half
	}
	return ops.String()
}

// close stops the log.
func (rl *ringLog) close() error {
	return rl.log.Close()
}

// newRand returns a generator for one plan's token choice.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }

// metaHandler answers the metadata log's requests (wire.MethodMeta) with the node's log,
// and hands every other request on.
type metaHandler struct {
	next interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
	log *atomic.Pointer[metalog.Log]
}

// errNoMetaLog answers a metadata request on a node that does not follow the log.
var errNoMetaLog = errors.New("node: this node does not follow the metadata log (--ring-source=gossip)")

func (h metaHandler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if method != wire.MethodMeta {
		return h.next.Handle(ctx, method, payload)
	}
	l := h.log.Load()
	if l == nil {
		return nil, errNoMetaLog
	}
	return l.Handle(ctx, payload)
}

// callAddr sends an internode request to the node at an internode address (the
// metadata log knows its peers by address). With --tls-internode the peer's certificate
// must name the host of the member at that address, when this node knows one.
func (c *clusterNode) callAddr(ctx context.Context, addr string, method uint16, payload []byte) ([]byte, error) {
	var host string
	if c.machine != nil {
		for _, m := range c.machine.Members() {
			if m.InternodeAddr == addr {
				host = m.Host
				break
			}
		}
	}
	cl, err := c.peers.Get("addr "+addr, host, addr)
	if err != nil {
		return nil, err
	}
	return cl.Call(ctx, method, payload)
}

// epoch is the ring version this node routes by, which internode frames carry: 0 before
// it has a placement (and always with --ring-source=gossip).
func (c *clusterNode) epoch() uint64 {
	if c.machine == nil {
		return 0
	}
	return c.machine.Epoch()
}

// observeEpoch takes a newer epoch a peer's frame carried: the log pulls it soon. It
// runs on the transport's reader goroutines: it does not block.
func (c *clusterNode) observeEpoch(uint64) {
	if l := c.metaP.Load(); l != nil {
		l.Poke()
	}
}

// refuseStale says which requests a replica refuses when they were planned at an older
// ring than its own: those that read or write rows for a client (the coordinator
// catches up and runs them again). Streams, hints' replays and the metadata log's own
// requests are served whatever the epoch: they do not depend on who owns what.
func refuseStale(method uint16) bool {
	switch method {
	case wire.MethodRead, wire.MethodScanRead, wire.MethodLeader:
		return true
	case wire.MethodWrite:
		return true
	}
	return false
}

// catchUpWait bounds how long a request refused for a stale epoch waits for this node to
// reach it before failing as it was.
const catchUpWait = 2 * time.Second

// catchUp waits until this node's placement reaches epoch (pulling it from the log),
// for up to catchUpWait, and reports whether it did.
func (rl *ringLog) catchUp(epoch uint64) bool {
	deadline := time.Now().Add(catchUpWait)
	for rl.c.machine.Epoch() < epoch {
		if time.Now().After(deadline) {
			return false
		}
		rl.log.Poke()
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// unmovedRanges counts c's ranges not moved yet.
func unmovedRanges(c *meta.Change) int {
	n := 0
	for _, r := range c.Ranges {
		if !r.Moved {
			n++
		}
	}
	return n
}
