package machine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/route"
)

// Config is a node's cluster behaviour as configured. Zero durations turn the behaviour
// they bound off, as documented on each field.
type Config struct {
	Self              ring.NodeID
	Strategy          ring.Strategy
	ReplicationFactor int
	Policy            coord.Policy
	Level             coord.Level // the default consistency level
	Repair            coord.RepairMode
	// Timeout bounds every request: past it a write that has not met its level, or a read
	// that has not replied, gets coord.ErrTimeout. > 0.
	Timeout time.Duration
	// WriteSlowAfter is how long a write whose policy counts only some replicas
	// (engine-aware: the synchronous ones) waits for them before every acknowledgement
	// counts (coord.Write.OnSlow); 0 never.
	WriteSlowAfter time.Duration
	// ReadSlowAfter is how long a read waits for the replicas it asked before spares are
	// asked in place of the late ones (coord.Read.OnSlow); 0 never. With
	// ReadSlowPercentile it is the threshold's cap.
	ReadSlowAfter time.Duration
	// ReadSlowPercentile, in (0, 100), moves the read fallback's threshold down to that
	// percentile of recent reads (route.ReadLatencies); 0 keeps ReadSlowAfter.
	ReadSlowPercentile float64
	// AsyncTarget paces asynchronous writes per replica (route.Pacer): answers later than
	// it slow the replica's pace, and writes beyond the pace are deferred to hints. 0
	// sends them all. Synchronous answers later than WriteSlowAfter slow the pace of
	// their host's asynchronous replicas.
	AsyncTarget time.Duration
	// SlowWriteAfter logs writes that take at least this long (SlowWrite), at most one a
	// second; 0 logs none.
	SlowWriteAfter time.Duration
	// HintsHeld reports whether this node holds hints for a replica (nil: none). Together
	// with what other members announce (cluster.Member.Behind) it marks replicas that
	// lag for load-aware reads.
	HintsHeld func(ring.NodeID) bool
	// Metrics receives what the node counts; nil counts nothing.
	Metrics Metrics
}

// Metrics receives the counts a node keeps about its requests (a Prometheus exporter in
// the real node). Implementations must be safe for concurrent use and must not block.
type Metrics interface {
	// Request is a coordinated read or write ("read", "write") that replied err after took.
	Request(op string, took time.Duration, err error)
	// SentTo is a request sent to a replica of role, a read or a write (read repairs too).
	SentTo(role ring.Role, write bool)
	// ReadDone is how a coordinated read left its first plan: replicas that failed, whether
	// the answers disagreed, replicas asked in place of late ones.
	ReadDone(failures int, disagreed bool, slowed int)
	// WriteDone is a write whose counted replicas failed (fellBack) or were slow (slowed).
	WriteDone(fellBack, slowed bool)
	// RetryDenied is a late read that the retry budget kept from asking a spare;
	// RetryToQuickSpares one retried past the budget on spares known to answer quickly.
	RetryDenied()
	RetryToQuickSpares()
	// Deferred is an asynchronous write kept as a hint because its replica was backlogged.
	Deferred()
	// Repair is a read repair write sent.
	Repair()
}

// Node is one node's cluster behaviour. Create it with New, give it the membership view
// with SetView (and, once the cluster metadata places keys, the placement with
// SetPlacement), then start requests with StartWrite and StartRead.
type Node struct {
	cfg     Config
	metrics Metrics
	// Each of these is nil when the configuration does not use it, so that requests pay
	// nothing for it.
	load      *route.Load          // load-aware routing's inputs
	latencies *route.ReadLatencies // the read fallback at a percentile
	pacer     *route.Pacer         // asynchronous writes' paces
	retries   route.RetryBudget    // retries of late reads

	view  atomic.Pointer[view] // replaced whole by SetView and SetPlacement
	setMu sync.Mutex           // orders SetView and SetPlacement, each of which copies the other's part

	slowLog      slowLog
	announcement announcement
}

// New returns a node with an empty view: every request is unavailable until SetView
// gives it a ring.
func New(cfg Config) *Node {
	n := &Node{cfg: cfg, metrics: cfg.Metrics}
	if n.metrics == nil {
		n.metrics = nopMetrics{}
	}
	if _, ok := cfg.Policy.(coord.LoadAware); ok {
		n.load = route.NewLoad(n.Lagging)
	}
	if cfg.ReadSlowPercentile > 0 {
		n.latencies = route.NewReadLatencies(cfg.ReadSlowPercentile, cfg.ReadSlowAfter)
	}
	if cfg.AsyncTarget > 0 && cfg.Policy.Name() != (coord.Uniform{}).Name() { // uniform sends nothing asynchronously
		n.pacer = route.NewPacer(cfg.AsyncTarget, cfg.WriteSlowAfter, n.hostOf)
	}
	n.view.Store(&view{})
	return n
}

