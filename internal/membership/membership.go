// Package membership is the gossip adapter: it runs hashicorp/memberlist for the node and
// turns what it hears into inputs for the cluster view (package cluster). Memberlist
// brings failure detection (SWIM: probes, indirect probes, suspicion) and two channels for
// kura's own state: small broadcasts, which carry a member's entry whenever it changes,
// and periodic full-state push/pull, which carries every entry and heals whatever the
// broadcasts missed. The memberlist node name is the kura node ID.
package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/ring"
)

// Config configures a Gossip.
type Config struct {
	// Self is this node's entry. Its Version is set by Start: one past any version of
	// this node the view already holds, so a restarted node's entry wins.
	Self cluster.Member
	// BindAddr is the gossip address (TCP and UDP), host:port; port 0 picks a free one.
	BindAddr string
	// Fast selects settings for nodes on one machine (200 ms probes, 2 s state exchange,
	// a dead node's name reclaimable after 1 s) instead of a LAN's, as tests and `kura dev`
	// want. A loopback BindAddr selects them too.
	Fast bool
	// OnChange, if set, is called after the view changed (from a memberlist goroutine,
	// without locks held). It must not block.
	OnChange func()
	// Keys, when set, encrypt and authenticate gossip (primary first; see ParseKeyring):
	// messages without a valid key are dropped, and nothing is sent in the clear.
	Keys   [][]byte
	Logger *slog.Logger
}

// Gossip is a running member. Safe for concurrent use.
type Gossip struct {
	ml    *memberlist.Memberlist
	mlp   atomic.Pointer[memberlist.Memberlist] // ml for memberlist's own goroutines, which start inside Create
	queue *memberlist.TransmitLimitedQueue
	cfg   Config
	// keyring is memberlist's, when gossip is encrypted; SetKeys changes it.
	keyring *memberlist.Keyring

	mu   sync.Mutex
	view *cluster.View
	self cluster.Member
}

// Start begins gossiping with view (possibly restored from disk) as the starting view.
// It does not join anyone: call Join with the seeds.
func Start(cfg Config, view *cluster.View) (*Gossip, error) {
	if cfg.Self.ID == "" {
		return nil, errors.New("membership: node ID is empty")
	}
	host, portStr, err := net.SplitHostPort(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("membership: bind address %q: %w", cfg.BindAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("membership: bind port %q: %w", portStr, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gossip{cfg: cfg, view: view}
	// Versions start from the clock, like Cassandra's generation, so that a restarted
	// node's entries outrank its earlier life's even if the saved view lags behind what
	// the others heard; within a life, Update counts up from there.
	cfg.Self.Version = max(cfg.Self.Version, uint64(time.Now().UnixNano()))
	if old, ok := view.Member(cfg.Self.ID); ok {
		cfg.Self.Version = max(cfg.Self.Version, old.Version+1)
	}
	g.self = cfg.Self
	view.Merge(g.self)
	view.SetUp(g.self.ID, true)

	mc := memberlist.DefaultLANConfig()
	// A node ID names one node for its life: if it comes back from another address (a
	// restart on a new port), let it reclaim its name once its old self is dead.
	mc.DeadNodeReclaimTime = 30 * time.Second
	if cfg.Fast || isLoopback(host) {
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval, mc.ProbeTimeout = 200*time.Millisecond, 100*time.Millisecond
		mc.SuspicionMult, mc.GossipToTheDeadTime = 2, 2*time.Second
		mc.PushPullInterval, mc.DeadNodeReclaimTime = 2*time.Second, time.Second
	}
	mc.Name = string(cfg.Self.ID)
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	mc.Delegate = (*delegate)(g)
	mc.Events = (*events)(g)
	mc.Logger = log.New(io.Discard, "", 0)
	if len(cfg.Keys) > 0 {
		// GossipVerifyIncoming and -Outgoing stay on (the default): no plaintext either way.
		if g.keyring, err = memberlist.NewKeyring(cfg.Keys, cfg.Keys[0]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeyring, err)
		}
		mc.Keyring = g.keyring
	}
	g.queue = &memberlist.TransmitLimitedQueue{NumNodes: g.numNodes, RetransmitMult: mc.RetransmitMult}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	g.ml = ml
	g.mlp.Store(ml)
	return g, nil
}

func (g *Gossip) numNodes() int {
	if ml := g.mlp.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1
}

// Addr returns the gossip address others join through.
func (g *Gossip) Addr() string {
	n := g.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// Join contacts the seeds (gossip addresses) and returns how many answered.
func (g *Gossip) Join(seeds []string) (int, error) {
	n, err := g.ml.Join(seeds)
	if err != nil {
		return n, fmt.Errorf("membership: join %v: %w", seeds, err)
	}
	return n, nil
}

// Update changes this node's own entry with change, bumps its version and broadcasts it.
func (g *Gossip) Update(change func(*cluster.Member)) {
	g.mu.Lock()
	change(&g.self)
	g.self.Version++
	g.view.Merge(g.self)
	msg := encodeMember(g.self)
	g.mu.Unlock()
	g.queue.QueueBroadcast(memberBroadcast{id: g.self.ID, msg: msg})
	g.changed()
}

// Members returns the current view's entries.
func (g *Gossip) Members() []cluster.Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view.Members()
}

// Settled reports whether the view holds an entry for every node memberlist knows to be
// alive: a node that just joined may be heard of by the failure detector before its
// entry arrives, and a decision that depends on everyone's status must wait for it.
func (g *Gossip) Settled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.ml.Members() {
		if _, ok := g.view.Member(ring.NodeID(n.Name)); !ok {
			return false
		}
	}
	return true
}

// Ring builds the ring from the current view.
func (g *Gossip) Ring() (*ring.Ring, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view.Ring()
}

// Snapshot returns the view encoded for saving to disk.
func (g *Gossip) Snapshot() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view.Marshal()
}

