package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/machine"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// testCluster is three replicas (memory engines) served over the real transport, and a
// coordinator on n1 reaching n1 locally and the others through transport clients.
type testCluster struct {
	handlers map[ring.NodeID]*replica.Handler
	servers  map[ring.NodeID]*transport.Server
	clients  map[ring.NodeID]*transport.Client
	cfg      machine.Config
	roles    map[ring.NodeID]ring.Role
	mu       sync.Mutex
	down     map[ring.NodeID]bool
	hinted   []ring.NodeID
	store    *clusterStore
}

func (c *testCluster) Add(target string, _ row.Mutation, _ time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hinted = append(c.hinted, ring.NodeID(target))
	return nil
}

// holds reports whether a hint is stored for id (hint.Store.Holds).
func (c *testCluster) holds(id ring.NodeID) bool { return c.hintsFor(id) > 0 }

// hintsFor counts the hints stored for id.
func (c *testCluster) hintsFor(id ring.NodeID) int {
	n := 0
	for _, h := range c.hints() {
		if h == id {
			n++
		}
	}
	return n
}

func (c *testCluster) hints() []ring.NodeID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ring.NodeID(nil), c.hinted...)
}

var testIDs = []ring.NodeID{"n1", "n2", "n3"}

func newTestCluster(t *testing.T, level coord.Level) *testCluster {
	t.Helper()
	c := &testCluster{handlers: map[ring.NodeID]*replica.Handler{}, servers: map[ring.NodeID]*transport.Server{},
		clients: map[ring.NodeID]*transport.Client{}, down: map[ring.NodeID]bool{}, roles: map[ring.NodeID]ring.Role{}}
	for _, id := range testIDs {
		eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		c.handlers[id] = &replica.Handler{Engine: eng}
		srv, err := transport.NewServer(c.handlers[id], transport.ServerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		c.servers[id] = srv
		cl, err := transport.NewClient(ln.Addr().String(), transport.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		c.clients[id] = cl
		t.Cleanup(func() { cl.Close(); srv.Close() })
	}
	c.cfg = machine.Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: coord.Uniform{},
		Level: level, Timeout: 2 * time.Second, HintsHeld: c.holds}
	c.store = &clusterStore{
		peer: func(id ring.NodeID) (caller, error) {
			if id == "n1" {
				return localCaller{c.handlers[id]}, nil
			}
			return c.clients[id], nil
		},
		self: "n1", local: c.handlers["n1"], // n1 coordinates: its replica is called directly
		level: level, hints: c, log: slog.New(slog.DiscardHandler),
	}
	c.configure()
	return c
}

// configure gives the coordinator a machine configured by c.cfg, whose view has n1, n2
// and n3 with c.roles, up unless c.down; every key's replica set is all three.
func (c *testCluster) configure() {
	c.store.m = machine.New(c.cfg)
	c.view()
}

// view gives the machine the members as c.roles and c.down have them.
func (c *testCluster) view() {
	var members []cluster.Member
	var nodes []ring.Node
	for i, id := range testIDs {
		tokens := []ring.Token{ring.Token(int64(i-1) * 1000)}
		members = append(members, cluster.Member{ID: id, Host: "h" + string(id[1:]), Role: c.roles[id], Up: !c.down[id],
			Status: cluster.Normal, Tokens: tokens})
		nodes = append(nodes, ring.Node{ID: id, Host: "h" + string(id[1:]), Role: c.roles[id], Tokens: tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		panic(err)
	}
	c.store.m.SetView(members, r)
}

// setDown sets whether the coordinator believes id down.
func (c *testCluster) setDown(id ring.NodeID, down bool) {
	c.down[id] = down
	c.view()
}

// heteroTestCluster is newTestCluster with roles (n1 lsm, coordinating; n2 btree; n3
// memory) under policy, with replica wrapped answering through wrap.
func heteroTestCluster(t *testing.T, policy coord.Policy, wrapped ring.NodeID, wrap func(caller) caller) *testCluster {
	c := newTestCluster(t, coord.Quorum)
	c.roles = map[ring.NodeID]ring.Role{"n1": ring.WriteOptimized, "n2": ring.ReadOptimized, "n3": ring.InMemory}
	peer := c.store.peer
	c.store.peer = func(id ring.NodeID) (caller, error) {
		p, err := peer(id)
		if id == wrapped && err == nil {
			return wrap(p), nil
		}
		return p, err
	}
	c.cfg.Policy = policy
	c.configure()
	return c
}

func cell(v string, ts int64) row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte(v), Timestamp: ts}}}
}

