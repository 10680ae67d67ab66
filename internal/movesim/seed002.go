package movesim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Seed002Platform is one of seed 002's platforms: Racks racks of PerRack DataNodes (one
// rack: 6, 8, 16 or 32; two racks: 8, 16 or 32 each), disks of DiskBps (read and write
// each), 125 MB/s NICs and, with two racks, InterRackBps between them (each rack's uplink,
// each way).
type Seed002Platform struct {
	Racks, PerRack        int
	DiskBps, InterRackBps float64
}

func (p Seed002Platform) String() string {
	if p.Racks == 1 {
		return fmt.Sprintf("1x%d disk=%.0fMB/s", p.PerRack, p.DiskBps/1e6)
	}
	return fmt.Sprintf("%dx%d disk=%.0fMB/s inter=%gMB/s", p.Racks, p.PerRack, p.DiskBps/1e6, p.InterRackBps/1e6)
}

// Seed002BlockBytes is the paper's block size.
const Seed002BlockBytes = 67e6

// The seeds of seed 002's tables as TestSeed002 and `kura sim seed002` draw them by
// default: the blocks' placement, and the hdfs scheduler's random choices.
const (
	Seed002PlacementSeed = 2
	Seed002SchedulerSeed = 1
)

// Seed002Platforms returns the paper's platforms: tables 1 and 2, both disk speeds (65 and
// 105 MB/s); with small, only those of at most 8 nodes a rack.
func Seed002Platforms(small bool) []Seed002Platform {
	var out []Seed002Platform
	for _, disk := range []float64{65e6, 105e6} {
		for _, n := range []int{6, 8, 16, 32} {
			out = append(out, Seed002Platform{Racks: 1, PerRack: n, DiskBps: disk})
		}
		for _, inter := range []float64{125e6, 1.25e9} {
			for _, n := range []int{8, 16, 32} {
				out = append(out, Seed002Platform{Racks: 2, PerRack: n, DiskBps: disk, InterRackBps: inter})
			}
		}
	}
	if small {
		out = slices.DeleteFunc(out, func(p Seed002Platform) bool { return p.PerRack > 8 })
	}
	return out
}