// view is a snapshot of the membership and the placement for the request path.
type view struct {
	ring    *ring.Ring // gossip's: nil until some member owns tokens
	members map[ring.NodeID]cluster.Member
	// placed is the placement given by SetPlacement, nil while keys are placed by the
	// gossip ring and the configured strategy.
	placed *placed
	// index is the ring whose ranges the replica sets are cached by: ring, or placed's
	// ranges; nil when neither places anything.
	index *ring.Ring
	// sets caches the replica sets of each range of index (ring.RangeIndex), computed on
	// first use rather than for every range whenever the view changes (liveness, load).
	sets []atomic.Pointer[rangeSets]
	// behind holds the replicas that some other live member announced hints for
	// (cluster.Member.Behind).
	behind map[ring.NodeID]bool
}

// rangeSets are one range's replica sets with the failure detector's opinion of each,
// this node first in each when it is a replica.
type rangeSets struct {
	read []coord.Replica // the current set: reads, and writes outside a move
	// While the range moves (a placement's WriteGroups gives several groups): the
	// groups, and every replica of them once, in the order of the groups.
	groups [][]coord.Replica
	all    []coord.Replica
}

// SetView replaces the membership view: members as gossip has them (with the failure
// detector's opinion) and the ring they make, nil while no member owns tokens. Requests
// started after it returns use the new view. Views replace each other in the order of
// the calls: a driver that learns of changes on several goroutines must order its reads
// of the membership and its calls together.
func (n *Node) SetView(members []cluster.Member, r *ring.Ring) {
	n.setMu.Lock()
	defer n.setMu.Unlock()
	v := &view{members: make(map[ring.NodeID]cluster.Member, len(members)), ring: r, placed: n.view.Load().placed}
	for _, m := range members {
		v.members[m.ID] = m
	}
	v.behind = behindSet(v.members, n.cfg.Self)
	n.store(v)
}

// store makes v the view, with an empty cache of replica sets over its index.
func (n *Node) store(v *view) {
	v.index = v.ring
	if v.placed != nil {
		v.index = v.placed.ranges
	}
	if v.index != nil {
		v.sets = make([]atomic.Pointer[rangeSets], v.index.RangeCount())
	}
	n.view.Store(v)
}

// Ring returns the ring of the current view, nil when no member owns tokens.
func (n *Node) Ring() *ring.Ring { return n.view.Load().ring }

// Member returns a member of the current view.
func (n *Node) Member(id ring.NodeID) (cluster.Member, bool) {
	m, ok := n.view.Load().members[id]
	return m, ok
}

// Members returns the members of the current view, in no order.
func (n *Node) Members() []cluster.Member {
	v := n.view.Load()
	out := make([]cluster.Member, 0, len(v.members))
	for _, m := range v.members {
		out = append(out, m)
	}
	return out
}

// behindSet returns the replicas that a live member other than self announced hints for.
// A member that is down replays nothing until it is back, but its announcement is no
// longer news either: its replicas are not read around on its word.
func behindSet(members map[ring.NodeID]cluster.Member, self ring.NodeID) map[ring.NodeID]bool {
	var out map[ring.NodeID]bool
	for _, m := range members {
		if m.ID == self || !m.Up {
			continue
		}
		for _, id := range m.Behind {
			if out == nil {
				out = map[ring.NodeID]bool{}
			}
			out[id] = true
		}
	}
	return out
}

// Lagging reports whether replica id lags for some keys: this node holds hints for it, or
// another live member announced that it does (load-aware routing reads around it).
func (n *Node) Lagging(id ring.NodeID) bool {
	if n.cfg.HintsHeld != nil && n.cfg.HintsHeld(id) {
		return true
	}
	return n.view.Load().behind[id]
}

// Replicas returns key's replica set with the failure detector's opinion of each, this
// node first when it is one of them (its own copy answers without a network round trip):
// the placement's read set (SetPlacement), else the gossip ring's. The caller must not
// modify it.
func (n *Node) Replicas(key []byte) []coord.Replica {
	if s := n.rangeSetsOf(n.view.Load(), ring.TokenOf(key)); s != nil {
		return s.read
	}
	return nil
}

