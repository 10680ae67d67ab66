package movesim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Events a Scenario simulates.
const (
	// EventLoss: Count nodes die and their ranges are re-replicated.
	EventLoss = "loss"
	// EventRemove: the same recovery, started by an operator's removal of the dead nodes
	// (kura admin removenode) instead of a failure detector's timeout. The problem, its
	// schedule and its bound are the same; the name records how it began.
	EventRemove = "remove"
	// EventJoin: Count new nodes join at once.
	EventJoin = "join"
)

// Token allocations of the ring a Scenario starts from (Scenario.TokenAllocation).
const (
	// AllocBalanced grows the ring one node at a time with the balanced allocator
	// (ring.Allocator.Join): a cluster whose nodes joined one by one, as kura allocates.
	AllocBalanced = "balanced"
	// AllocGreedy is the same without the allocator's refinement passes
	// (ring.Allocator.JoinGreedy): half the cost, less even ownership.
	AllocGreedy = "greedy"
	// AllocRandom draws every token at random (Cassandra before 3.0).
	AllocRandom = "random"
)

// How a recovery places and copies the lost replicas (Scenario.Copies).
const (
	// CopiesHandoff is what a kura cluster does (docs/design/rereplication.md, section 7):
	// the dead nodes' tokens are handed to survivors (move.HandOff), the ranges go where
	// the handed-off ring places them, and each new replica is merged from every live
	// replica that stays (move.RecoveryOfPlan). The scheduler only orders the copies and
	// limits streams. The bound is over every choice of destinations for the same merged
	// copies (move.RecoveryFromChangeWith, FromEveryPeer).
	CopiesHandoff = "handoff"
	// CopiesFree lets the scheduler choose each copy's source among the live replicas and
	// its destination among every node the placement rules allow (move.RecoveryFromChange):
	// seed 002's model, for immutable blocks that any one replica can supply.
	CopiesFree = "free"
)

// Scenario is one simulated event in a cluster of identical nodes, as `kura sim move`
// takes it. A zero field takes the default its comment gives (DefaultScenario has them
// all); RunScenario refuses values that make no sense.
type Scenario struct {
	// Nodes is the cluster's size before the event (default 12); node k is "n%04d" on rack
	// k mod Racks (default 2), one node per host.
	Nodes int `json:"nodes"`
	Racks int `json:"racks"`
	// Per-node bandwidths in bytes per second: disk read and write (default 100 MB/s), NIC
	// send and receive (default 125 MB/s).
	DiskReadBps  float64 `json:"disk_read_bps"`
	DiskWriteBps float64 `json:"disk_write_bps"`
	NICSendBps   float64 `json:"nic_send_bps"`
	NICRecvBps   float64 `json:"nic_recv_bps"`
	// UplinkUpBps and UplinkDownBps are every rack's link to the other racks, each way;
	// 0 (the default) is no limit.
	UplinkUpBps   float64 `json:"uplink_up_bps"`
	UplinkDownBps float64 `json:"uplink_down_bps"`
	// DataPerNodeBytes is what a node holds (default 100 GB): the data set is Nodes ×
	// DataPerNodeBytes / RF, spread over the token space as murmur3 spreads keys, so a
	// range's bytes are proportional to its width.
	DataPerNodeBytes int64 `json:"data_per_node_bytes"`
	// FreeBytes is what each node can still store; 0 (the default) is no limit.
	FreeBytes int64 `json:"free_bytes"`
	// VNodes is the tokens per node (default 256); RF the replication factor (default 3).
	VNodes int `json:"vnodes"`
	RF     int `json:"rf"`
	// Placement is the strategy's name (ring.StrategyByName; default rack-aware).
	Placement string `json:"placement"`
	// TokenAllocation builds the starting ring and chooses joiners' tokens: balanced (the
	// default), greedy or random (the Alloc constants).
	TokenAllocation string `json:"token_allocation"`
	// Scheduler schedules a recovery: kura (the default), hdfs, ring or ring-priority
	// (SchedulerByName). A join has no scheduler: Plan chooses its sources.
	Scheduler string `json:"scheduler"`
	// Copies is how a recovery places and copies the lost replicas (the Copies constants):
	// handoff (the default), as a kura cluster does, or free, as seed 002's schedulers do.
	Copies string `json:"copies"`
	// Event is loss (the default), remove or join; Count how many nodes it takes out or
	// adds (default 1). The nodes lost are drawn from Seed.
	Event string `json:"event"`
	Count int    `json:"count"`
	// Seed draws the tokens, the nodes lost and the hdfs scheduler's choices.
	Seed uint64 `json:"seed"`
	// Timeline records every link's rate over time (Options.Timeline): off by default, as a
	// large join records many samples.
	Timeline bool `json:"-"`
	// Clock, when set, times the phases (ScenarioResult.Timings): the caller's wall clock,
	// since this package reads none.
	Clock func() time.Time `json:"-"`
}

