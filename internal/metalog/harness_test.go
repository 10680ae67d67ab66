package metalog

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// The tests run real Raft over real TCP on 127.0.0.1, with each node's internode listener
// split by a listener.Mux between the Raft transport and a transport.Server whose handler
// routes MethodMeta to the Log, as a node wires them. Raft's timeouts are short so that
// elections and voter changes take a fraction of a second.

// testLogger is quiet unless KURA_TEST_LOG is set (then everything goes to stderr).
func testLogger() *slog.Logger {
	if os.Getenv("KURA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// eventually is how long a test waits for the cluster to converge; far more than it needs.
const eventually = 15 * time.Second

// caller is Config.Call over transport clients, one per address, shared by a test's nodes.
type caller struct {
	mu      sync.Mutex
	clients map[string]*transport.Client
}

func (c *caller) call(ctx context.Context, addr string, method uint16, p []byte) ([]byte, error) {
	c.mu.Lock()
	cl, ok := c.clients[addr]
	if !ok {
		var err error
		cl, err = transport.NewClient(addr, transport.ClientConfig{DialTimeout: 500 * time.Millisecond,
			BackoffBase: time.Millisecond, BackoffMax: 20 * time.Millisecond})
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.clients[addr] = cl
	}
	c.mu.Unlock()
	return cl.Call(ctx, method, p)
}

func (c *caller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
}

// node is one running Log with its listener, Mux and transport server.
type node struct {
	id   ring.NodeID
	dir  string
	addr string
	mux  *listener.Mux
	srv  *transport.Server
	log  *Log

	stopped bool
	mu      sync.Mutex
	states  []*meta.State // every state OnState received, in order
}

type cluster struct {
	t     *testing.T
	base  string // the nodes' directories are in it
	calls *caller
	nodes map[ring.NodeID]*node
	first ring.NodeID // the node that bootstrapped the log
}

func newCluster(t *testing.T, ids ...ring.NodeID) *cluster {
	t.Helper()
	// The directory's cleanup is registered first, so that it runs after the nodes stop.
	c := &cluster{t: t, base: t.TempDir(), calls: &caller{clients: map[string]*transport.Client{}}, nodes: map[ring.NodeID]*node{}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop()
		}
		c.calls.close()
	})
	for _, id := range ids {
		c.start(id, "127.0.0.1:0", filepath.Join(c.base, string(id)))
	}
	return c
}

func testConfig() Config {
	return Config{HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 10 * time.Millisecond,
		IOTimeout: 2 * time.Second, CallTimeout: time.Second, PullInterval: 100 * time.Millisecond,
		VoterInterval: 500 * time.Millisecond, Logger: testLogger()}
}