// rangeSetsOf returns the replica sets of token t's range in v, nil when nothing places
// keys yet.
func (n *Node) rangeSetsOf(v *view, t ring.Token) *rangeSets {
	if v.index == nil {
		return nil
	}
	return n.rangeSetsAt(v, v.index.RangeIndex(t))
}

// rangeSetsAt returns the replica sets of range i of v's index, from the cache.
func (n *Node) rangeSetsAt(v *view, i int) *rangeSets {
	if s := v.sets[i].Load(); s != nil {
		return s
	}
	s := n.computeSets(v, v.index.RangeEnd(i))
	v.sets[i].Store(s) // a racing request may store equal sets: either is right
	return s
}

// Leaders returns the replicas of key that may lead it (run its read-modify-write
// commands, see resp.Leader), in the order a coordinator tries them: ring order (with a
// placement, its read set's order), so that every coordinator picks the same leader; live
// replicas only, refilling ones (which lost rows) last.
func (n *Node) Leaders(key []byte) []ring.NodeID {
	v := n.view.Load()
	var ids []ring.NodeID
	switch t := ring.TokenOf(key); {
	case v.placed != nil:
		ids = v.placed.p.ReadSet(t)
	case v.ring == nil:
		return nil
	default:
		ids = n.cfg.Strategy.Replicas(v.ring, v.ring.RangeEnd(v.ring.RangeIndex(t)), n.cfg.ReplicationFactor)
	}
	out := make([]ring.NodeID, 0, len(ids))
	var refilling []ring.NodeID
	for _, id := range ids {
		m := v.members[id]
		switch {
		case id != n.cfg.Self && !m.Up:
		case m.Refilling:
			refilling = append(refilling, id)
		default:
			out = append(out, id)
		}
	}
	return append(out, refilling...)
}

// Timeout is the bound of every request (Config.Timeout).
func (n *Node) Timeout() time.Duration { return n.cfg.Timeout }

// computeSets computes the replica sets of token t in v: the placement's, else the
// gossip ring's.
func (n *Node) computeSets(v *view, t ring.Token) *rangeSets {
	if v.placed != nil {
		return n.placedSets(v, t)
	}
	return &rangeSets{read: n.decorate(v, n.cfg.Strategy.Replicas(v.ring, t, n.cfg.ReplicationFactor))}
}

// decorate returns ids as replicas with the failure detector's opinion and the role of
// each, this node first.
func (n *Node) decorate(v *view, ids []ring.NodeID) []coord.Replica {
	out := make([]coord.Replica, 0, len(ids))
	for _, id := range ids {
		m := v.members[id]
		r := coord.Replica{ID: id, Up: id == n.cfg.Self || m.Up, Role: m.Role, Refilling: m.Refilling}
		if id == n.cfg.Self {
			// Closest first: the policy asks the first replica for the row, and this
			// node's own copy answers without a network round trip.
			out = append([]coord.Replica{r}, out...)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// hostOf returns member id's host, "" if unknown.
func (n *Node) hostOf(id ring.NodeID) string { return n.view.Load().members[id].Host }

// ReplicaLatencies returns this coordinator's recent read latency of each replica that
// has one (load-aware routing only), for metrics.
func (n *Node) ReplicaLatencies(now time.Time) []route.ReplicaLatency {
	if n.load == nil {
		return nil
	}
	return n.load.Latencies(now)
}

// AsyncRates returns the pace of asynchronous writes to each replica (when paced), for
// metrics.
func (n *Node) AsyncRates() []route.Rate {
	if n.pacer == nil {
		return nil
	}
	return n.pacer.Rates()
}

// Paced reports whether asynchronous writes are paced (Config.AsyncTarget).
func (n *Node) Paced() bool { return n.pacer != nil }

type nopMetrics struct{}

func (nopMetrics) Request(string, time.Duration, error) {}
func (nopMetrics) SentTo(ring.Role, bool)               {}
func (nopMetrics) ReadDone(int, bool, int)              {}
func (nopMetrics) WriteDone(bool, bool)                 {}
func (nopMetrics) RetryDenied()                         {}
func (nopMetrics) RetryToQuickSpares()                  {}
func (nopMetrics) Deferred()                            {}
func (nopMetrics) Repair()                              {}
