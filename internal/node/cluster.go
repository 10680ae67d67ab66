package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/membership"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// viewFile is where a cluster node saves its view of the members, so that after a
// restart it knows the ring before it hears from anyone.
const viewFile = "CLUSTER.json"

// Hint replay limits: every hintReplayInterval, up to hintReplayBatches batches of
// hintReplayBatch hints per replica, so that a returning replica is not flooded.
const (
	hintReplayBatch   = 64
	hintReplayBatches = 4
)

// hintReplayInterval is a variable for tests that replay by hand.
var hintReplayInterval = time.Second

// clusterNode is what cluster mode adds to a node: the replica server, gossip, the ring,
// the coordinator's store, hints and their replay. It owns their goroutines.
type clusterNode struct {
	cfg      config.Config
	log      *slog.Logger
	self     ring.NodeID
	dir      string
	handler  *replica.Handler
	hints    *hint.Store
	hintq    *hintQueue // stores the request path's hints in hints, off that path
	server   *transport.Server
	ln       net.Listener
	gossip   *membership.Gossip
	strategy ring.Strategy
	store    *clusterStore
	metrics  *clusterMetrics
	async    *asyncPacer // nil: asynchronous writes are not paced
	// refilling is set while refill runs (a restarted in-memory node, or rebuild).
	refilling atomic.Bool

	state atomic.Pointer[clusterState] // rebuilt whenever the view changes
	// refreshMu orders rebuilds of state: gossip reports changes from several goroutines,
	// and without it a rebuild that read the view before a change could be stored after
	// the rebuild that read it after, leaving the request path on a stale view until the
	// next change.
	refreshMu sync.Mutex

	peersMu sync.Mutex
	peers   map[ring.NodeID]*transport.Client
	retired transport.Stats // what clients replaced in peers had written

	changed chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// clusterState is a snapshot of the view for the request path.
type clusterState struct {
	ring    *ring.Ring // nil until some member owns tokens
	members map[ring.NodeID]cluster.Member
	// sets caches the replica set of each ring range (ring.RangeIndex), computed on first
	// use rather than for every range whenever the view changes (liveness, load).
	sets []atomic.Pointer[[]coord.Replica]
	// behind holds the replicas that some other live member announced hints for
	// (cluster.Member.Behind).
	behind map[ring.NodeID]bool
}

// startCluster starts cluster mode for a node whose engine and data directory are open.
func startCluster(cfg config.Config, log *slog.Logger, d *dataDir, eng engine.Engine, self cluster.Member, reg prometheus.Registerer) (*clusterNode, error) {
	c := &clusterNode{cfg: cfg, log: log, self: self.ID, dir: d.path, handler: &replica.Handler{Engine: eng},
		peers: map[ring.NodeID]*transport.Client{}, changed: make(chan struct{}, 1), stop: make(chan struct{})}
	// An in-memory replica refuses reads until it knows it need not refill (see refill.go):
	// the internode server starts before that is decided.
	c.handler.SetRefilling(eng.Role() == ring.InMemory)
	var err error
	if c.strategy, err = ring.StrategyByName(cfg.Placement); err != nil {
		return nil, err
	}
	hintsDir, err := hintsDir(cfg, d.path)
	if err != nil {
		return nil, err
	}
	if c.hints, err = hint.Open(hintsDir, hint.Options{Window: cfg.HintWindow, MaxBytes: cfg.HintMaxBytes, Logger: log, DiskReserveBytes: diskReserve(cfg.DiskReserveBytes)}); err != nil {
		return nil, err
	}
	c.metrics = newClusterMetrics(reg, c.hints, eng.Role())
	c.hintq = newHintQueue(c.hints, hintQueueSize, func(target string, err error) {
		c.metrics.hint(err)
		if err != nil {
			c.log.Warn("hint dropped", "replica", target, "err", err)
		}
	})
	reg.MustRegister(internodeCollector{c})
	if cfg.AsyncWriteTarget > 0 && cfg.Routing != "uniform" { // uniform routing sends nothing asynchronously
		c.async = newAsyncPacer(cfg.AsyncWriteTarget, cfg.WriteFallback, c.hostOf)
		reg.MustRegister(c.async)
	}
	if err := c.startServer(); err != nil {
		c.close(context.Background())
		return nil, err
	}
	self.InternodeAddr = c.ln.Addr().String()
	view, err := c.loadView()
	if err != nil {
		c.close(context.Background())
		return nil, err
	}
	if saved, ok := view.Member(self.ID); ok && len(saved.Tokens) > 0 {
		self.Tokens, self.Status = saved.Tokens, cluster.Normal
		// An in-memory engine lost what it took since its last snapshot (see refill.go).
		self.Refilling = eng.Role() == ring.InMemory
	} else {
		self.Status = cluster.Joining
	}
	c.handler.SetRefilling(self.Refilling)
	c.gossip, err = membership.Start(membership.Config{Self: self, BindAddr: cfg.GossipListen,
		Fast: isLoopback(cfg.GossipListen), OnChange: c.onChange, Logger: log}, view)
	if err != nil {
		c.close(context.Background())
		return nil, err
	}
	c.store = c.newStore()
	if c.store.load != nil {
		reg.MustRegister(c.store.load)
	}
	c.gossip.Update(func(m *cluster.Member) { m.GossipAddr = c.gossip.Addr() }) // the bound port
	c.refresh()
	c.wg.Add(4)
	go c.saveLoop()
	go c.hintLoop()
	go c.loadLoop()
	go c.behindLoop()
	if err := c.join(self); err != nil {
		c.close(context.Background())
		return nil, err
	}
	if self.Refilling {
		c.refilling.Store(true)
		c.log.Info("in-memory node restarted: refilling from peers before serving reads")
		c.wg.Add(1)
		go c.refill()
	}
	return c, nil
}

func (c *clusterNode) startServer() error {
	srv, err := transport.NewServer(countingHandler{c.handler, c.metrics}, transport.ServerConfig{Logger: c.log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.cfg.InternodeListen)
	if err != nil {
		return fmt.Errorf("node: listen for other nodes on %s: %w", c.cfg.InternodeListen, err)
	}
	c.server, c.ln = srv, ln
	go srv.Serve(ln)
	return nil
}

// join contacts the seeds and, for a new node, picks its tokens from the ring it learned
// and becomes normal. With no seeds the node starts a cluster of its own.
func (c *clusterNode) join(self cluster.Member) error {
	seeds := c.cfg.SeedList()
	if len(seeds) > 0 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := c.gossip.Join(seeds)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				if len(self.Tokens) > 0 {
					c.log.Warn("no seed answered; serving with the saved ring", "seeds", seeds, "err", err)
					break
				}
				return fmt.Errorf("node: join %v: %w", seeds, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		c.log.Info("contacted the seeds", "seeds", seeds)
		c.waitForState(2 * time.Second)
	}
	if len(self.Tokens) > 0 {
		return nil
	}
	if len(seeds) > 0 {
		c.waitForEarlierJoiners(30 * time.Second)
	}
	tokens := c.allocate(self)
	c.gossip.Update(func(m *cluster.Member) { m.Tokens, m.Status = tokens, cluster.Normal })
	c.log.Info("joined the ring", "tokens", len(tokens), "seeds", seeds)
	return nil
}

// waitForState gives gossip a moment to bring the other members' entries after a join.
func (c *clusterNode) waitForState(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if st := c.state.Load(); st != nil && st.ring != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// joinSettle is how long a new node listens before picking tokens, so that nodes
// joining at the same moment hear of each other (several gossip rounds on a fast setup).
const joinSettle = time.Second

// waitForEarlierJoiners lets nodes that are joining at the same time pick their tokens
// one after another, lowest node ID first: two nodes that computed tokens from the same
// ring would choose the same ranges to split (and the same tokens). It gives up after
// limit: a node stuck joining must not block the others for ever.
func (c *clusterNode) waitForEarlierJoiners(limit time.Duration) {
	time.Sleep(joinSettle)
	deadline := time.Now().Add(limit)
	settle := func() {
		for time.Now().Before(deadline) && !c.gossip.Settled() { // know everyone's status first
			time.Sleep(50 * time.Millisecond)
		}
	}
	settle()
	nextLog := time.Now().Add(5 * time.Second)
	resynced := false
	for time.Now().Before(deadline) {
		var waitingFor []ring.NodeID
		for _, m := range c.gossip.Members() {
			if m.Status == cluster.Joining && m.Up && m.ID < c.self {
				waitingFor = append(waitingFor, m.ID)
			}
		}
		if len(waitingFor) == 0 && !resynced {
			// Before deciding alone, pull the seeds' view once more: a node that joined
			// through them a moment after this one may not have reached it by gossip
			// yet (on a loaded machine it had not after joinSettle, and both picked the
			// same tokens from the same ring).
			resynced = true
			if _, err := c.gossip.Join(c.cfg.SeedList()); err == nil {
				settle()
				continue
			}
		}
		if len(waitingFor) == 0 {
			c.refresh()
			return
		}
		if time.Now().After(nextLog) {
			c.log.Info("waiting for nodes joining at the same time to pick their tokens first", "waiting_for", waitingFor)
			nextLog = time.Now().Add(5 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.log.Warn("gave up waiting for nodes joining at the same time; picking tokens now")
}

// allocate picks the new node's tokens with the configured method.
func (c *clusterNode) allocate(self cluster.Member) []ring.Token {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	st := c.state.Load()
	var r *ring.Ring
	if st != nil {
		r = st.ring
	}
	if c.cfg.TokenAllocation == "random" {
		return ring.RandomTokens(rng, c.cfg.NumTokens, nil)
	}
	node := ring.Node{ID: self.ID, Host: self.Host, Rack: self.Rack, Role: self.Role}
	return ring.BalancedTokens(r, node, c.cfg.NumTokens, c.strategy, c.cfg.ReplicationFactor, rng)
}

// hintsDir returns where the hint store of a node with data directory dataDir lives:
// --hints-dir, or hints/ in the data directory. A node that kept hints in its data
// directory and is then given --hints-dir refuses to start rather than leave them
// behind: they are writes some replica has not had.
func hintsDir(cfg config.Config, dataDir string) (string, error) {
	def := filepath.Join(dataDir, "hints")
	if cfg.HintsDir == "" || filepath.Clean(cfg.HintsDir) == def {
		return def, nil
	}
	if entries, err := os.ReadDir(def); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("node: --hints-dir is %s, but %s holds a hint store: move it there (with the node stopped) or remove it", cfg.HintsDir, def)
	}
	return cfg.HintsDir, nil
}

// onChange runs on gossip's goroutines: it must not block.
func (c *clusterNode) onChange() {
	c.refresh()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// refresh rebuilds the request path's snapshot of the view.
func (c *clusterNode) refresh() {
	if c.gossip == nil {
		return
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	st := &clusterState{members: map[ring.NodeID]cluster.Member{}}
	for _, m := range c.gossip.Members() {
		st.members[m.ID] = m
	}
	st.behind = behindSet(st.members, c.self)
	if r, err := c.gossip.Ring(); err == nil {
		st.ring = r
		st.sets = make([]atomic.Pointer[[]coord.Replica], r.RangeCount())
	}
	c.state.Store(st)
}

func (c *clusterNode) newStore() *clusterStore {
	level, _ := coord.ParseLevel(c.cfg.Consistency) // validated by config
	mode := coord.RepairBackground
	if c.cfg.ReadRepair == "blocking" {
		mode = coord.RepairBlocking
	}
	policy, _ := coord.PolicyByName(c.cfg.Routing) // validated by config
	var load *loadTracker
	if _, ok := policy.(coord.LoadAware); ok {
		load = newLoadTracker(c.lagging)
	}
	var latencies *readLatencies
	if c.cfg.ReadFallbackPercentile > 0 {
		latencies = newReadLatencies(c.cfg.ReadFallbackPercentile, c.cfg.ReadFallback)
	}
	return &clusterStore{readLatencies: latencies, replicas: c.replicas, peer: c.peer, self: c.self, local: c.handler, policy: policy, level: level,
		repair: mode, timeout: c.cfg.RequestTimeout, slowAfter: c.cfg.WriteFallback, readSlowAfter: c.cfg.ReadFallback, load: load, async: c.async, hints: c.hintq,
		metrics: c.metrics, log: c.log, slow: newSlowWrites(c.cfg.SlowWriteLog, c.log)}
}

// replicas returns key's replica set with the failure detector's opinion of each, from
// the sets computed per range when the view last changed. The caller must not modify it.
func (c *clusterNode) replicas(key []byte) []coord.Replica {
	st := c.state.Load()
	if st == nil || st.ring == nil {
		return nil
	}
	i := st.ring.RangeIndex(ring.TokenOf(key))
	if set := st.sets[i].Load(); set != nil {
		return *set
	}
	set := c.replicaSet(st, st.ring.RangeEnd(i))
	st.sets[i].Store(&set) // a racing request may store an equal set: either is right
	return set
}

// replicaSet computes the replica set of token t in st.
func (c *clusterNode) replicaSet(st *clusterState, t ring.Token) []coord.Replica {
	ids := c.strategy.Replicas(st.ring, t, c.cfg.ReplicationFactor)
	out := make([]coord.Replica, 0, len(ids))
	for _, id := range ids {
		m := st.members[id]
		r := coord.Replica{ID: id, Up: id == c.self || m.Up, Role: m.Role, Refilling: m.Refilling}
		if id == c.self {
			// Closest first: the policy asks the first replica for the row, and this
			// node's own copy answers without a network round trip.
			out = append([]coord.Replica{r}, out...)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// hostOf returns member id's host, "" if unknown.
func (c *clusterNode) hostOf(id ring.NodeID) string {
	if st := c.state.Load(); st != nil {
		return st.members[id].Host
	}
	return ""
}

// peer returns the caller for replica id: the local handler for this node, else a
// transport client to the member's internode address.
func (c *clusterNode) peer(id ring.NodeID) (caller, error) {
	if id == c.self {
		return localCaller{countingHandler{c.handler, c.metrics}}, nil
	}
	st := c.state.Load()
	m, ok := st.members[id]
	if !ok || m.InternodeAddr == "" {
		return nil, fmt.Errorf("node: no internode address for %s", id)
	}
	c.peersMu.Lock()
	defer c.peersMu.Unlock()
	if cl, ok := c.peers[id]; ok && cl.Addr() == m.InternodeAddr {
		return cl, nil
	} else if ok {
		cl.Close() // the member moved
		s := cl.Stats()
		c.retired.FramesWritten += s.FramesWritten // the counters stay monotonic
		c.retired.Flushes += s.Flushes
	}
	cl, err := transport.NewClient(m.InternodeAddr, transport.ClientConfig{})
	if err != nil {
		return nil, err
	}
	c.peers[id] = cl
	return cl, nil
}

// loadAnnounceInterval is how often a node checks its load and gossips it if it moved.
var loadAnnounceInterval = 10 * time.Second

// loadLoop announces this node's load (see cluster.Member.Load) when it has moved by 1%
// or 1 MiB since the last announcement, so that gossip is not flooded by small changes.
func (c *clusterNode) loadLoop() {
	defer c.wg.Done()
	announced := int64(-1)
	t := time.NewTicker(loadAnnounceInterval)
	defer t.Stop()
	for {
		load := c.load()
		if d := load - announced; announced < 0 || max(d, -d) >= max(announced/100, 1<<20) {
			c.gossip.Update(func(m *cluster.Member) { m.Load = load })
			announced = load
		}
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// behindAnnounceInterval is how often a node checks which replicas it holds hints for and
// gossips them if they changed.
var behindAnnounceInterval = time.Second

// behindLoop announces the replicas this node holds hints for (cluster.Member.Behind)
// whenever they change, at most once per behindAnnounceInterval. With token-aware
// clients, writes are coordinated on write-optimized nodes, which keep the deferred
// writes for the read-optimized replicas, while reads are coordinated elsewhere (on the
// in-memory nodes; before 2026-11-24 on the read-optimized nodes themselves): without
// this, the node that coordinates a read would not know that a replica lags.
func (c *clusterNode) behindLoop() {
	defer c.wg.Done()
	if c.hints == nil {
		return
	}
	var announced []ring.NodeID
	c.every(behindAnnounceInterval, func() {
		var now []ring.NodeID
		for _, id := range c.hints.Holding() {
			now = append(now, ring.NodeID(id))
		}
		if !slices.Equal(now, announced) {
			c.gossip.Update(func(m *cluster.Member) { m.Behind = now })
			announced = now
		}
	})
}

// behindSet returns the replicas that a live member other than self announced hints for.
// A member that is down replays nothing until it is back, but its announcement is no
// longer news either: its replicas are not read around on its word.
func behindSet(members map[ring.NodeID]cluster.Member, self ring.NodeID) map[ring.NodeID]bool {
	var out map[ring.NodeID]bool
	for _, m := range members {
		if m.ID == self || !m.Up {
			continue
		}
		for _, id := range m.Behind {
			if out == nil {
				out = map[ring.NodeID]bool{}
			}
			out[id] = true
		}
	}
	return out
}

// lagging reports whether replica id lags for some keys: this node holds hints for it, or
// another live member announced that it does (load-aware routing reads around it).
func (c *clusterNode) lagging(id ring.NodeID) bool {
	if c.hints != nil && c.hints.Holds(string(id)) {
		return true
	}
	st := c.state.Load()
	return st != nil && st.behind[id]
}

// load is the data this node holds: on disk, or in memory for an in-memory engine.
func (c *clusterNode) load() int64 {
	s := c.handler.Engine.Stats()
	if c.handler.Engine.Role() == ring.InMemory {
		return s.MemoryBytes
	}
	return s.DiskBytes
}

// saveLoop writes the view to disk after changes, at most every 100 ms.
func (c *clusterNode) saveLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.changed:
			if err := writeFileAtomic(filepath.Join(c.dir, viewFile), c.gossip.Snapshot()); err != nil {
				c.log.Warn("could not save the cluster view", "err", err)
			}
			select {
			case <-c.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (c *clusterNode) loadView() (*cluster.View, error) {
	view := cluster.NewView()
	b, err := os.ReadFile(filepath.Join(c.dir, viewFile))
	if errors.Is(err, os.ErrNotExist) {
		return view, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	if _, err := view.MergeEncoded(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDataDir, viewFile, err)
	}
	return view, nil
}

// hintLoop replays hints to replicas that are up, a few batches per interval: to those
// that were down, and to those whose asynchronous writes were deferred, as far as their
// paces allow.
func (c *clusterNode) hintLoop() {
	defer c.wg.Done()
	c.every(hintReplayInterval, c.replayHints)
}

// every calls f every d until the node stops.
func (c *clusterNode) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// refillSkew is how far a rebuilt replica's clock may be ahead of this node's: a hint is
// stamped with this node's clock and the refill's start with the replica's, so hints
// created up to this long before the start are still replayed, in case they came after it.
const refillSkew = 5 * time.Second

func (c *clusterNode) replayHints() {
	st := c.state.Load()
	for target, s := range c.hints.Stats() {
		m := st.members[ring.NodeID(target)]
		if s.Hints > 0 && !m.Refilled.IsZero() && s.Oldest.Before(m.Refilled.Add(-refillSkew)) {
			c.discardHints(target, m.Refilled.Add(-refillSkew))
			s.Hints = c.hints.Stats()[target].Hints
		}
		if s.Hints == 0 || !m.Up {
			continue
		}
		if p, err := c.peer(ring.NodeID(target)); err == nil {
			c.replayTo(ring.NodeID(target), p)
		}
	}
}

// discardHints deletes target's hints created before before: target was rebuilt from its
// peers since, which gave it those writes. Replaying them would cost target a random write
// each, at its pace: after a bulk load, hundreds of thousands, for many minutes.
func (c *clusterNode) discardHints(target string, before time.Time) {
	n, err := c.hints.Discard(target, before)
	c.metrics.discarded(n)
	if err != nil {
		c.log.Warn("discarding hints a rebuild covered", "replica", target, "err", err)
		return
	}
	c.log.Info("discarded hints a rebuild covered", "replica", target, "hints", n)
}

// replayTo sends replica id up to hintReplayBatches batches of its hints through p.
// Under paced asynchronous writes (c.async) replayed hints take id's pace, as deferred
// writes would have: batches no larger than its room, and none after one answered late,
// so that a backlogged replica catches up at the pace it and its host allow.
func (c *clusterNode) replayTo(id ring.NodeID, p caller) {
	for range hintReplayBatches {
		batch, late := hintReplayBatch, false
		if c.async != nil {
			if batch = min(batch, c.async.room(id)); batch == 0 {
				return
			}
		}
		n, err := c.hints.Replay(string(id), time.Now(), batch, func(ms []row.Mutation) error {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			defer cancel()
			var answered func(bool) time.Duration
			if c.async != nil {
				answered = c.async.sent(id, len(ms))
			}
			_, err := p.Call(ctx, wire.MethodWrite, wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: ms}))
			if answered != nil {
				late = answered(err != nil) > c.cfg.AsyncWriteTarget
			}
			return err
		})
		if err != nil || n == 0 {
			return
		}
		c.metrics.hintsSent.Add(float64(n))
		c.log.Debug("replayed hints", "replica", id, "hints", n)
		if late {
			return
		}
	}
}

// gossipAddr is the bound gossip address.
func (c *clusterNode) gossipAddr() string { return c.gossip.Addr() }

// close leaves the cluster and stops everything cluster mode started.
func (c *clusterNode) close(ctx context.Context) error {
	var errs []error
	close(c.stop)
	c.wg.Wait()
	if c.gossip != nil {
		if err := writeFileAtomic(filepath.Join(c.dir, viewFile), c.gossip.Snapshot()); err != nil {
			errs = append(errs, err)
		}
		// A leave that no one acknowledged in time is not a failed shutdown: the others'
		// failure detectors will notice.
		if err := c.gossip.Leave(time.Second); err != nil {
			c.log.Warn("leaving the cluster", "err", err)
		}
	}
	if c.server != nil {
		errs = append(errs, c.server.Shutdown(ctx))
	}
	c.peersMu.Lock()
	for _, cl := range c.peers {
		cl.Close()
	}
	c.peersMu.Unlock()
	if c.hintq != nil {
		c.hintq.close() // stores the hints still queued
	}
	if c.hints != nil {
		errs = append(errs, c.hints.Close())
	}
	return errors.Join(errs...)
}

func isLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() || strings.EqualFold(host, "localhost")
}