// start opens node id's Log in dir, listening on addr.
func (c *cluster) start(id ring.NodeID, addr, dir string) *node {
	c.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &node{id: id, dir: dir, addr: ln.Addr().String(), mux: listener.NewMux(ln)}
	var lg atomic.Pointer[Log]
	n.srv, err = transport.NewServer(transport.HandlerFunc(func(ctx context.Context, method uint16, p []byte) ([]byte, error) {
		if l := lg.Load(); l != nil && method == wire.MethodMeta {
			return l.Handle(ctx, p)
		}
		return nil, fmt.Errorf("test: no handler for method %d", method)
	}), transport.ServerConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.t.Fatal(err)
	}
	go n.srv.Serve(n.mux.Default())
	cfg := testConfig()
	cfg.ID, cfg.Addr, cfg.Listener, cfg.Call = id, n.addr, n.mux.Raft(), c.calls.call
	cfg.OnState = func(st *meta.State) {
		n.mu.Lock()
		n.states = append(n.states, st)
		n.mu.Unlock()
	}
	n.log, err = Open(dir, cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	lg.Store(n.log)
	c.nodes[id] = n
	return n
}

// stop closes the node's Log, server and listener; its directory stays, and so does
// the closed Log, whose State still answers.
func (n *node) stop() {
	if n.stopped {
		return
	}
	n.stopped = true
	n.log.Close()
	n.srv.Close()
	n.mux.Close()
}

// restart starts a stopped node again, on the same address and directory.
func (c *cluster) restart(id ring.NodeID) *node {
	c.t.Helper()
	old := c.nodes[id]
	return c.start(id, old.addr, old.dir)
}

func (c *cluster) node(id ring.NodeID) *node { return c.nodes[id] }

// member is a member of the first ring: its own rack and host, a few tokens spread by i.
func member(id ring.NodeID, i int) meta.Member {
	base := ring.Token(int64(i) * 1_000_000_007)
	return meta.Member{ID: id, Host: "h-" + string(id), Rack: "r-" + string(id),
		Tokens: []ring.Token{base, base + 1<<40, base - 1<<50}}
}

func (c *cluster) bootstrap(on ring.NodeID, members ...ring.NodeID) *meta.State {
	c.t.Helper()
	b := meta.Bootstrap{Strategy: "simple", RF: 1}
	for i, id := range members {
		m := member(id, i)
		m.Addr = c.nodes[id].addr
		b.Members = append(b.Members, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	c.first = on
	st, err := c.nodes[on].log.Bootstrap(ctx, b)
	if err != nil {
		c.t.Fatalf("bootstrap on %s: %v", on, err)
	}
	return st
}

// register proposes id's registration through node on, which first learns the cluster
// from the node that bootstrapped it (a node learns whom to ask from gossip) if it knows
// no voter yet.
func (c *cluster) register(on, id ring.NodeID) *meta.State {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	if l := c.nodes[on].log; len(l.Voters()) == 0 && l.Status().Leader == "" {
		if err := l.Pull(ctx, c.nodes[c.first].addr); err != nil {
			c.t.Fatalf("%s pulls from %s: %v", on, c.first, err)
		}
	}
	st, err := c.nodes[on].log.Propose(ctx, register(id, c.addrOf(id)))
	if err != nil {
		c.t.Fatalf("register %s through %s: %v", id, on, err)
	}
	return st
}

func (c *cluster) addrOf(id ring.NodeID) string {
	if n, ok := c.nodes[id]; ok {
		return n.addr
	}
	return "127.0.0.1:1" // a node the test never starts
}

func register(id ring.NodeID, addr string) meta.Register {
	return meta.Register{ID: id, Host: "h-" + string(id), Rack: "r-" + string(id), Addr: addr}
}

// waitFor polls cond until it holds or eventually passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, eventually)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leader returns the running node Raft calls leader, or nil.
func (c *cluster) leader() *node {
	for _, n := range c.nodes {
		if !n.stopped && n.log.Status().RaftState == "Leader" {
			return n
		}
	}
	return nil
}

// configuration returns the leader's Raft voters.
func (c *cluster) configuration() []ring.NodeID {
	l := c.leader()
	if l == nil {
		return nil
	}
	return l.log.Status().Configuration
}

func hasMember(st *meta.State, id ring.NodeID, state meta.MemberState) bool {
	m, ok := st.Member(id)
	return ok && m.State == state
}

// voterHistory returns the distinct voter sets the node's OnState saw, in order.
func (n *node) voterHistory() [][]ring.NodeID {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out [][]ring.NodeID
	for _, st := range n.states {
		if len(out) == 0 || !slices.Equal(out[len(out)-1], st.Voters) {
			out = append(out, slices.Clone(st.Voters))
		}
	}
	return out
}

func ids(s ...string) []ring.NodeID {
	out := make([]ring.NodeID, len(s))
	for i, v := range s {
		out[i] = ring.NodeID(v)
	}
	return out
}

// setVotersInLog returns the voter sets of the SetVoters entries in the node's Raft log,
// in log order.
func (n *node) setVotersInLog(t *testing.T) [][]ring.NodeID {
	t.Helper()
	first, err := n.log.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := n.log.store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]ring.NodeID
	for i := first; i <= last && i > 0; i++ {
		var e raft.Log
		if err := n.log.store.GetLog(i, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != raft.LogCommand {
			continue
		}
		entry, err := meta.Decode(e.Data)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if sv, ok := entry.(meta.SetVoters); ok {
			out = append(out, sv.Voters)
		}
	}
	return out
}
