package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/node"
	"github.com/kuradb/kura/internal/ring"
)

// layout is a cluster for the router's tests: its ring, its topology as KURA.TOPOLOGY
// would send it, and each node's address and role.
type layout struct {
	ring  *ring.Ring
	json  []byte
	addr  map[ring.NodeID]string
	role  map[ring.NodeID]ring.Role
	nodes []ring.Node
}

// newLayout places hosts × roles nodes with random tokens from rng; down lists the
// nodes reported down.
func newLayout(t *testing.T, rng *rand.Rand, hosts int, roles []ring.Role, placement string, rf int, down ...ring.NodeID) layout {
	t.Helper()
	l := layout{addr: map[ring.NodeID]string{}, role: map[ring.NodeID]ring.Role{}}
	var top node.ClusterStatus
	top.ReplicationFactor, top.Placement = rf, placement
	for h := range hosts {
		for _, role := range roles {
			id := ring.NodeID(fmt.Sprintf("h%d-%s", h, role))
			n := ring.Node{ID: id, Host: fmt.Sprint("h", h), Role: role, Tokens: ring.RandomTokens(rng, 16, nil)}
			l.nodes = append(l.nodes, n)
			l.addr[id], l.role[id] = fmt.Sprintf("127.0.0.1:%d", 7000+len(l.nodes)), role
			up := true
			for _, d := range down {
				up = up && d != id
			}
			top.Members = append(top.Members, node.MemberStatus{ID: string(id), Host: n.Host, Role: role.String(), Up: up, ClientAddr: l.addr[id]})
			for _, tok := range n.Tokens {
				top.Tokens = append(top.Tokens, node.TokenOwner{Token: int64(tok), ID: string(id)})
			}
		}
	}
	var err error
	if l.ring, err = ring.New(l.nodes); err != nil {
		t.Fatal(err)
	}
	if l.json, err = json.Marshal(top); err != nil {
		t.Fatal(err)
	}
	return l
}

// The router sends a read to the key's in-memory replica and a write to its
// write-optimized one, as the ring's own placement places them; with the in-memory
// replica down, a read goes to the read-optimized one. In a homogeneous cluster both go
// to the first replica of the walk.
func TestRouterSendsEachKeyToTheReplicaOfItsRole(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	all := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	hetero := newLayout(t, rng, 3, all, "engine-diverse", 3)
	downMemory := ring.NodeID("h1-" + ring.InMemory.String())
	degraded := newLayout(t, rng, 3, all, "engine-diverse", 3, downMemory)
	homo := newLayout(t, rng, 3, []ring.Role{ring.WriteOptimized}, "host-aware", 3)
	for _, tc := range []struct {
		name        string
		l           layout
		read, write func(set []ring.NodeID) ring.NodeID
	}{
		{"heterogeneous", hetero, roleIn(hetero, ring.InMemory), roleIn(hetero, ring.WriteOptimized)},
		{"heterogeneous, an in-memory node down", degraded, func(set []ring.NodeID) ring.NodeID {
			if m := roleIn(degraded, ring.InMemory)(set); m != downMemory {
				return m
			}
			return roleIn(degraded, ring.ReadOptimized)(set)
		}, roleIn(degraded, ring.WriteOptimized)},
		{"homogeneous", homo, first, first},
	} {
		r, err := newRouter(tc.l.json)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			key := "user" + strconv.Itoa(i)
			set := ring.EngineDiverse{}.Replicas(tc.l.ring, ring.TokenOf([]byte(key)), 3)
			if tc.name == "homogeneous" {
				set = ring.HostAware{}.Replicas(tc.l.ring, ring.TokenOf([]byte(key)), 3)
			}
			for _, write := range []bool{false, true} {
				want := tc.l.addr[tc.read(set)]
				if write {
					want = tc.l.addr[tc.write(set)]
				}
				if got, err := r.addr(key, write); err != nil || got != want {
					t.Fatalf("%s: key %q (replicas %v), write %t: routed to %q, %v; want %q", tc.name, key, set, write, got, err, want)
				}
			}
		}
	}
}

// roleIn returns a function picking the replica of role from a replica set.
func roleIn(l layout, role ring.Role) func([]ring.NodeID) ring.NodeID {
	return func(set []ring.NodeID) ring.NodeID {
		for _, id := range set {
			if l.role[id] == role {
				return id
			}
		}
		return ""
	}
}

func first(set []ring.NodeID) ring.NodeID { return set[0] }

func TestRouterRejectsABadTopology(t *testing.T) {
	for _, b := range []string{`not json`, `{"replication_factor":0,"placement":"simple"}`,
		`{"replication_factor":1,"placement":"nearest"}`, `{"replication_factor":1,"placement":"simple"}`,
		`{"replication_factor":1,"placement":"simple","tokens":[{"token":1,"id":"ghost"}]}`} {
		if _, err := newRouter([]byte(b)); err == nil {
			t.Errorf("topology %s accepted", b)
		}
	}
}