// DefaultScenario returns the defaults: a node loss in 12 nodes over 2 racks of 256
// vnodes, RF 3 rack-aware, 100 GB a node, 100 MB/s disks and 125 MB/s NICs, scheduled by
// kura.
func DefaultScenario() Scenario {
	return Scenario{Nodes: 12, Racks: 2, DiskReadBps: 100e6, DiskWriteBps: 100e6, NICSendBps: 125e6, NICRecvBps: 125e6,
		DataPerNodeBytes: 100e9, VNodes: 256, RF: 3, Placement: ring.RackAware{}.Name(), TokenAllocation: AllocBalanced,
		Scheduler: "kura", Copies: CopiesHandoff, Event: EventLoss, Count: 1, Seed: 1}
}

// Limits on a scenario's size: past the first two the ring alone takes minutes; past the
// third the data set's bytes overflow.
const (
	MaxScenarioNodes  = 20000
	MaxScenarioVNodes = 4096
	MaxDataPerNode    = int64(1) << 50
)

// withDefaults fills s's zero fields from DefaultScenario.
func (s Scenario) withDefaults() Scenario {
	d := DefaultScenario()
	set := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setS := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&s.Nodes, d.Nodes)
	set(&s.Racks, d.Racks)
	set(&s.VNodes, d.VNodes)
	set(&s.RF, d.RF)
	set(&s.Count, d.Count)
	setF(&s.DiskReadBps, d.DiskReadBps)
	setF(&s.DiskWriteBps, d.DiskWriteBps)
	setF(&s.NICSendBps, d.NICSendBps)
	setF(&s.NICRecvBps, d.NICRecvBps)
	setS(&s.Placement, d.Placement)
	setS(&s.TokenAllocation, d.TokenAllocation)
	setS(&s.Scheduler, d.Scheduler)
	setS(&s.Copies, d.Copies)
	setS(&s.Event, d.Event)
	if s.DataPerNodeBytes == 0 {
		s.DataPerNodeBytes = d.DataPerNodeBytes
	}
	return s
}

