package node

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// ClusterStatus is a cluster node's view as `kura admin` shows it, served as JSON on the
// admin address at /cluster.
type ClusterStatus struct {
	Self              string         `json:"self"`
	ReplicationFactor int            `json:"replication_factor"`
	Placement         string         `json:"placement"`
	Routing           string         `json:"routing"`
	Members           []MemberStatus `json:"members"`
	Tokens            []TokenOwner   `json:"tokens"`
	Hints             []HintStatus   `json:"hints"`
}

// MemberStatus is one member in ClusterStatus.
type MemberStatus struct {
	ID        string `json:"id"`
	Host      string `json:"host"`
	Rack      string `json:"rack"`
	Engine    string `json:"engine"`
	Role      string `json:"role"`
	Status    string `json:"status"`
	Up        bool   `json:"up"`
	Refilling bool   `json:"refilling,omitempty"` // an in-memory node pulling its rows back: not read from
	// Behind: this node, or another live member as it announced, holds hints for it: its
	// copy lacks writes until they are replayed, and load-aware reads go around it.
	Behind     bool    `json:"behind,omitempty"`
	ClientAddr string  `json:"client_addr"`
	AdminAddr  string  `json:"admin_addr"`
	Tokens     int     `json:"tokens"`
	Load       int64   `json:"load"`      // bytes of data, as the member last announced
	Owns       float64 `json:"owns"`      // share of the token space it owns as primary
	OwnsRepl   float64 `json:"owns_repl"` // share of all replicated data it holds
}

// TokenOwner is one vnode token and its node.
type TokenOwner struct {
	Token int64  `json:"token"`
	ID    string `json:"id"`
}

// HintStatus is the hints this node holds for one replica.
type HintStatus struct {
	Replica string `json:"replica"`
	Hints   int64  `json:"hints"`
	Bytes   int64  `json:"bytes"`
	Dropped int64  `json:"dropped"`
}

// status builds the node's ClusterStatus.
func (c *clusterNode) status() ClusterStatus {
	st := c.state.Load()
	out := ClusterStatus{Self: string(c.self), ReplicationFactor: c.cfg.ReplicationFactor, Placement: c.cfg.Placement,
		Routing: c.cfg.Routing}
	var own, repl map[ring.NodeID]float64
	if st.ring != nil {
		own, repl = st.ring.Ownership(), ring.ReplicatedOwnership(st.ring, c.strategy, c.cfg.ReplicationFactor)
		for _, n := range st.ring.Nodes() {
			for _, t := range n.Tokens {
				out.Tokens = append(out.Tokens, TokenOwner{Token: int64(t), ID: string(n.ID)})
			}
		}
		slices.SortFunc(out.Tokens, func(a, b TokenOwner) int {
			switch {
			case a.Token < b.Token:
				return -1
			case a.Token > b.Token:
				return 1
			}
			return 0
		})
	}
	for _, m := range c.gossip.Members() {
		out.Members = append(out.Members, MemberStatus{ID: string(m.ID), Host: m.Host, Rack: m.Rack,
			Engine: m.Engine, Role: m.Role.String(), Status: string(m.Status), Up: m.Up || m.ID == c.self, Refilling: m.Refilling,
			Behind:     c.lagging(m.ID),
			ClientAddr: m.ClientAddr, AdminAddr: m.AdminAddr, Tokens: len(m.Tokens), Load: m.Load,
			Owns: own[m.ID], OwnsRepl: repl[m.ID]})
	}
	for target, s := range c.hints.Stats() {
		out.Hints = append(out.Hints, HintStatus{Replica: target, Hints: s.Hints, Bytes: s.Bytes, Dropped: s.Dropped})
	}
	slices.SortFunc(out.Hints, func(a, b HintStatus) int {
		if a.Replica < b.Replica {
			return -1
		}
		return 1
	})
	return out
}

// serveCluster answers /cluster on the admin address.
// serveRebuild starts a rebuild of this node's replica from its peers (POST).
func (n *Node) serveRebuild(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST to start a rebuild\n", http.StatusMethodNotAllowed)
		return
	}
	c := n.clusterP.Load()
	if c == nil {
		http.Error(w, "not in cluster mode (start with --gossip-listen)\n", http.StatusNotFound)
		return
	}
	if err := c.rebuild(); err != nil {
		http.Error(w, err.Error()+"\n", http.StatusConflict)
		return
	}
	w.Write([]byte("rebuilding: the node serves no reads until it has pulled its ranges from its peers\n"))
}

func (n *Node) serveCluster(w http.ResponseWriter, _ *http.Request) {
	c := n.clusterP.Load()
	if c == nil {
		http.Error(w, "not in cluster mode (start with --gossip-listen)\n", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.status())
}
