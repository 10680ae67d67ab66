package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/bench"
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
	var top admin.ClusterStatus
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
			top.Members = append(top.Members, admin.MemberStatus{ID: string(id), Host: n.Host, Role: role.String(), Up: up, ClientAddr: l.addr[id]})
			for _, tok := range n.Tokens {
				top.Tokens = append(top.Tokens, admin.TokenOwner{Token: int64(tok), ID: string(id)})
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