// A real three-node cluster with one copy of each key: a token-routed workload sends
// every operation to the node that holds its key, so no node serves a single read or
// write from the network; routed by thread, most operations cross to another node.
func TestTokenRoutedWorkloadNeedsNoInternodeHop(t *testing.T) {
	var nodes []*node.Node
	for h := range 3 {
		c := config.Default()
		c.Engine, c.DataDir, c.Host = "memory", t.TempDir(), fmt.Sprint("h", h)
		c.Listen, c.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		c.GossipListen, c.InternodeListen = "127.0.0.1:0", "127.0.0.1:0"
		c.ReplicationFactor, c.Placement = 1, "simple"
		if h > 0 {
			c.Seeds = nodes[0].GossipAddr()
		}
		n, err := node.Start(c, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
		nodes = append(nodes, n)
	}
	addrs := ""
	for i, n := range nodes {
		if i > 0 {
			addrs += ","
		}
		addrs += n.Addr()
	}
	waitForMembers(t, nodes[0].AdminAddr(), 3)
	served := func() int {
		total := 0
		for _, n := range nodes {
			total += networkServed(t, n.AdminAddr())
		}
		return total
	}
	w, _ := bench.NamedWorkload("a")
	w.RecordCount = 300
	w.WriteAllFields = true
	for _, route := range []string{RouteToken, RouteNode} {
		target, err := ParseURL("resp://" + addrs + "?record=string&route=" + route)
		if err != nil {
			t.Fatal(err)
		}
		before := served()
		ctx := context.Background()
		load, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseLoad, Target: target, Threads: 3})
		if err != nil {
			t.Fatal(err)
		}
		run, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseRun, Target: target, Threads: 3, Operations: 600})
		if err != nil {
			t.Fatal(err)
		}
		read, _ := run.Op("READ")
		if load.Errors != 0 || run.Errors != 0 || read.NotFound != 0 {
			t.Fatalf("route=%s: load %d errors, run %d errors, %d reads not found", route, load.Errors, run.Errors, read.NotFound)
		}
		hops := served() - before
		t.Logf("route=%s: %d of %d operations served from the network", route, hops, load.Ops+run.Ops)
		if (route == RouteToken) != (hops == 0) {
			t.Fatalf("route=%s: %d operations served from the network", route, hops)
		}
	}
}

// waitForMembers waits until the node at admin sees want members up, with tokens.
func waitForMembers(t *testing.T, admin string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			Members []struct {
				Up     bool `json:"up"`
				Tokens int  `json:"tokens"`
			} `json:"members"`
		}
		if resp, err := http.Get("http://" + admin + "/cluster"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			ok := err == nil && len(st.Members) == want
			for _, m := range st.Members {
				ok = ok && m.Up && m.Tokens > 0
			}
			if ok {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the cluster did not reach %d members", want)
}

var servedCount = regexp.MustCompile(`(?m)^kura_replica_request_seconds_count\{method="(read|write)",role="[^"]*"\} (\d+)`)

// networkServed sums the reads and writes the node at admin served to other nodes'
// coordinators (kura_replica_request_seconds).
func networkServed(t *testing.T, admin string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range servedCount.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		total += n
	}
	return total
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A replica's node that cannot be reached: operations routed to it go to the thread's
// own node instead, without waiting between attempts to reach it.
func TestTokenRoutedOperationsFallBackToTheThreadsNode(t *testing.T) {
	live := startKura(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	layout := fmt.Sprintf(`{"replication_factor":1,"placement":"simple","members":[{"id":"n1","role":"in-memory","up":true,"client_addr":%q}],"tokens":[{"token":0,"id":"n1"}]}`, dead)
	r, err := newRouter([]byte(layout))
	if err != nil {
		t.Fatal(err)
	}
	target := &Target{Addrs: []string{live}, Route: RouteToken, Record: RecordString, router: r}
	ctx := context.Background()
	c, err := target.Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	for i := range 20 {
		key := "k" + strconv.Itoa(i)
		if err := c.Insert(ctx, key, []bench.Field{{Name: "f", Value: []byte("v")}}); err != nil {
			t.Fatalf("insert %s: %v", key, err)
		}
		if found, err := c.Read(ctx, key, nil); err != nil || !found {
			t.Fatalf("read %s: %v %v", key, found, err)
		}
	}
	if took := time.Since(start); took > 20*redialBackoff {
		t.Fatalf("40 operations took %v: they waited for the unreachable node", took)
	}
}
