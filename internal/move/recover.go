package move

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// Hardware is a node as re-replication sees it: where it is, its engine's role, how much it
// can still store and how fast its disk and NIC move bytes. A copy reads the source's disk
// and crosses its NIC's send side, and crosses the destination's NIC receive side and
// writes its disk: a node sends at most min(DiskReadBps, NICSendBps) and receives at most
// min(DiskWriteBps, NICRecvBps). Reads and writes are separate limits (a disk's read and
// write sides, as internal/flowsim models them), not one shared budget.
type Hardware struct {
	ID         ring.NodeID
	Host, Rack string
	Role       ring.Role
	// FreeBytes is what the node can still store: it receives no copy that does not fit in
	// what is left.
	FreeBytes int64
	// Bandwidths in bytes per second; each must be positive.
	DiskReadBps, DiskWriteBps float64
	NICSendBps, NICRecvBps    float64
}

// Uplink is a rack's link to the other racks: copies leaving the rack share UpBps, copies
// entering it share DownBps (a full-duplex link). Zero, or a rack without an Uplink, is not
// a limit. Copies within a rack cross neither.
type Uplink struct {
	Rack           string
	UpBps, DownBps float64
}

// Fabric is the hardware a recovery runs on: every node of the ring after the change (down
// ones too: they are peers, never sources or destinations) and the racks' uplinks.
type Fabric struct {
	Nodes   []Hardware
	Uplinks []Uplink
}

// Rules are the placement rules a new replica keeps with the replicas of its range that
// stay (its peers) and the other new ones: never on the host of another; with RackAware,
// on a rack none of them is on while they cover fewer racks than min(RF, racks with live
// nodes); with EngineDiverse, of a role none of them has while they cover fewer roles than
// min(RF, roles of live nodes). Where no live node with room keeps a rack or role rule, the
// rule is dropped for that copy (as the ring's strategies fill up a replica set with what
// is left) and Copy.Relaxed says so.
type Rules struct {
	RF            int
	RackAware     bool
	EngineDiverse bool
}

// RulesFor returns the rules that keep what strategy s places.
func RulesFor(s ring.Strategy, rf int) Rules {
	switch s.(type) {
	case ring.RackAware, *ring.RackAware:
		return Rules{RF: rf, RackAware: true}
	case ring.EngineDiverse, *ring.EngineDiverse:
		return Rules{RF: rf, EngineDiverse: true}
	}
	return Rules{RF: rf}
}

// Need is a range short of replicas: Missing new ones to place, next to Peers, the
// replicas that stay (live or not, as the ring orders them).
type Need struct {
	Range   Range
	Bytes   int64
	Peers   []ring.NodeID
	Missing int
	// Source, when set, is the only peer the copies may come from (one of a merge's
	// copies: see RecoveryOptions.FromEveryPeer); it must be live, or the need is Short.
	Source ring.NodeID
	// To, when set, are the only destinations (a ring that already chose them: see
	// RecoveryOfPlan); the placement rules are not asked, and Copy.Relaxed says whether the
	// destination keeps the strict ones.
	To []ring.NodeID
}

// Copy is one new replica to make: the range's bytes from one of Sources (its live peers)
// to one of Candidates.
type Copy struct {
	Range Range
	Bytes int64
	Peers []ring.NodeID
	// Sources are the live peers, in Peers' order.
	Sources []ring.NodeID
	// Group numbers the copies of one range (a range missing two replicas has two copies,
	// whose destinations must keep the rules with each other too).
	Group int
	// Relaxed says that no live node with room keeps the rack or role rule, which was
	// dropped for this copy.
	Relaxed bool
}

// Recovery is a re-replication problem: the copies that restore the replication factor,
// and the fabric that carries them. Build it with NewRecovery or RecoveryFromChange; it
// is read-only afterwards and safe for concurrent use.
type Recovery struct {
	Fabric Fabric
	Rules  Rules
	Down   map[ring.NodeID]bool
	Copies []Copy
	// Short are the replicas no copy can make now: no live peer to read from, or no live
	// node with room that may take them (Missing counts those left out).
	Short []Need

	index           map[ring.NodeID]int
	host, rack      []int // node index to host and rack numbers
	role            []ring.Role
	racks           []string
	sendBps         []float64 // per node: min(disk read, NIC send)
	recvBps         []float64 // per node: min(disk write, NIC receive)
	upBps, downBps  []float64 // per rack; 0 is no limit
	live            []bool
	wantRacks       int // min(RF, racks with live nodes)
	wantRoles       int
	sources, peers  [][]int   // per copy
	candidates      [][]int32 // per copy: destinations the rules and the copy's size allow
	liveNodesByRack [][]int
}