// Recovery builds the paper's recovery: node d0 of rack 1 is lost, holding 80 x (nodes-1)
// blocks of 67 MB placed by HDFS's default policy (the first replica on a random node, the
// second on another rack, the third on the second's rack; with one rack, three random
// nodes), RF 3, drawn from rng.
func (p Seed002Platform) Recovery(rng *rand.Rand) (*move.Recovery, error) {
	nodes := p.Racks * p.PerRack
	var f move.Fabric
	byRack := make([][]ring.NodeID, p.Racks)
	for k := range nodes {
		rk := k / p.PerRack
		id := ring.NodeID(fmt.Sprintf("d%d", k))
		byRack[rk] = append(byRack[rk], id)
		f.Nodes = append(f.Nodes, move.Hardware{ID: id, Host: string(id), Rack: fmt.Sprintf("r%d", rk+1), Role: ring.WriteOptimized,
			FreeBytes: 1 << 50, DiskReadBps: p.DiskBps, DiskWriteBps: p.DiskBps, NICSendBps: 125e6, NICRecvBps: 125e6})
	}
	if p.Racks > 1 {
		for rk := range p.Racks {
			f.Uplinks = append(f.Uplinks, move.Uplink{Rack: fmt.Sprintf("r%d", rk+1), UpBps: p.InterRackBps, DownBps: p.InterRackBps})
		}
	}
	lost := byRack[0][0]
	others := func(ids []ring.NodeID, k int, not ring.NodeID) []ring.NodeID { // k distinct random ids but not
		var out []ring.NodeID
		for len(out) < k {
			id := ids[rng.IntN(len(ids))]
			if id != not && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	var needs []move.Need
	for b := range 80 * (nodes - 1) {
		var peers []ring.NodeID
		switch {
		case p.Racks == 1:
			peers = others(byRack[0], 2, lost)
		case rng.IntN(3) == 0: // the lost node is the replica alone on its rack
			peers = others(byRack[1+rng.IntN(p.Racks-1)], 2, lost)
		default: // the lost node is one of the pair on its rack
			peers = append(others(byRack[1+rng.IntN(p.Racks-1)], 1, lost), others(byRack[0], 1, lost)...)
		}
		needs = append(needs, move.Need{Range: move.Range{Start: ring.Token(b), End: ring.Token(b + 1)}, Bytes: Seed002BlockBytes, Peers: peers, Missing: 1})
	}
	return move.NewRecovery(f, move.Rules{RF: 3, RackAware: true}, map[ring.NodeID]bool{lost: true}, needs)
}

// Seed002Row is one platform of a seed 002 table: its recovery's size and bound, and each
// scheduler's simulation, in Schedulers' order.
type Seed002Row struct {
	Platform  Seed002Platform
	Copies    int
	CopyBytes int64
	Bound     move.RecoveryBound
	Results   []*Result
}

// RunSeed002 runs every scheduler on platform p with the paper's block placement, drawn
// with placementSeed (PCG(placementSeed, racks×100+perRack), so each platform's draw is its
// own); schedulerSeed draws hdfs's choices.
func RunSeed002(p Seed002Platform, placementSeed, schedulerSeed uint64) (*Seed002Row, error) {
	r, err := p.Recovery(rand.New(rand.NewPCG(placementSeed, uint64(p.Racks*100+p.PerRack))))
	if err != nil {
		return nil, err
	}
	return runSchedulers(p, r, schedulerSeed)
}

// Seed002RingScenario is platform p on kura's ring placement: p's nodes (dealt
// round-robin over its racks) in a ring of vnodes tokens each by balanced allocation, RF 3
// rack-aware, each node holding what the paper's lost node holds (80 × (nodes-1) blocks
// of 67 MB), the same disks, NICs and uplinks; one node lost.
func Seed002RingScenario(p Seed002Platform, vnodes int, seed uint64) Scenario {
	n := p.Racks * p.PerRack
	s := Scenario{Nodes: n, Racks: p.Racks, DiskReadBps: p.DiskBps, DiskWriteBps: p.DiskBps, NICSendBps: 125e6, NICRecvBps: 125e6,
		DataPerNodeBytes: int64(80 * (n - 1) * Seed002BlockBytes), VNodes: vnodes, RF: 3, Placement: ring.RackAware{}.Name(),
		TokenAllocation: AllocBalanced, Scheduler: "kura", Copies: CopiesFree, Event: EventLoss, Count: 1, Seed: seed}
	if p.Racks > 1 {
		s.UplinkUpBps, s.UplinkDownBps = p.InterRackBps, p.InterRackBps
	}
	return s.withDefaults()
}

// Seed002Rings builds the rings of seed 002's ring placement once per node layout (the
// platforms with other disks or uplinks share them). Not safe for concurrent use.
type Seed002Rings struct {
	VNodes int
	Seed   uint64
	rings  map[[2]int]*cluster
}

// Run runs every scheduler on platform p on the ring placement (Seed002RingScenario),
// losing the node RunScenario loses for that scenario (drawn from the seed), so that
// `kura sim move` with the same settings repeats a row.
func (g *Seed002Rings) Run(p Seed002Platform) (*Seed002Row, error) {
	s := Seed002RingScenario(p, g.VNodes, g.Seed)
	if err := s.validate(); err != nil {
		return nil, err
	}
	key := [2]int{p.Racks, p.PerRack}
	c, ok := g.rings[key]
	if !ok {
		var err error
		if c, err = newCluster(s); err != nil {
			return nil, err
		}
		if g.rings == nil {
			g.rings = map[[2]int]*cluster{}
		}
		g.rings[key] = c
	}
	c = &cluster{s: s, strategy: c.strategy, ring: c.ring, sizes: c.sizes}
	change, fabric, err := c.lossChange(s.lost())
	if err != nil {
		return nil, err
	}
	r, _, err := lossRecovery(change, fabric, CopiesFree)
	if err != nil {
		return nil, err
	}
	return runSchedulers(p, r, g.Seed)
}

// runSchedulers bounds r and simulates every scheduler on it.
func runSchedulers(p Seed002Platform, r *move.Recovery, schedulerSeed uint64) (*Seed002Row, error) {
	b, err := move.BoundRecovery(r)
	if err != nil {
		return nil, err
	}
	row := &Seed002Row{Platform: p, Copies: len(r.Copies), CopyBytes: r.CopyBytes(), Bound: b}
	for _, s := range Schedulers(schedulerSeed) {
		sch, err := s.Schedule(r)
		if err != nil {
			return nil, fmt.Errorf("movesim: %s %s: %w", p, s.Name(), err)
		}
		res, err := Run(r, sch, Options{Bound: &b})
		if err != nil {
			return nil, fmt.Errorf("movesim: %s %s: %w", p, s.Name(), err)
		}
		row.Results = append(row.Results, res)
	}
	return row, nil
}