// validate refuses a scenario RunScenario cannot run.
func (s Scenario) validate() error {
	switch {
	case s.Nodes < 1 || s.Nodes > MaxScenarioNodes:
		return fmt.Errorf("movesim: %d nodes (want 1 to %d)", s.Nodes, MaxScenarioNodes)
	case s.Racks < 1 || s.Racks > s.Nodes:
		return fmt.Errorf("movesim: %d racks for %d nodes", s.Racks, s.Nodes)
	case s.VNodes < 1 || s.VNodes > MaxScenarioVNodes:
		return fmt.Errorf("movesim: %d vnodes a node (want 1 to %d)", s.VNodes, MaxScenarioVNodes)
	case s.RF < 1:
		return fmt.Errorf("movesim: replication factor %d", s.RF)
	case !(s.DiskReadBps > 0 && s.DiskWriteBps > 0 && s.NICSendBps > 0 && s.NICRecvBps > 0):
		return fmt.Errorf("movesim: disk and NIC bandwidths must be positive")
	case s.UplinkUpBps < 0 || s.UplinkDownBps < 0:
		return fmt.Errorf("movesim: a negative rack uplink")
	case s.DataPerNodeBytes < 0 || s.FreeBytes < 0:
		return fmt.Errorf("movesim: negative bytes")
	case s.DataPerNodeBytes > MaxDataPerNode:
		return fmt.Errorf("movesim: %d bytes a node (at most %d)", s.DataPerNodeBytes, MaxDataPerNode)
	case s.Count < 1:
		return fmt.Errorf("movesim: an event of %d nodes", s.Count)
	}
	switch s.Event {
	case EventLoss, EventRemove:
		if s.Count >= s.Nodes {
			return fmt.Errorf("movesim: losing %d of %d nodes leaves none", s.Count, s.Nodes)
		}
	case EventJoin:
		if s.Nodes+s.Count > MaxScenarioNodes {
			return fmt.Errorf("movesim: %d nodes after the join (at most %d)", s.Nodes+s.Count, MaxScenarioNodes)
		}
	default:
		return fmt.Errorf("movesim: unknown event %q (want %s, %s or %s)", s.Event, EventLoss, EventRemove, EventJoin)
	}
	if s.Copies != CopiesHandoff && s.Copies != CopiesFree {
		return fmt.Errorf("movesim: unknown copies %q (want %s or %s)", s.Copies, CopiesHandoff, CopiesFree)
	}
	switch s.TokenAllocation {
	case AllocBalanced, AllocGreedy, AllocRandom:
	default:
		return fmt.Errorf("movesim: unknown token allocation %q (want %s, %s or %s)", s.TokenAllocation, AllocBalanced, AllocGreedy, AllocRandom)
	}
	return nil
}

// NodeTraffic is what one node sent and received in a simulated event.
type NodeTraffic struct {
	ID            ring.NodeID `json:"id"`
	Rack          string      `json:"rack"`
	SentBytes     int64       `json:"sent_bytes"`
	ReceivedBytes int64       `json:"received_bytes"`
	// BusySeconds is the larger of its sends at its send rate and its receives at its
	// receive rate: no execution finishes before it.
	BusySeconds float64 `json:"busy_seconds"`
}

// Timings are the wall-clock seconds of a scenario's phases (zero without a Clock): the
// ring before the event; planning (the recovery and its schedule, or the joiners' tokens
// and Plan); the bound; the simulation.
type Timings struct {
	RingSeconds       float64 `json:"ring_seconds"`
	PlanSeconds       float64 `json:"plan_seconds"`
	BoundSeconds      float64 `json:"bound_seconds"`
	SimulationSeconds float64 `json:"simulation_seconds"`
}

// Total returns the sum of the phases.
func (t Timings) Total() float64 {
	return t.RingSeconds + t.PlanSeconds + t.BoundSeconds + t.SimulationSeconds
}