// ErrInvalidRecovery is wrapped by the errors of NewRecovery and RecoveryFromChange.
var ErrInvalidRecovery = errors.New("move: invalid recovery")

// NewRecovery returns the problem of placing needs on f under rules; down lists the nodes
// that are not live.
func NewRecovery(f Fabric, rules Rules, down map[ring.NodeID]bool, needs []Need) (*Recovery, error) {
	r := &Recovery{Fabric: f, Rules: rules, Down: down, index: map[ring.NodeID]int{}}
	if err := r.indexFabric(); err != nil {
		return nil, err
	}
	for _, nd := range needs {
		peers := make([]int, 0, len(nd.Peers))
		for _, id := range nd.Peers {
			i, ok := r.index[id]
			if !ok {
				return nil, fmt.Errorf("%w: range %s has peer %s, which the fabric lacks", ErrInvalidRecovery, nd.Range, id)
			}
			peers = append(peers, i)
		}
		var sources []int
		for _, p := range peers {
			if r.live[p] && (nd.Source == "" || r.Fabric.Nodes[p].ID == nd.Source) {
				sources = append(sources, p)
			}
		}
		group := len(r.Copies)
		var cands []int32
		relaxed := false
		switch {
		case len(sources) == 0:
		case nd.To != nil:
			cands, relaxed = r.fixedCandidates(peers, nd.To, nd.Bytes)
		default:
			cands, relaxed = r.findCandidates(peers, nd.Bytes)
		}
		if len(cands) == 0 {
			if nd.Missing > 0 {
				r.Short = append(r.Short, Need{Range: nd.Range, Bytes: nd.Bytes, Peers: slices.Clone(nd.Peers), Missing: nd.Missing,
					Source: nd.Source, To: slices.Clone(nd.To)})
			}
			continue
		}
		// The strict candidates may be too few for every missing replica (two replicas lost
		// on a rack with one live node left): those beyond the hosts they offer keep the
		// host rule only, away from the strict candidates, so that no order of assignment
		// leaves a copy without a destination.
		strictHosts := nd.Missing
		var rest []int32
		if !relaxed && nd.To == nil && nd.Missing > 1 {
			if strictHosts = r.distinctHosts(cands); strictHosts < nd.Missing {
				all, _ := r.findCandidatesRule(peers, nd.Bytes, false)
				for _, n := range all {
					if !slices.Contains(cands, n) {
						rest = append(rest, n)
					}
				}
			}
		}
		for k := range nd.Missing {
			cs, rx := cands, relaxed
			if k >= strictHosts {
				if len(rest) == 0 {
					r.Short = append(r.Short, Need{Range: nd.Range, Bytes: nd.Bytes, Peers: slices.Clone(nd.Peers), Missing: nd.Missing - k,
						Source: nd.Source, To: slices.Clone(nd.To)})
					break
				}
				cs, rx = rest, true
			}
			r.Copies = append(r.Copies, Copy{Range: nd.Range, Bytes: nd.Bytes, Peers: slices.Clone(nd.Peers),
				Sources: r.ids(sources), Group: group, Relaxed: rx})
			r.sources, r.peers, r.candidates = append(r.sources, sources), append(r.peers, peers), append(r.candidates, cs)
		}
	}
	return r, nil
}

