// Package cluster is every node's view of the cluster's members: who they are (ID, host,
// rack, engine role, addresses), their vnode tokens and their status (joining, normal,
// leaving, removed), merged from what gossip brings, plus the local failure detector's
// opinion of whether each is up.
//
// It is pure. Each member owns its own entry and bumps its Version whenever it changes
// it; a view keeps, per member, the entry with the highest version, so entries spread by
// gossip (package membership) converge on every node whatever order they arrive in. The
// view is saved to disk by the node so that a restarted node knows the ring before it
// hears from anyone.
package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// Status is a member's place in its life cycle, set by the member itself.
type Status string

// Member statuses. Only normal and leaving members own tokens on the ring; a joining
// member is streaming its ranges; a removed member stays listed so that its removal wins
// over older gossip about it.
const (
	Joining Status = "joining"
	Normal  Status = "normal"
	Leaving Status = "leaving"
	Removed Status = "removed"
)

// Member is one node's entry.
type Member struct {
	ID         ring.NodeID `json:"id"`
	Host       string      `json:"host"`
	Rack       string      `json:"rack"`
	Engine     string      `json:"engine"`
	Role       ring.Role   `json:"role"`
	ClientAddr string      `json:"client_addr"`
	// ClientTLSAddr is the member's RESP TLS address (--tls-port), or "" without one.
	ClientTLSAddr string       `json:"client_tls_addr,omitempty"`
	InternodeAddr string       `json:"internode_addr"`
	GossipAddr    string       `json:"gossip_addr"`
	AdminAddr     string       `json:"admin_addr"`
	Tokens        []ring.Token `json:"tokens"`
	Status        Status       `json:"status"`
	// Load is the bytes of data the member holds (on disk; in memory for an in-memory
	// engine), as it last announced; members announce it every few seconds when it moved.
	Load int64 `json:"load"`
	// Refilling is set by an in-memory member that restarted and is pulling its rows back
	// from its peers: it takes writes but must not be read from until it clears it.
	Refilling bool `json:"refilling,omitempty"`
	// Refilled is when the member's last completed refill (a rebuild, or an in-memory
	// member's restart) or full repair (`kura admin repair` of every range it replicates,
	// or of the whole cluster, without a failure) started: it holds every write
	// acknowledged before then, so hints for it created earlier are redundant and its
	// coordinators discard them, and clear its repair marks from before then.
	Refilled time.Time `json:"refilled,omitzero"`
	// Behind lists the members this member holds hints for (writes they have not had), as
	// it last announced, at most a second late: they lag for some keys until the hints are
	// replayed, and load-aware coordinators read around them.
	Behind []ring.NodeID `json:"behind,omitempty"`
	// Epoch is the cluster metadata's epoch the member has applied (--ring-source=log):
	// a node that sees a member ahead pulls the metadata.
	Epoch uint64 `json:"epoch,omitempty"`
	// Staged is a joiner started with --join=staged: it waits for kura admin commit.
	Staged bool `json:"staged,omitempty"`
	// Replaces is the dead node whose tokens this joiner takes (--replace).
	Replaces ring.NodeID `json:"replaces,omitempty"`
	// MetaVersion is the highest metadata entry version the member's build reads
	// (meta.EntryVersion); 0 from a build before it was announced, which reads version 1.
	// The planner writes entries others cannot read only once every member reads them.
	MetaVersion int `json:"meta_version,omitempty"`
	// Free is the bytes free on the device of the member's data directory, as it last
	// announced (0: not announced); a change never plans to send a member more.
	Free    int64  `json:"free,omitempty"`
	Version uint64 `json:"version"`
	// Up is this node's failure detector's opinion; it is not gossiped or saved.
	Up bool `json:"-"`
}

// View is one node's view of the cluster. Not safe for concurrent use.
type View struct {
	members map[ring.NodeID]*Member
	up      map[ring.NodeID]bool // the failure detector's opinions, also of members not yet heard of
}

// NewView returns an empty view.
func NewView() *View {
	return &View{members: map[ring.NodeID]*Member{}, up: map[ring.NodeID]bool{}}
}

// Merge takes an entry heard about (or the local node's own). It keeps it if it is newer
// than what the view has, and reports whether the view changed. The member's Up opinion
// is kept from the view, not taken from m.
func (v *View) Merge(m Member) bool {
	if m.ID == "" {
		return false
	}
	old, ok := v.members[m.ID]
	if ok && old.Version >= m.Version {
		return false
	}
	m.Tokens = slices.Clone(m.Tokens)
	m.Up = false // kept in v.up
	v.members[m.ID] = &m
	return true
}

// SetUp records the failure detector's opinion of id, which may come before id's entry
// does, and reports whether it changed.
func (v *View) SetUp(id ring.NodeID, up bool) bool {
	if v.up[id] == up {
		return false
	}
	v.up[id] = up
	return true
}

// Member returns id's entry.
func (v *View) Member(id ring.NodeID) (Member, bool) {
	m, ok := v.members[id]
	if !ok {
		return Member{}, false
	}
	out := *m
	out.Up = v.up[id]
	return out, true
}

// Members returns every entry, sorted by ID.
func (v *View) Members() []Member {
	out := make([]Member, 0, len(v.members))
	for id, m := range v.members {
		c := *m
		c.Up = v.up[id]
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// Ring builds the token ring from the members that own tokens: normal and leaving ones.
// Two nodes that joined at once may have picked the same token; the member with the lower
// ID keeps it, the same way on every node, and the other's token moves to the next free
// one after it: it then owns a range of one token there, but stays on the ring, and is
// the next replica of the range it lost (a member whose every token was claimed would
// otherwise be in no replica set at all, though its status says normal).
func (v *View) Ring() (*ring.Ring, error) {
	var nodes []ring.Node
	claimed := map[ring.Token]bool{}
	for _, m := range v.Members() {
		if m.Status != Normal && m.Status != Leaving {
			continue
		}
		var tokens []ring.Token
		for _, t := range m.Tokens {
			for claimed[t] {
				t++
			}
			claimed[t] = true
			tokens = append(tokens, t)
		}
		nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Tokens: tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return r, nil
}

// Marshal encodes the view's entries (without Up opinions) for saving or for gossip's
// full-state exchange.
func (v *View) Marshal() []byte {
	b, err := json.Marshal(v.Members())
	if err != nil {
		panic(err) // plain structs
	}
	return b
}

// MergeEncoded merges entries encoded by Marshal and reports whether the view changed.
func (v *View) MergeEncoded(b []byte) (bool, error) {
	var ms []Member
	if err := json.Unmarshal(b, &ms); err != nil {
		return false, fmt.Errorf("cluster: malformed view: %w", err)
	}
	changed := false
	for _, m := range ms {
		changed = v.Merge(m) || changed
	}
	return changed, nil
}