// Leave tells the others this node is leaving (they stop probing it), then stops.
func (g *Gossip) Leave(timeout time.Duration) error {
	err := g.ml.Leave(timeout)
	if serr := g.ml.Shutdown(); err == nil {
		err = serr
	}
	return err
}

// Shutdown stops gossiping without telling anyone: the others' failure detectors will
// mark this node down.
func (g *Gossip) Shutdown() error { return g.ml.Shutdown() }

func (g *Gossip) changed() {
	if g.cfg.OnChange != nil {
		g.cfg.OnChange()
	}
}

func encodeMember(m cluster.Member) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a plain struct
	}
	return b
}

// delegate carries kura's state over memberlist.
type delegate Gossip

func (d *delegate) NodeMeta(int) []byte { return nil }

// NotifyMsg merges a broadcast entry and passes it on if it was news.
func (d *delegate) NotifyMsg(b []byte) {
	g := (*Gossip)(d)
	var m cluster.Member
	if err := json.Unmarshal(b, &m); err != nil {
		g.cfg.Logger.Warn("membership: dropped a malformed gossip message", "err", err)
		return
	}
	g.mu.Lock()
	news := m.ID != g.self.ID && g.view.Merge(m)
	g.mu.Unlock()
	if news {
		g.queue.QueueBroadcast(memberBroadcast{id: m.ID, msg: append([]byte(nil), b...)})
		g.changed()
	}
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return (*Gossip)(d).queue.GetBroadcasts(overhead, limit)
}

func (d *delegate) LocalState(bool) []byte { return (*Gossip)(d).Snapshot() }

func (d *delegate) MergeRemoteState(b []byte, _ bool) {
	g := (*Gossip)(d)
	g.mu.Lock()
	before := map[ring.NodeID]uint64{}
	for _, m := range g.view.Members() {
		before[m.ID] = m.Version
	}
	changed, err := g.view.MergeEncoded(b)
	// Pass on what the exchange taught us, so that news spreads at broadcast speed and
	// not only at the next exchange.
	var news [][]byte
	var newsIDs []ring.NodeID
	for _, m := range g.view.Members() {
		if v, ok := before[m.ID]; (!ok || v < m.Version) && m.ID != g.self.ID {
			news, newsIDs = append(news, encodeMember(m)), append(newsIDs, m.ID)
		}
	}
	// Nobody else may speak for this node: if the remote held a newer entry of ours (from
	// an earlier life with a later clock), outbid it.
	var outbid []byte
	if cur, _ := g.view.Member(g.self.ID); cur.Version > g.self.Version {
		g.self.Version = cur.Version + 1
		g.view.Merge(g.self)
		outbid = encodeMember(g.self)
	}
	g.mu.Unlock()
	if outbid != nil {
		g.queue.QueueBroadcast(memberBroadcast{id: g.self.ID, msg: outbid})
	}
	for i := range news {
		g.queue.QueueBroadcast(memberBroadcast{id: newsIDs[i], msg: news[i]})
	}
	if err != nil {
		g.cfg.Logger.Warn("membership: dropped a malformed state exchange", "err", err)
		return
	}
	if changed {
		g.changed()
	}
}

// events feeds memberlist's failure detector into the view.
type events Gossip

func (e *events) NotifyJoin(n *memberlist.Node)   { e.setUp(n, true) }
func (e *events) NotifyLeave(n *memberlist.Node)  { e.setUp(n, false) }
func (e *events) NotifyUpdate(n *memberlist.Node) {}

func (e *events) setUp(n *memberlist.Node, up bool) {
	g := (*Gossip)(e)
	g.mu.Lock()
	changed := g.view.SetUp(ring.NodeID(n.Name), up)
	g.mu.Unlock()
	if changed {
		g.changed()
	}
}

// memberBroadcast is one entry in memberlist's broadcast queue; a newer entry of the same
// member replaces an older one still queued.
type memberBroadcast struct {
	id  ring.NodeID
	msg []byte
}

func (b memberBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(memberBroadcast)
	return ok && o.id == b.id
}
func (b memberBroadcast) Message() []byte { return b.msg }
func (b memberBroadcast) Finished()       {}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() || strings.EqualFold(host, "localhost")
}
