package admin

import (
	"cmp"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/ring"
)

// ClusterStatus is a cluster node's view as `kura admin` shows it, served as JSON on the
// admin address at /cluster.
type ClusterStatus struct {
	Self              string `json:"self"`
	ReplicationFactor int    `json:"replication_factor"`
	Placement         string `json:"placement"`
	Routing           string `json:"routing"`
	// MaxClockOffsetUS is the node's max_clock_offset in microseconds (0: no limit);
	// ClockOutOfSync says its own clock is further off than that from most of its live
	// peers', so it refuses the writes it would timestamp (docs/design/clocks.md).
	MaxClockOffsetUS int64          `json:"max_clock_offset_us"`
	ClockOutOfSync   bool           `json:"clock_out_of_sync,omitempty"`
	Members          []MemberStatus `json:"members"`
	Tokens           []TokenOwner   `json:"tokens"`
	Hints            []HintStatus   `json:"hints"`
	// Repairs are the replicas that lost writes this node's hints could not deliver
	// (hint.Store.Marked), with the spans of the ring they lost them in.
	Repairs []RepairStatus `json:"repairs,omitempty"`
	// Repair is this node's anti-entropy repair (`kura admin repair`): the one running,
	// or the last one; nil when none has run since the node started.
	Repair *RepairProgress `json:"repair,omitempty"`
	// Topology is the cluster metadata, for a node that follows the metadata log.
	Topology *TopologyStatus `json:"topology,omitempty"`
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
	Behind     bool   `json:"behind,omitempty"`
	ClientAddr string `json:"client_addr"`
	// ClientTLSAddr is the member's RESP TLS address, "" without one.
	ClientTLSAddr string `json:"client_tls_addr,omitempty"`
	// MetaVersion is the newest metadata entry version the member's build reads, as it
	// gossips it (0: a build from before it was announced).
	MetaVersion int     `json:"meta_version,omitempty"`
	AdminAddr   string  `json:"admin_addr"`
	Tokens      int     `json:"tokens"`
	Load        int64   `json:"load"`      // bytes of data, as the member last announced
	Owns        float64 `json:"owns"`      // share of the token space it owns as primary
	OwnsRepl    float64 `json:"owns_repl"` // share of all replicated data it holds
	// ClockOffsetUS is the member's physical clock minus this node's, in microseconds, as
	// estimated from the stamps of its internode responses; nil for this node itself and
	// for a member this node has no estimate of (none yet, or one that predates them).
	ClockOffsetUS *int64 `json:"clock_offset_us,omitempty"`
	// ClockSkewed: the member's clock is further off than MaxClockOffsetUS from this
	// node's; for this node itself, that it is out of sync (ClockOutOfSync).
	ClockSkewed bool `json:"clock_skewed,omitempty"`
}

// Clocks is what a node knows of clocks (docs/design/clocks.md): its max_clock_offset
// (0: no limit), whether its own clock is out of sync with its peers' (it then refuses
// writes), and its estimate of each live peer's clock offset (theirs minus its own).
type Clocks struct {
	MaxOffset time.Duration
	OutOfSync bool
	Offsets   map[ring.NodeID]time.Duration
}

// Skewed reports whether offset o is further off than the maximum.
func (c Clocks) Skewed(o time.Duration) bool {
	return c.MaxOffset > 0 && (o > c.MaxOffset || o < -c.MaxOffset)
}

// FormatOffset writes a clock offset with its sign, to the millisecond above one (the
// estimate's own precision on a LAN), to the microsecond below.
func FormatOffset(o time.Duration) string {
	sign := "+"
	if o < 0 {
		sign, o = "-", -o
	}
	if o >= time.Millisecond {
		o = o.Round(time.Millisecond)
	}
	return sign + o.String()
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

// RepairStatus is one replica's repair marks as this node holds them: it lost writes in
// Spans (dropped hints), which a rebuild of it, or a repair of the spans, brings back.
type RepairStatus struct {
	Replica string `json:"replica"`
	// Share is the share of the ring the spans cover.
	Share float64     `json:"share"`
	Spans []TokenSpan `json:"spans"`
}

// TokenSpan is the ring range (Start, End] of tokens.
type TokenSpan struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// View is what a cluster node's status is built from.
type View struct {
	Self              ring.NodeID
	ReplicationFactor int
	Placement         string
	Routing           string
	Strategy          ring.Strategy
	Ring              *ring.Ring // nil while no member owns tokens
	Members           []cluster.Member
	// Lagging reports whether some member holds hints for a member (MemberStatus.Behind).
	Lagging func(ring.NodeID) bool
	Hints   map[string]hint.Stats // the hints this node holds, by replica
	// Marks are the repair marks this node holds, by replica (hint.Store.Marked).
	Marks  map[string][]hint.TokenSpan
	Clocks Clocks
}

// Status builds the node's ClusterStatus from v.
func Status(v View) ClusterStatus {
	out := ClusterStatus{Self: string(v.Self), ReplicationFactor: v.ReplicationFactor, Placement: v.Placement,
		Routing: v.Routing, MaxClockOffsetUS: v.Clocks.MaxOffset.Microseconds(), ClockOutOfSync: v.Clocks.OutOfSync}
	var own, repl map[ring.NodeID]float64
	if v.Ring != nil {
		own, repl = v.Ring.Ownership(), ring.ReplicatedOwnership(v.Ring, v.Strategy, v.ReplicationFactor)
		for _, n := range v.Ring.Nodes() {
			for _, t := range n.Tokens {
				out.Tokens = append(out.Tokens, TokenOwner{Token: int64(t), ID: string(n.ID)})
			}
		}
		slices.SortFunc(out.Tokens, func(a, b TokenOwner) int { return cmp.Compare(a.Token, b.Token) })
	}
	for _, m := range v.Members {
		ms := MemberStatus{ID: string(m.ID), Host: m.Host, Rack: m.Rack,
			Engine: m.Engine, Role: m.Role.String(), Status: string(m.Status), Up: m.Up || m.ID == v.Self, Refilling: m.Refilling,
			Behind:     v.Lagging(m.ID),
			ClientAddr: m.ClientAddr, ClientTLSAddr: m.ClientTLSAddr, MetaVersion: m.MetaVersion, AdminAddr: m.AdminAddr, Tokens: len(m.Tokens), Load: m.Load,
			Owns: own[m.ID], OwnsRepl: repl[m.ID]}
		if o, ok := v.Clocks.Offsets[m.ID]; ok && m.ID != v.Self {
			us := o.Microseconds()
			ms.ClockOffsetUS, ms.ClockSkewed = &us, v.Clocks.Skewed(o)
		}
		if m.ID == v.Self {
			ms.ClockSkewed = v.Clocks.OutOfSync
		}
		out.Members = append(out.Members, ms)
	}
	for target, s := range v.Hints {
		out.Hints = append(out.Hints, HintStatus{Replica: target, Hints: s.Hints, Bytes: s.Bytes, Dropped: s.Dropped})
	}
	slices.SortFunc(out.Hints, func(a, b HintStatus) int { return cmp.Compare(a.Replica, b.Replica) })
	for target, spans := range v.Marks {
		if len(spans) == 0 {
			continue
		}
		rs := RepairStatus{Replica: target, Share: hint.RingShare(spans)}
		for _, sp := range spans {
			rs.Spans = append(rs.Spans, TokenSpan{Start: int64(sp.Start), End: int64(sp.End)})
		}
		out.Repairs = append(out.Repairs, rs)
	}
	slices.SortFunc(out.Repairs, func(a, b RepairStatus) int { return cmp.Compare(a.Replica, b.Replica) })
	return out
}
