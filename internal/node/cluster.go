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
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/acl"
	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/datadir"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/space"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/machine"
	"github.com/kuradb/kura/internal/membership"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/metalog"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// viewFile is where a cluster node saves its view of the members, so that after a
// restart it knows the ring before it hears from anyone.
const viewFile = "CLUSTER.json"

// hintReplayInterval is how often hints are replayed; a variable for tests that replay
// by hand.
var hintReplayInterval = time.Second

// clusterNode is what cluster mode adds to a node: the replica server, gossip, the node's
// machine (the cluster behaviour's decisions), the coordinator's store, hints and their
// replay. It owns their goroutines.
type clusterNode struct {
	cfg     config.Config
	log     *slog.Logger
	self    ring.NodeID
	dir     string
	handler *replica.Handler
	hints   *hint.Store
	hintq   *hint.Queue // stores the request path's hints in hints, off that path
	server  *transport.Server
	ln      net.Listener
	mux     *listener.Mux // splits ln between the transport and Raft (--ring-source=log)
	rl      *ringLog      // the metadata log's driver; nil with --ring-source=gossip
	// removed receives one error when the metadata log records this running node as
	// removed (its replicas were re-made elsewhere while it was away): see Node.Removed.
	removed     chan error
	removedOnce sync.Once
	metaP       atomic.Pointer[metalog.Log]
	gossip      *membership.Gossip
	strategy    ring.Strategy
	machine     *machine.Node
	store       *clusterStore
	storeP      atomic.Pointer[clusterStore] // store, for the internode server, which starts first
	metrics     *admin.ClusterMetrics
	clock       *nodeClock // the node's clock and what it knows of its peers' (clock.go)
	// internodeVersion is the newest internode frame version it speaks (hooks).
	internodeVersion int
	// refilling is set while refill runs (a restarted in-memory node, or rebuild).
	refilling atomic.Bool
	refreshMu sync.Mutex    // orders refresh's reads of gossip with its SetView calls
	repair    *repairer     // anti-entropy repair (repair.go)
	purge     *purgeHistory // the ranges repaired with all their replicas (purge.go)

	peers *transport.Pool // clients to the other members, by node ID

	// users are the node's (Node.users); usersVersion is the metadata log's user record
	// installed in them last (users.go), under usersMu.
	users        *acl.Registry
	usersMu      sync.Mutex
	usersVersion uint64
	tls          *cert.Source // the node certificate, for --tls-internode; nil without TLS

	changed chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startCluster starts cluster mode for a node whose engine and data directory are open;
// clock is the node's, which internode messages carry and a FLUSHALL reads and advances;
// internodeVersion is the newest internode frame version it speaks (0: the newest; see
// hooks).
func startCluster(cfg config.Config, log *slog.Logger, d *datadir.Dir, eng engine.Engine, clock *hlc.Clock, self cluster.Member,
	reg prometheus.Registerer, internodeVersion int, purge *purgeHistory, tls *cert.Source, users *acl.Registry) (*clusterNode, error) {
	nc := &nodeClock{Clock: clock, maxOffset: cfg.MaxClockOffset}
	c := &clusterNode{cfg: cfg, log: log, users: users, removed: make(chan error, 1), self: self.ID, dir: d.Path(), handler: &replica.Handler{Engine: eng}, clock: nc,
		internodeVersion: internodeVersion, changed: make(chan struct{}, 1), stop: make(chan struct{}), purge: purge}
	if cfg.TLSInternode {
		c.tls = tls
	}
	pc := transport.ClientConfig{Clock: nc, MaxClockAhead: cfg.MaxClockOffset, MaxVersion: internodeVersion,
		Epoch: c.epoch, ObserveEpoch: c.observeEpoch}
	if c.tls != nil {
		// Each peer is dialed with the host label the ring has for it, which its node
		// certificate must name (streams, repairs, refills and hints all go through peer).
		pc.DialHost = func(host string) func(context.Context, string, string) (net.Conn, error) {
			return listener.TLSDialer(c.tls.NodeClientConfig(host))
		}
	}
	c.peers = transport.NewPool(pc)
	// An in-memory replica refuses reads until it knows it need not refill (see refill.go):
	// the internode server starts before that is decided.
	c.handler.SetRefilling(eng.Role() == ring.InMemory)
	c.handler.Clock, c.handler.Flushed = clock, c.flushedHints // FLUSHALL (flush.go)
	var err error
	if c.strategy, err = ring.StrategyByName(cfg.Placement); err != nil {
		return nil, err
	}
	hintsDir, err := datadir.HintsDir(d.Path(), cfg.HintsDir)
	if err != nil {
		return nil, err
	}
	if c.hints, err = hint.Open(hintsDir, hint.Options{Window: cfg.HintWindow, MaxBytes: cfg.HintMaxBytes, Logger: log, DiskReserveBytes: cfg.EngineDiskReserve()}); err != nil {
		return nil, err
	}
	c.metrics = admin.NewClusterMetrics(reg, c.hints, eng.Role())
	c.repair = newRepairer(c, eng, reg)
	c.hintq = hint.NewQueue(c.hints, hint.QueueSize, func(target string, err error) {
		c.metrics.HintStored(err)
		if err != nil {
			c.log.Warn("hint dropped", "replica", target, "err", err)
		}
	})
	c.machine = machine.New(c.machineConfig())
	reg.MustRegister(admin.InternodeCollector(c.internodeStats), admin.RoutingCollector{Node: c.machine},
		admin.ClockCollector(c.clock.snapshot))
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
	if c.mux != nil {
		if c.rl, err = c.openRingLog(c.mux.Raft()); err != nil {
			c.close(context.Background())
			return nil, err
		}
		if saved, ok := view.Member(self.ID); ok && len(saved.Tokens) > 0 && c.rl.state.Load().Epoch == 0 {
			c.close(context.Background())
			return nil, fmt.Errorf("%w: this node's data directory holds a ring it joined with --ring-source=gossip "+
				"(%s, no cluster metadata): start it with --ring-source=gossip, as the rest of its cluster runs; "+
				"a gossip cluster does not move to the metadata log node by node (docs/design/membership.md)", datadir.ErrUnusable, viewFile)
		}
		c.metaP.Store(c.rl.log)
		reg.MustRegister(admin.MembershipCollector(c.rl.stats))
		self.Staged, self.Replaces = cfg.Join == "staged", ring.NodeID(cfg.Replace)
		self.MetaVersion = meta.EntryVersion
	}
	if saved, ok := c.savedSelf(view, self.ID); ok && len(saved.Tokens) > 0 {
		self.Tokens, self.Status = saved.Tokens, cluster.Normal
		// An in-memory engine lost what it took since its last snapshot (see refill.go).
		self.Refilling = eng.Role() == ring.InMemory
	} else {
		self.Status = cluster.Joining
	}
	c.handler.SetRefilling(self.Refilling)
	var keys [][]byte
	var keyring keyringFile
	if cfg.GossipKeyringFile != "" {
		if keys, keyring, err = readKeyring(cfg.GossipKeyringFile); err != nil {
			c.close(context.Background())
			return nil, err
		}
	}
	c.gossip, err = membership.Start(membership.Config{Self: self, BindAddr: cfg.GossipListen,
		OnChange: c.onChange, Keys: keys, Logger: log}, view)
	if err != nil {
		c.close(context.Background())
		return nil, err
	}
	level, _ := coord.ParseLevel(c.cfg.Consistency) // validated by config
	c.store = &clusterStore{m: c.machine, peer: c.peer, self: c.self, local: c.handler, level: level,
		hints: c.hintq, metrics: c.metrics, log: c.log, clock: c.clock}
	if c.rl != nil {
		c.store.catchUp = c.rl.catchUp
	}
	c.storeP.Store(c.store)
	c.gossip.Update(func(m *cluster.Member) { m.GossipAddr = c.gossip.Addr() }) // the bound port
	c.refresh()
	c.wg.Add(5)
	go c.saveLoop()
	go c.hintLoop()
	go c.loadLoop()
	go c.behindLoop()
	go c.clockLoop()
	if keys != nil {
		c.wg.Add(1)
		go c.keysLoop(keyring)
	}
	join := c.join
	if c.rl != nil {
		join = c.rl.joinLog
	}
	if err := join(self); err != nil {
		c.close(context.Background())
		return nil, err
	}
	if c.rl != nil {
		c.rl.start()
	}
	if self.Refilling {
		c.refilling.Store(true)
		c.log.Info("in-memory node restarted: refilling from peers before serving reads")
		c.wg.Add(1)
		go c.refill()
	}
	if cfg.RepairPeriod > 0 && c.purge != nil {
		c.wg.Add(1)
		go c.repair.background(cfg.RepairPeriod)
	}
	return c, nil
}

func (c *clusterNode) startServer() error {
	srv, err := transport.NewServer(countingHandler{metaHandler{leaderHandler{repairHandler{c.handler, c.repair}, &c.storeP}, &c.metaP}, c.metrics},
		transport.ServerConfig{Logger: c.log, Clock: c.clock, MaxClockAhead: c.cfg.MaxClockOffset,
			MaxVersion: c.internodeVersion, Epoch: c.epoch, ObserveEpoch: c.observeEpoch, RefuseStaleEpoch: refuseStale})
	if err != nil {
		return err
	}
	var ln net.Listener
	if c.tls != nil {
		// TLS before the Mux: Raft's connections are inside TLS too.
		ln, err = listener.ListenTLS(listener.Nodes, c.cfg.InternodeListen, c.tls.NodeServerConfig())
	} else {
		ln, err = listener.Listen(listener.Nodes, c.cfg.InternodeListen)
	}
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	c.server, c.ln = srv, ln
	if c.cfg.RingSource == "log" {
		// The metadata log's Raft connections share the internode port (listener.Mux).
		c.mux = listener.NewMux(ln)
		ln = c.mux.Default()
	}
	go srv.Serve(ln)
	return nil
}

// savedSelf is this node as it last knew itself: from the metadata log's saved state
// with --ring-source=log, else from the saved gossip view.
func (c *clusterNode) savedSelf(view *cluster.View, id ring.NodeID) (cluster.Member, bool) {
	if c.rl == nil {
		return view.Member(id)
	}
	m, ok := c.rl.selfMember()
	if !ok {
		return cluster.Member{}, false
	}
	return cluster.Member{ID: m.ID, Tokens: m.Tokens, Status: gossipStatus(m.State)}, true
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
		if c.machine.Ring() != nil {
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

// allocate picks the new node's tokens with the configured method, from the ring it knows.
func (c *clusterNode) allocate(self cluster.Member) []ring.Token {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	node := ring.Node{ID: self.ID, Host: self.Host, Rack: self.Rack, Role: self.Role}
	tokens, err := move.Tokens(c.cfg.TokenAllocation, c.machine.Ring(), node, c.cfg.NumTokens, c.strategy, c.cfg.ReplicationFactor, rng)
	if err != nil { // validated by config
		panic(err)
	}
	return tokens
}

// onChange runs on gossip's goroutines: it must not block.
func (c *clusterNode) onChange() {
	c.refresh()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// refresh gives the machine the members and the ring as gossip has them now.
func (c *clusterNode) refresh() {
	if c.gossip == nil {
		return
	}
	// Gossip reports changes from several goroutines: without the lock, a view read before
	// a change could be given to the machine after the view read after it, leaving the
	// request path on a stale view until the next change.
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	var r *ring.Ring
	if c.rl != nil {
		r = c.rl.ring()
	} else if gr, err := c.gossip.Ring(); err == nil {
		r = gr
	}
	c.machine.SetView(c.gossip.Members(), r)
}

// machineConfig is the node's cluster behaviour as configured.
func (c *clusterNode) machineConfig() machine.Config {
	level, _ := coord.ParseLevel(c.cfg.Consistency) // validated by config
	policy, _ := coord.PolicyByName(c.cfg.Routing)  // validated by config
	mode := coord.RepairBackground
	if c.cfg.ReadRepair == "blocking" {
		mode = coord.RepairBlocking
	}
	return machine.Config{Self: c.self, Strategy: c.strategy, ReplicationFactor: c.cfg.ReplicationFactor,
		Policy: policy, Level: level, Repair: mode, Timeout: c.cfg.RequestTimeout,
		WriteSlowAfter: c.cfg.WriteFallback, ReadSlowAfter: c.cfg.ReadFallback,
		ReadSlowPercentile: c.cfg.ReadFallbackPercentile, AsyncTarget: c.cfg.AsyncWriteTarget,
		SlowWriteAfter: c.cfg.SlowWriteLog, Metrics: c.metrics,
		HintsHeld: func(id ring.NodeID) bool { return c.hints.Holds(string(id)) }}
}

// peer returns the caller for replica id: the local handler for this node, else a
// transport client to the member's internode address.
func (c *clusterNode) peer(id ring.NodeID) (caller, error) {
	if id == c.self {
		return localCaller{countingHandler{c.handler, c.metrics}}, nil
	}
	m, ok := c.machine.Member(id)
	if !ok || m.InternodeAddr == "" {
		return nil, fmt.Errorf("node: no internode address for %s", id)
	}
	cl, err := c.peers.Get(string(id), m.Host, m.InternodeAddr)
	if err != nil {
		return nil, err // not a nil *Client in a non-nil caller
	}
	return cl, nil
}

// internodeStats is what the internode transport wrote, for metrics.
func (c *clusterNode) internodeStats() (client, server admin.InternodeStats) {
	cs := c.peers.Stats()
	client = admin.InternodeStats{FramesWritten: cs.FramesWritten, Flushes: cs.Flushes}
	if c.server != nil {
		ss := c.server.Stats()
		server = admin.InternodeStats{FramesWritten: ss.FramesWritten, Flushes: ss.Flushes}
	}
	return client, server
}

// loadAnnounceInterval is how often a node checks its load and gossips it if it moved.
var loadAnnounceInterval = 10 * time.Second

// loadLoop announces this node's load (see cluster.Member.Load) when the machine finds
// it worth announcing (machine.Node.AnnounceLoad).
func (c *clusterNode) loadLoop() {
	defer c.wg.Done()
	t := time.NewTicker(loadAnnounceInterval)
	defer t.Stop()
	var announcedFree int64
	for {
		if load := c.load(); c.machine.AnnounceLoad(load) {
			c.gossip.Update(func(m *cluster.Member) { m.Load = load })
		}
		// Free space, for the planner's check, when it moved by more than 1% or 64 MiB.
		if u, err := space.Statfs(c.dir); err == nil {
			free := int64(u.AvailBytes)
			if d := free - announcedFree; d > max(free/100, 64<<20) || -d > max(free/100, 64<<20) {
				announcedFree = free
				c.gossip.Update(func(m *cluster.Member) { m.Free = free })
			}
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
	c.every(behindAnnounceInterval, func() {
		var now []ring.NodeID
		for _, id := range c.hints.Holding() {
			now = append(now, ring.NodeID(id))
		}
		if c.machine.AnnounceBehind(now) {
			c.gossip.Update(func(m *cluster.Member) { m.Behind = now })
		}
	})
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
			if err := datadir.WriteFileAtomic(filepath.Join(c.dir, viewFile), c.gossip.Snapshot()); err != nil {
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
		return nil, fmt.Errorf("%w: %w", datadir.ErrUnusable, err)
	}
	if _, err := view.MergeEncoded(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", datadir.ErrUnusable, viewFile, err)
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

// replayHints is one round of replay: it discards the hints and the repair marks a
// rebuild covered, then replays to each replica that is up.
func (c *clusterNode) replayHints() {
	c.clearCoveredMarks()
	for target, s := range c.hints.Stats() {
		id := ring.NodeID(target)
		if before, ok := c.machine.HintsCovered(id); ok && s.Hints > 0 && s.Oldest.Before(before) {
			c.discardHints(target, before)
			s.Hints = c.hints.Stats()[target].Hints
		}
		if s.Hints == 0 || !c.machine.ReplayTo(id) {
			continue
		}
		if p, err := c.peer(id); err == nil {
			c.replayTo(id, p)
		}
	}
}

// discardHints deletes target's hints created before before: a rebuild of target covered
// them (machine.Node.HintsCovered).
func (c *clusterNode) discardHints(target string, before time.Time) {
	n, err := c.hints.Discard(target, before)
	c.metrics.HintsDiscarded(n)
	if err != nil {
		c.log.Warn("discarding hints a rebuild covered", "replica", target, "err", err)
		return
	}
	c.log.Info("discarded hints a rebuild covered", "replica", target, "hints", n)
}

// replayTo sends replica id one round of its hints through p, in the batches the
// machine allows (machine.Replay).
func (c *clusterNode) replayTo(id ring.NodeID, p caller) {
	r := c.machine.StartReplay(id)
	for batch := r.Next(time.Now()); batch > 0; batch = r.Next(time.Now()) {
		n, err := c.hints.Replay(string(id), time.Now(), batch, func(ms []row.Mutation) error {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			defer cancel()
			sent := time.Now()
			r.Sent(len(ms), sent)
			_, err := p.Call(ctx, wire.MethodWrite, wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: ms}))
			now := time.Now()
			r.Answered(len(ms), now.Sub(sent), err != nil, now)
			return err
		})
		if err != nil || n == 0 {
			return
		}
		c.metrics.HintsReplayed(n)
		c.log.Debug("replayed hints", "replica", id, "hints", n)
	}
}

// gossipAddr is the bound gossip address.
func (c *clusterNode) gossipAddr() string { return c.gossip.Addr() }

// close leaves the cluster and stops everything cluster mode started.
func (c *clusterNode) close(ctx context.Context) error {
	var errs []error
	close(c.stop)
	c.wg.Wait()
	if c.rl != nil {
		errs = append(errs, c.rl.close())
	}
	if c.gossip != nil {
		if err := datadir.WriteFileAtomic(filepath.Join(c.dir, viewFile), c.gossip.Snapshot()); err != nil {
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
	if c.mux != nil {
		c.mux.Close()
	}
	c.peers.Close()
	if c.hintq != nil {
		c.hintq.Close() // stores the hints still queued
	}
	if c.hints != nil {
		errs = append(errs, c.hints.Close())
	}
	return errors.Join(errs...)
}

// status builds the node's ClusterStatus.
func (c *clusterNode) status() admin.ClusterStatus {
	st := admin.Status(admin.View{Self: c.self, ReplicationFactor: c.cfg.ReplicationFactor,
		Placement: c.cfg.Placement, Routing: c.cfg.Routing, Strategy: c.strategy, Ring: c.machine.Ring(),
		Members: c.gossip.Members(), Lagging: c.machine.Lagging, Hints: c.hints.Stats(), Marks: c.repairMarks(),
		Clocks: c.clock.snapshot()})
	if pr, ok := c.repair.status(); ok {
		st.Repair = &pr
	}
	if c.rl != nil {
		st.Topology = c.rl.status()
		ms := c.rl.state.Load()
		for i := range st.Members {
			if m, ok := ms.Member(ring.NodeID(st.Members[i].ID)); ok {
				st.Members[i].Status = m.State.String() // the log's, not gossip's
				st.Members[i].Tokens = len(m.Tokens)
			}
		}
	}
	return st
}

// countingHandler counts and times the replica requests a handler serves.
type countingHandler struct {
	h interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
	m *admin.ClusterMetrics
}

func (c countingHandler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	c.m.ReplicaRequest(method)
	if c.m == nil {
		return c.h.Handle(ctx, method, payload)
	}
	start := time.Now()
	out, err := c.h.Handle(ctx, method, payload)
	c.m.Served(method, time.Since(start))
	return out, err
}
