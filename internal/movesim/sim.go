package movesim

import (
	"fmt"

	"github.com/kuradb/kura/internal/flowsim"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Options tune Run.
type Options struct {
	// Bound is the recovery's bound when the caller has it (it does not depend on the
	// schedule, so several schedules of one recovery can share it); nil: Run computes it.
	Bound *move.RecoveryBound
	// Timeline records every link's rate over time (flowsim.Config.Timeline); off by default.
	Timeline bool
}

// Result is one simulated recovery.
type Result struct {
	Scheduler string
	// Seconds is when the last copy completed: the time until the replication factor is
	// restored.
	Seconds float64
	Bound   move.RecoveryBound
	// Ratio is Bound.Seconds / Seconds: the fraction of the physical limit reached (1 at
	// best); WholeRatio the same against Bound.WholeSeconds.
	Ratio, WholeRatio float64
	// Load is the schedule's demand on each resource, in seconds at full rate.
	Load move.Load
	// Start and End are each copy's times, indexed like the schedule's Order.
	Start, End []float64
	// MaxActive is the most copies running at once.
	MaxActive int
	// Sim is the finished simulation (its LinkBytes, Timeline and WriteTimelineCSV); Links
	// names its links in order.
	Sim   *flowsim.Sim
	Links []string
}

// Run simulates schedule s of recovery r. It fails on a schedule that Check refuses.
func Run(r *move.Recovery, s *move.Schedule, opts Options) (*Result, error) {
	if err := move.Check(r, s); err != nil {
		return nil, err
	}
	res := &Result{Scheduler: s.Scheduler, Load: move.LoadOf(r, s)}
	if opts.Bound != nil {
		res.Bound = *opts.Bound
	} else {
		b, err := move.BoundRecovery(r)
		if err != nil {
			return nil, err
		}
		res.Bound = b
	}
	f := newFabric(r)
	sim, err := flowsim.New(flowsim.Config{Links: f.links, Timeline: opts.Timeline})
	if err != nil {
		return nil, fmt.Errorf("movesim: %w", err)
	}
	d := newDriver(r, s, f, sim)
	if err := d.run(); err != nil {
		return nil, err
	}
	res.Seconds, res.Start, res.End, res.MaxActive = sim.Now(), d.start, d.end, d.maxActive
	if res.Seconds > 0 {
		res.Ratio, res.WholeRatio = res.Bound.Seconds/res.Seconds, res.Bound.WholeSeconds/res.Seconds
	} else {
		res.Ratio, res.WholeRatio = 1, 1
	}
	res.Sim = sim
	for _, l := range f.links {
		res.Links = append(res.Links, l.Name)
	}
	return res, nil
}

// fabric is the flow model's links: per node disk read, disk write, NIC send and NIC
// receive (node*4 + one of those); per limited rack an uplink and a downlink.
type fabric struct {
	links    []flowsim.Link
	index    map[ring.NodeID]int
	rack     []string
	up, down map[string]flowsim.LinkID
	rackOf   map[ring.NodeID]string
}

const (
	diskRead = iota
	diskWrite
	nicSend
	nicRecv
	perNode
)

func newFabric(r *move.Recovery) *fabric {
	f := &fabric{index: map[ring.NodeID]int{}, up: map[string]flowsim.LinkID{}, down: map[string]flowsim.LinkID{}, rackOf: map[ring.NodeID]string{}}
	for i, h := range r.Fabric.Nodes {
		f.index[h.ID] = i
		f.rack = append(f.rack, h.Rack)
		f.rackOf[h.ID] = h.Rack
		f.links = append(f.links,
			flowsim.Link{Name: string(h.ID) + ".disk.read", CapacityBytesPerSecond: h.DiskReadBps},
			flowsim.Link{Name: string(h.ID) + ".disk.write", CapacityBytesPerSecond: h.DiskWriteBps},
			flowsim.Link{Name: string(h.ID) + ".nic.send", CapacityBytesPerSecond: h.NICSendBps},
			flowsim.Link{Name: string(h.ID) + ".nic.recv", CapacityBytesPerSecond: h.NICRecvBps})
	}
	for _, u := range r.Fabric.Uplinks {
		if u.UpBps > 0 {
			f.up[u.Rack] = flowsim.LinkID(len(f.links))
			f.links = append(f.links, flowsim.Link{Name: u.Rack + ".up", CapacityBytesPerSecond: u.UpBps})
		}
		if u.DownBps > 0 {
			f.down[u.Rack] = flowsim.LinkID(len(f.links))
			f.links = append(f.links, flowsim.Link{Name: u.Rack + ".down", CapacityBytesPerSecond: u.DownBps})
		}
	}
	return f
}

// route is a copy's links from node src to node dst.
func (f *fabric) route(src, dst int) []flowsim.LinkID {
	out := []flowsim.LinkID{flowsim.LinkID(src*perNode + diskRead), flowsim.LinkID(src*perNode + nicSend)}
	if rs, rd := f.rack[src], f.rack[dst]; rs != rd {
		if l, ok := f.up[rs]; ok {
			out = append(out, l)
		}
		if l, ok := f.down[rd]; ok {
			out = append(out, l)
		}
	}
	return append(out, flowsim.LinkID(dst*perNode+nicRecv), flowsim.LinkID(dst*perNode+diskWrite))
}