// indexFabric numbers the fabric's nodes, hosts and racks and checks their limits.
func (r *Recovery) indexFabric() error {
	hosts, racks := map[string]int{}, map[string]int{}
	number := func(m map[string]int, k string) int {
		if n, ok := m[k]; ok {
			return n
		}
		m[k] = len(m)
		return len(m) - 1
	}
	roles := map[ring.Role]bool{}
	for i, h := range r.Fabric.Nodes {
		if _, dup := r.index[h.ID]; dup {
			return fmt.Errorf("%w: node %s twice", ErrInvalidRecovery, h.ID)
		}
		if !(h.DiskReadBps > 0 && h.DiskWriteBps > 0 && h.NICSendBps > 0 && h.NICRecvBps > 0) {
			return fmt.Errorf("%w: node %s has a bandwidth that is not positive", ErrInvalidRecovery, h.ID)
		}
		r.index[h.ID] = i
		r.host = append(r.host, number(hosts, h.Host))
		rk := number(racks, h.Rack)
		if rk == len(r.racks) {
			r.racks = append(r.racks, h.Rack)
			r.liveNodesByRack = append(r.liveNodesByRack, nil)
		}
		r.rack = append(r.rack, rk)
		r.role = append(r.role, h.Role)
		r.sendBps = append(r.sendBps, min(h.DiskReadBps, h.NICSendBps))
		r.recvBps = append(r.recvBps, min(h.DiskWriteBps, h.NICRecvBps))
		live := !r.Down[h.ID]
		r.live = append(r.live, live)
		if live {
			r.liveNodesByRack[rk] = append(r.liveNodesByRack[rk], i)
			roles[h.Role] = true
		}
	}
	r.upBps, r.downBps = make([]float64, len(r.racks)), make([]float64, len(r.racks))
	for _, u := range r.Fabric.Uplinks {
		rk, ok := racks[u.Rack]
		if !ok {
			continue // a rack without nodes
		}
		if u.UpBps < 0 || u.DownBps < 0 {
			return fmt.Errorf("%w: rack %s has a negative uplink", ErrInvalidRecovery, u.Rack)
		}
		r.upBps[rk], r.downBps[rk] = u.UpBps, u.DownBps
	}
	liveRacks := 0
	for _, ns := range r.liveNodesByRack {
		if len(ns) > 0 {
			liveRacks++
		}
	}
	r.wantRacks, r.wantRoles = min(r.Rules.RF, liveRacks), min(r.Rules.RF, len(roles))
	return nil
}

func (r *Recovery) ids(nodes []int) []ring.NodeID {
	out := make([]ring.NodeID, len(nodes))
	for k, n := range nodes {
		out[k] = r.Fabric.Nodes[n].ID
	}
	return out
}

// findCandidates returns the live nodes that may take a replica of bytes next to peers,
// in fabric order, and whether the rack and role rules had to be dropped to find any.
func (r *Recovery) findCandidates(peers []int, bytes int64) ([]int32, bool) {
	for _, strict := range []bool{true, false} {
		if out, _ := r.findCandidatesRule(peers, bytes, strict); len(out) > 0 {
			return out, !strict
		}
	}
	return nil, false
}

// findCandidatesRule is findCandidates under the strict rules or the host rule alone.
func (r *Recovery) findCandidatesRule(peers []int, bytes int64, strict bool) ([]int32, bool) {
	var out []int32
	for n := range r.Fabric.Nodes {
		if r.live[n] && r.Fabric.Nodes[n].FreeBytes >= bytes && r.allows(peers, n, strict) {
			out = append(out, int32(n))
		}
	}
	return out, !strict
}

// distinctHosts returns how many hosts nodes are on.
func (r *Recovery) distinctHosts(nodes []int32) int {
	seen := map[int]bool{}
	for _, n := range nodes {
		seen[r.host[n]] = true
	}
	return len(seen)
}

// fixedCandidates returns the nodes of to that are live, in the fabric and have room for
// bytes, and whether any of them breaks the strict rules with peers.
func (r *Recovery) fixedCandidates(peers []int, to []ring.NodeID, bytes int64) ([]int32, bool) {
	var out []int32
	relaxed := false
	for _, id := range to {
		n, ok := r.index[id]
		if !ok || !r.live[n] || r.Fabric.Nodes[n].FreeBytes < bytes || !r.allows(peers, n, false) {
			continue
		}
		out = append(out, int32(n))
		relaxed = relaxed || !r.allows(peers, n, true)
	}
	return out, relaxed
}

// allows reports whether node n may hold a replica next to the replicas others (peers and
// new ones already placed) under the rules; strict false keeps only the host rule.
func (r *Recovery) allows(others []int, n int, strict bool) bool {
	nr, nroles := 0, 0 // distinct racks and roles of others
	newRack, newRole := true, true
	for k, o := range others {
		if o == n || r.host[o] == r.host[n] {
			return false
		}
		if !slices.ContainsFunc(others[:k], func(p int) bool { return r.rack[p] == r.rack[o] }) {
			nr++
		}
		if !slices.ContainsFunc(others[:k], func(p int) bool { return r.role[p] == r.role[o] }) {
			nroles++
		}
		newRack = newRack && r.rack[o] != r.rack[n]
		newRole = newRole && r.role[o] != r.role[n]
	}
	if !strict {
		return true
	}
	if r.Rules.RackAware && nr < r.wantRacks && !newRack {
		return false
	}
	if r.Rules.EngineDiverse && nroles < r.wantRoles && !newRole {
		return false
	}
	return true
}