// stored reads key straight from replica id's engine.
func (c *testCluster) stored(t *testing.T, id ring.NodeID, key string) string {
	t.Helper()
	b, err := c.handlers[id].Handle(context.Background(), wire.MethodRead, wire.AppendReadRequest(nil, &wire.ReadRequest{Key: []byte(key)}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := wire.DecodeReadResponse(b)
	if err != nil || !r.Found {
		return ""
	}
	return string(r.Row.Cells[0].Value)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
	}
}

func TestClusterStoreWritesAndReadsAtQuorum(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v1", 1)}}); err != nil {
		t.Fatal(err)
	}
	r, found, err := c.store.Get([]byte("k"))
	if err != nil || !found || string(r.Cells[0].Value) != "v1" {
		t.Fatalf("read back: %v %v %v", r, found, err)
	}
	for _, id := range []ring.NodeID{"n1", "n2", "n3"} {
		eventually(t, string(id)+" holds the write", func() bool { return c.stored(t, id, "k") == "v1" })
	}
}

func TestClusterStoreHintsDownAndFailedReplicas(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	c.setDown("n2", true)
	if err := c.store.Apply([]row.Mutation{{Key: []byte("a"), Row: cell("x", 1)}}); err != nil {
		t.Fatal(err)
	}
	if h := c.hints(); len(h) != 1 || h[0] != "n2" {
		t.Fatalf("hints %v, want one for the down replica n2", h)
	}
	// n3 is believed up but its server is gone: QUORUM still succeeds with n1 and n2
	// (n2 is back up), and n3 gets a hint once its failure is known.
	c.setDown("n2", false)
	c.servers["n3"].Close()
	if err := c.store.Apply([]row.Mutation{{Key: []byte("b"), Row: cell("y", 2)}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n3 is hinted", func() bool {
		h := c.hints()
		return len(h) == 2 && h[1] == "n3"
	})
	if err := c.store.ApplyAt("ALL", []row.Mutation{{Key: []byte("c"), Row: cell("z", 3)}}); !errors.Is(err, coord.ErrTimeout) {
		t.Fatalf("ALL with a dead replica: %v, want a timeout", err)
	}
	c.setDown("n2", true)
	c.setDown("n3", true)
	if err := c.store.Apply([]row.Mutation{{Key: []byte("d"), Row: cell("w", 4)}}); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("QUORUM with one live replica: %v, want unavailable", err)
	}
}

func TestClusterStoreReadRepairsAStaleReplica(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	put := func(id ring.NodeID, v string, ts int64) {
		p := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{{Key: []byte("k"), Row: cell(v, ts)}}})
		if _, err := c.handlers[id].Handle(context.Background(), wire.MethodWrite, p); err != nil {
			t.Fatal(err)
		}
	}
	put("n1", "old", 1)
	put("n2", "new", 2)
	put("n3", "new", 2)
	r, _, err := c.store.Get([]byte("k"))
	if err != nil || string(r.Cells[0].Value) != "new" {
		t.Fatalf("read: %v %v, want the newest cell", r, err)
	}
	eventually(t, "n1 is repaired", func() bool { return c.stored(t, "n1", "k") == "new" })
}

