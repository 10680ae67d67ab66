package redis

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/ring"
)

// Token-aware routing (Target.Route = RouteToken, ?route=token): the client fetches the
// cluster's layout once (KURA.TOPOLOGY), computes each key's replica set with the ring's
// own placement code, and sends each operation to the node of one of the key's replicas,
// as Cassandra's token-aware drivers do. That node coordinates and serves its own copy
// locally, so the request costs one internode round trip fewer than through a node that
// holds no copy of the key. In a cluster where every node holds every key (three nodes,
// RF 3) it changes nothing; in a heterogeneous one (nine nodes, a key on three of them) a
// node picked by thread holds the key 1 time in 3.
//
// The replica chosen for a write is the one engine-aware routing writes first
// (coord.EngineAware): the write-optimized one, then the in-memory one, then the
// read-optimized one. For a read it is the in-memory replica, then the read-optimized
// one, then the write-optimized one: engine-aware routing reads from the first two, and
// of those the in-memory node is the better coordinator. Its own read never waits on a
// disk, and when the read-optimized replica lags (load-aware routing then reads the
// in-memory and write-optimized replicas) it serves one of the two reads itself, where a
// B+tree coordinator would send both away. A B+tree node also runs in a small memory (its
// cache is the page cache, which its file's writes contend for), so its own process can
// stall on the disk. Among replicas of one role (a homogeneous cluster), the first of
// the ring's walk. Replicas down when the layout was fetched are passed over; the
// layout is not refreshed during a run, and a request to a node that cannot be reached
// goes to the thread's own node instead.

// Routes a Target can take.
const (
	RouteNode  = "node"  // every operation of a thread goes to its node (the default)
	RouteToken = "token" // each operation goes to a replica of its key
)

// router maps keys to the client address of the replica to send them to. Immutable, so
// safe for concurrent use.
type router struct {
	ring        *ring.Ring
	read, write []string // per range of the ring (ring.RangeIndex): where reads and writes go
}

// The orders in which the router prefers replicas' roles (see above).
var (
	readRoles  = []ring.Role{ring.InMemory, ring.ReadOptimized, ring.WriteOptimized}
	writeRoles = []ring.Role{ring.WriteOptimized, ring.InMemory, ring.ReadOptimized}
)

// parseRole returns the role named as ring.Role.String names it; unknown names are
// RoleUnknown, which the router prefers last.
func parseRole(s string) ring.Role {
	for _, r := range []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory} {
		if r.String() == s {
			return r
		}
	}
	return ring.RoleUnknown
}

// newRouter builds a router from KURA.TOPOLOGY's reply.
func newRouter(b []byte) (*router, error) {
	var t admin.ClusterStatus // the admin CLI reads /cluster's JSON into the same type
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("redis: KURA.TOPOLOGY: %w", err)
	}
	if t.ReplicationFactor < 1 {
		return nil, fmt.Errorf("redis: KURA.TOPOLOGY: replication factor %d", t.ReplicationFactor)
	}
	strategy, err := ring.StrategyByName(t.Placement)
	if err != nil {
		return nil, fmt.Errorf("redis: KURA.TOPOLOGY: %w", err)
	}
	type member struct {
		role ring.Role
		addr string // "" when down: not routed to
	}
	members := map[ring.NodeID]member{}
	nodes := map[ring.NodeID]*ring.Node{}
	var order []ring.NodeID
	for _, m := range t.Members {
		id := ring.NodeID(m.ID)
		role := parseRole(m.Role)
		nodes[id] = &ring.Node{ID: id, Host: m.Host, Rack: m.Rack, Role: role}
		order = append(order, id)
		addr := m.ClientAddr
		if !m.Up {
			addr = ""
		}
		members[id] = member{role: role, addr: addr}
	}
	for _, tok := range t.Tokens {
		n := nodes[ring.NodeID(tok.ID)]
		if n == nil {
			return nil, fmt.Errorf("redis: KURA.TOPOLOGY: token %d of unknown member %q", tok.Token, tok.ID)
		}
		n.Tokens = append(n.Tokens, ring.Token(tok.Token))
	}
	list := make([]ring.Node, 0, len(order))
	for _, id := range order {
		list = append(list, *nodes[id])
	}
	r, err := ring.New(list)
	if err != nil {
		return nil, fmt.Errorf("redis: KURA.TOPOLOGY: %w", err)
	}
	rt := &router{ring: r, read: make([]string, r.RangeCount()), write: make([]string, r.RangeCount())}
	pick := func(ids []ring.NodeID, roles []ring.Role) string {
		best, bestRank := "", len(roles)+1
		for _, id := range ids {
			m := members[id]
			rank := slices.Index(roles, m.role)
			if rank < 0 {
				rank = len(roles)
			}
			if m.addr != "" && rank < bestRank {
				best, bestRank = m.addr, rank
			}
		}
		return best
	}
	for i := range r.RangeCount() {
		ids := strategy.Replicas(r, r.RangeEnd(i), t.ReplicationFactor)
		rt.read[i], rt.write[i] = pick(ids, readRoles), pick(ids, writeRoles)
	}
	return rt, nil
}

// errNoReplica is returned by addr when every replica of the key was down.
var errNoReplica = errors.New("redis: no live replica of the key in the cluster's layout")

// addr returns the client address of the replica to send an operation on key to.
func (r *router) addr(key string, write bool) (string, error) {
	i := r.ring.RangeIndex(ring.TokenOf([]byte(key)))
	a := r.read[i]
	if write {
		a = r.write[i]
	}
	if a == "" {
		return "", errNoReplica
	}
	return a, nil
}