// Candidates returns the destinations copy i may go to: live, room for its bytes, and
// within the rules with its peers (not counting the other copies of its range).
func (r *Recovery) Candidates(i int) []ring.NodeID {
	out := make([]ring.NodeID, len(r.candidates[i]))
	for k, n := range r.candidates[i] {
		out[k] = r.Fabric.Nodes[n].ID
	}
	return out
}

// CopyBytes returns the bytes of all copies.
func (r *Recovery) CopyBytes() int64 {
	var out int64
	for _, c := range r.Copies {
		out += c.Bytes
	}
	return out
}

// RecoveryFromChange returns the recovery of a change that takes nodes out of the ring
// (removed dead nodes, say): for every range, as Plan cuts the ring, whose replica set in
// the current ring holds nodes absent from the target, a need of as many new replicas,
// next to the replicas that stay. The destinations are for the recovery to choose, not
// the target ring's placement: a Schedule's Rehome then hands them to Plan. Changes that
// also move other ranges (joins, token moves) are Plan's; only the ranges losing a
// replica are here. f must describe every node of the target ring.
func RecoveryFromChange(c Change, f Fabric) (*Recovery, error) {
	return RecoveryFromChangeWith(c, f, RecoveryOptions{})
}

// RecoveryOptions say how a recovery copies.
type RecoveryOptions struct {
	// FromEveryPeer makes every new replica a merge of all its live peers' copies, one
	// copy from each (each its own Group, with the same Missing), rather than one copy
	// from any of them. That is what a kura node does when the replica it replaces is
	// down (internal/node, transfers.go): a QUORUM write acknowledged by the lost replica
	// and one peer may be on that peer alone, so no single peer has every acknowledged
	// write. It multiplies the bytes by the number of live peers; a fluid bound over it
	// lets a range's copies go to different destinations, which only lowers the bound.
	FromEveryPeer bool
}

// RecoveryFromChangeWith is RecoveryFromChange with options.
func RecoveryFromChangeWith(c Change, f Fabric, o RecoveryOptions) (*Recovery, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	inTarget := map[ring.NodeID]bool{}
	for _, n := range c.Target.Nodes() {
		inTarget[n.ID] = true
	}
	described := map[ring.NodeID]bool{}
	for _, h := range f.Nodes {
		described[h.ID] = true
	}
	for id := range inTarget {
		if !described[id] {
			return nil, fmt.Errorf("%w: the fabric lacks node %s of the target ring", ErrInvalidRecovery, id)
		}
	}
	var needs []Need
	cuts := cutPoints(c.Current, c.Target)
	for i, end := range cuts {
		old := c.Strategy.Replicas(c.Current, end, c.RF)
		var peers []ring.NodeID
		for _, id := range old {
			if inTarget[id] {
				peers = append(peers, id)
			}
		}
		if len(peers) == len(old) {
			continue
		}
		rg := Range{Start: cuts[(i+len(cuts)-1)%len(cuts)], End: end}
		nd := Need{Range: rg, Bytes: c.Sizes.Bytes(rg), Peers: peers, Missing: len(old) - len(peers)}
		if !o.FromEveryPeer {
			needs = append(needs, nd)
			continue
		}
		live := 0
		for _, p := range peers {
			if !c.Down[p] {
				nd.Source = p
				needs = append(needs, nd)
				live++
			}
		}
		if live == 0 {
			nd.Source = ""
			needs = append(needs, nd) // Short: no live peer
		}
	}
	down := map[ring.NodeID]bool{}
	for id, d := range c.Down {
		if d && inTarget[id] {
			down[id] = true
		}
	}
	// Only the target ring's nodes take part: a node of f outside it is neither a source
	// nor a destination.
	for _, h := range f.Nodes {
		if !inTarget[h.ID] {
			down[h.ID] = true
		}
	}
	return NewRecovery(f, RulesFor(c.Strategy, c.RF), down, needs)
}