// With blocking read repair the reply waits for the repair, the coordinator's own replica
// included: right after the read, n1 holds the newest row.
func TestClusterStoreBlockingReadRepairIsDoneBeforeTheReply(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	c.cfg.Repair = coord.RepairBlocking
	c.configure()
	for id, v := range map[ring.NodeID]string{"n1": "old", "n2": "new", "n3": "new"} {
		ts := int64(2)
		if v == "old" {
			ts = 1
		}
		p := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{{Key: []byte("k"), Row: cell(v, ts)}}})
		if _, err := c.handlers[id].Handle(context.Background(), wire.MethodWrite, p); err != nil {
			t.Fatal(err)
		}
	}
	r, _, err := c.store.Get([]byte("k"))
	if err != nil || string(r.Cells[0].Value) != "new" {
		t.Fatalf("read: %v %v, want the newest cell", r, err)
	}
	if got := c.stored(t, "n1", "k"); got != "new" {
		t.Fatalf("n1 holds %q right after a blocking read repair", got)
	}
}

// hangingCaller never answers a request until release is closed or the request's
// context ends: a replica that is slow, not failed.
type hangingCaller struct{ release chan struct{} }

func (h hangingCaller) Call(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
	select {
	case <-h.release:
		return nil, errors.New("released")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h hangingCaller) Go(ctx context.Context, m uint16, p []byte, done func([]byte, error)) {
	go func() { done(h.Call(ctx, m, p)) }()
}

// Engine-aware writes count the write-optimized and in-memory replicas. When the in-memory
// one hangs, the driver's timer fires at --write-fallback-after and the write counts the
// read-optimized replica's acknowledgement, instead of waiting out the request timeout.
// (What the machine decides is tested in virtual time in package machine; this is its
// driver's timer.)
func TestEngineAwareWriteFallsBackWhenASynchronousReplicaIsSlow(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c := heteroTestCluster(t, coord.EngineAware{}, "n3", func(caller) caller { return hangingCaller{release} })
	c.cfg.WriteSlowAfter, c.cfg.Timeout = 20*time.Millisecond, 10*time.Second
	c.configure()
	start := time.Now()
	err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}})
	took := time.Since(start)
	if err != nil || took >= c.cfg.Timeout {
		t.Fatalf("fallback after %v: %v after %v; want OK before the %v request timeout", c.cfg.WriteSlowAfter, err, took, c.cfg.Timeout)
	}
	if c.stored(t, "n1", "k") != "v" || c.stored(t, "n2", "k") != "v" {
		t.Fatal("the write acknowledged after the fallback is not on n1 and n2")
	}
}

// stallingEngine is an engine whose Apply blocks until release is closed.
type stallingEngine struct {
	engine.Engine
	release chan struct{}
}

func (e stallingEngine) Apply(b []row.Mutation) error {
	<-e.release
	return e.Engine.Apply(b)
}

// The coordinator's own replica stalls on a write (a B+tree commit held up by a slow
// disk, an LSM write stall): the write still answers by its deadline, from the other
// replicas, instead of hanging the client for as long as the engine does.
func TestAWriteAnswersWhileTheLocalReplicaStalls(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	release := make(chan struct{})
	defer close(release)
	c.store.local = &replica.Handler{Engine: stallingEngine{c.handlers["n1"].Engine, release}}
	c.cfg.Timeout = 300 * time.Millisecond
	c.configure()
	// apply writes key, failing the test rather than hanging if the write does not answer.
	apply := func(key string) (time.Duration, error) {
		start, done := time.Now(), make(chan error, 1)
		go func() { done <- c.store.Apply([]row.Mutation{{Key: []byte(key), Row: cell("v", 1)}}) }()
		select {
		case err := <-done:
			return time.Since(start), err
		case <-time.After(5 * time.Second):
			t.Fatalf("the write of %s hung while the local replica stalled", key)
			return 0, nil
		}
	}
	if took, err := apply("k"); err != nil || took > 250*time.Millisecond {
		t.Fatalf("QUORUM write with the local replica stalled: %v after %v; want OK from the two others", err, took)
	}
	c.store.level = coord.All
	if took, err := apply("k2"); !errors.Is(err, coord.ErrTimeout) || took > 2*c.cfg.Timeout {
		t.Fatalf("ALL write with the local replica stalled: %v after %v; want TIMEOUT at the %v deadline", err, took, c.cfg.Timeout)
	}
}