// ScenarioResult is a simulated scenario.
type ScenarioResult struct {
	Scenario Scenario `json:"scenario"`
	// Scheduler is the recovery's scheduler, or "plan" for a join (Plan chose the sources).
	Scheduler string `json:"scheduler"`
	// EventNodes are the nodes the event took out or added.
	EventNodes []ring.NodeID `json:"event_nodes"`
	// Transfers are the copies (or Plan's transfers) and MovedBytes their bytes;
	// MinimumBytes is what the event must move (a recovery: the lost replicas' bytes,
	// including those no copy can make; a join: Plan's minimum). ShortBytes are the lost
	// replicas' bytes that no copy can make (no live replica left).
	Transfers    int   `json:"transfers"`
	MovedBytes   int64 `json:"moved_bytes"`
	MinimumBytes int64 `json:"minimum_bytes"`
	ShortBytes   int64 `json:"short_bytes"`
	// Seconds is the simulated time until the last transfer completes.
	Seconds float64 `json:"seconds"`
	// Bound is the physical bound of the event (move.BoundRecovery for a recovery,
	// joinBound for a join); Ratio is Bound.Seconds / Seconds and WholeRatio
	// Bound.WholeSeconds / Seconds (1 at best).
	Bound      move.RecoveryBound `json:"bound"`
	Ratio      float64            `json:"ratio"`
	WholeRatio float64            `json:"whole_ratio"`
	// MaxActive is the most transfers running at once.
	MaxActive int `json:"max_active"`
	// Nodes are every node that sent or received, by ID.
	Nodes   []NodeTraffic `json:"nodes"`
	Timings Timings       `json:"timings"`
	// Run is the simulation (its timeline when Scenario.Timeline was set); Before and
	// After are the rings before and after the event.
	Run           *Result    `json:"-"`
	Before, After *ring.Ring `json:"-"`
}

// Busiest returns the k nodes with the most BusySeconds, busiest first.
func (r *ScenarioResult) Busiest(k int) []NodeTraffic {
	out := slices.Clone(r.Nodes)
	slices.SortStableFunc(out, func(a, b NodeTraffic) int {
		switch {
		case a.BusySeconds > b.BusySeconds:
			return -1
		case a.BusySeconds < b.BusySeconds:
			return 1
		}
		return 0
	})
	return out[:min(k, len(out))]
}

// RunScenario builds s's cluster, plans its event and simulates it.
func RunScenario(s Scenario) (*ScenarioResult, error) {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	c, err := newCluster(s)
	if err != nil {
		return nil, err
	}
	if s.Event == EventJoin {
		return c.join()
	}
	sch, err := SchedulerByName(s.Scheduler, s.Seed)
	if err != nil {
		return nil, err
	}
	return c.loss(s.lost(), sch)
}

// lost returns the indexes of the nodes a loss or removal takes out, drawn from the seed.
func (s Scenario) lost() []int {
	rng := rand.New(rand.NewPCG(s.Seed, streamLost))
	lost := slices.Clone(rng.Perm(s.Nodes)[:s.Count])
	slices.Sort(lost)
	return lost
}

// SchedulerByName returns the scheduler reports call name; seed draws hdfs's choices.
func SchedulerByName(name string, seed uint64) (move.Scheduler, error) {
	for _, s := range Schedulers(seed) {
		if s.Name() == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("movesim: unknown scheduler %q (want kura, hdfs, ring or ring-priority)", name)
}

// Schedulers returns kura's scheduler and seed 002's baselines, in the order tables show
// them; seed draws hdfs's random choices.
func Schedulers(seed uint64) []move.Scheduler {
	return []move.Scheduler{move.Kura{}, move.HDFSDefault{Rand: rand.New(rand.NewPCG(seed, 3))}, move.RingScheme{}, move.RingScheme{Priority: true}}
}

// Streams of the scenario's seed, one per use, so that adding a draw to one use does not
// change another's.
const (
	streamRing uint64 = iota + 10
	streamLost
	streamJoin
)

// cluster is a scenario's cluster before the event.
type cluster struct {
	s        Scenario
	strategy ring.Strategy
	ring     *ring.Ring
	sizes    move.Sizes
	timings  Timings
}

// newCluster builds s's ring.
func newCluster(s Scenario) (*cluster, error) {
	strategy, err := ring.StrategyByName(s.Placement)
	if err != nil {
		return nil, fmt.Errorf("movesim: %w", err)
	}
	c := &cluster{s: s, strategy: strategy, sizes: move.Uniform(int64(s.Nodes) * s.DataPerNodeBytes / int64(s.RF))}
	start := c.now()
	if c.ring, err = buildRing(s, strategy); err != nil {
		return nil, err
	}
	c.timings.RingSeconds = c.since(start)
	return c, nil
}

// nodeAt is node k of a cluster of racks racks: its own host, racks dealt round-robin,
// engine roles in turn (only engine-diverse placement reads them).
func nodeAt(k, racks int) ring.Node {
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	id := fmt.Sprintf("n%04d", k)
	return ring.Node{ID: ring.NodeID(id), Host: id, Rack: fmt.Sprintf("r%02d", k%racks), Role: roles[k%len(roles)]}
}

// buildRing returns the ring of s's nodes. Balanced allocation joins them one at a time
// through one ring.Allocator, which keeps its draft ring between joins: at 1,000 nodes of
// 256 tokens this is the scenario's largest cost (ring.Allocator's comment measures it).
func buildRing(s Scenario, strategy ring.Strategy) (*ring.Ring, error) {
	rng := rand.New(rand.NewPCG(s.Seed, streamRing))
	if s.TokenAllocation == AllocRandom {
		taken := map[ring.Token]bool{}
		nodes := make([]ring.Node, s.Nodes)
		for k := range nodes {
			nodes[k] = nodeAt(k, s.Racks)
			nodes[k].Tokens = ring.RandomTokens(rng, s.VNodes, taken)
			for _, t := range nodes[k].Tokens {
				taken[t] = true
			}
		}
		return ring.New(nodes)
	}
	a := ring.NewAllocator(nil, strategy, s.RF)
	for k := range s.Nodes {
		joiner := []ring.Node{nodeAt(k, s.Racks)}
		if s.TokenAllocation == AllocGreedy {
			a.JoinGreedy(joiner, s.VNodes, rng)
		} else {
			a.Join(joiner, s.VNodes, rng)
		}
	}
	return a.Ring()
}

// hardware is node n's disks and NICs as s gives them.
func (s Scenario) hardware(n ring.Node) move.Hardware {
	free := s.FreeBytes
	if free == 0 {
		free = 1 << 60
	}
	return move.Hardware{ID: n.ID, Host: n.Host, Rack: n.Rack, Role: n.Role, FreeBytes: free,
		DiskReadBps: s.DiskReadBps, DiskWriteBps: s.DiskWriteBps, NICSendBps: s.NICSendBps, NICRecvBps: s.NICRecvBps}
}

// fabric returns the hardware of nodes and, when s limits them, the racks' uplinks.
func (s Scenario) fabric(nodes []ring.Node) move.Fabric {
	var f move.Fabric
	racks := map[string]bool{}
	for _, n := range nodes {
		f.Nodes = append(f.Nodes, s.hardware(n))
		if !racks[n.Rack] && (s.UplinkUpBps > 0 || s.UplinkDownBps > 0) {
			racks[n.Rack] = true
			f.Uplinks = append(f.Uplinks, move.Uplink{Rack: n.Rack, UpBps: s.UplinkUpBps, DownBps: s.UplinkDownBps})
		}
	}
	return f
}

func (c *cluster) now() time.Time {
	if c.s.Clock == nil {
		return time.Time{}
	}
	return c.s.Clock()
}

func (c *cluster) since(t time.Time) float64 {
	if c.s.Clock == nil {
		return 0
	}
	return c.s.Clock().Sub(t).Seconds()
}

// traffic returns the per-node bytes of a load, by node ID, with their busy seconds.
func (s Scenario) traffic(f move.Fabric, sent, received map[ring.NodeID]int64) []NodeTraffic {
	var out []NodeTraffic
	for _, h := range f.Nodes {
		snt, rcv := sent[h.ID], received[h.ID]
		if snt == 0 && rcv == 0 {
			continue
		}
		busy := max(float64(snt)/min(h.DiskReadBps, h.NICSendBps), float64(rcv)/min(h.DiskWriteBps, h.NICRecvBps))
		out = append(out, NodeTraffic{ID: h.ID, Rack: h.Rack, SentBytes: snt, ReceivedBytes: rcv, BusySeconds: busy})
	}
	slices.SortFunc(out, func(a, b NodeTraffic) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
