package movesim

import (
	"fmt"
	"math"
	"slices"

	"github.com/kuradb/kura/internal/flowsim"
	"github.com/kuradb/kura/internal/move"
)

// driver starts a schedule's copies as its stream limits allow.
type driver struct {
	r   *move.Recovery
	s   *move.Schedule
	f   *fabric
	sim *flowsim.Sim

	src, dst             []int // per position in Order: node indexes
	cross                []bool
	started              []bool
	pending              [][]int // per node: positions it sends or receives, in order
	head                 []int   // per node: pending[n][:head[n]] are all started
	rackPending          map[string][]int
	rackHead             map[string]int
	sendLimit, recvLimit []int // per node; 0 is none
	sending, receiving   []int
	rackOut, rackIn      map[string]int
	rackLimit            map[string]move.Streams
	byFlow               []int // flow ID to position in Order
	start, end           []float64
	maxActive            int
}

func newDriver(r *move.Recovery, s *move.Schedule, f *fabric, sim *flowsim.Sim) *driver {
	n := len(r.Fabric.Nodes)
	d := &driver{r: r, s: s, f: f, sim: sim, started: make([]bool, len(s.Order)),
		sendLimit: make([]int, n), recvLimit: make([]int, n), sending: make([]int, n), receiving: make([]int, n),
		rackOut: map[string]int{}, rackIn: map[string]int{}, rackLimit: s.RackStreams,
		pending: make([][]int, n), head: make([]int, n), rackPending: map[string][]int{}, rackHead: map[string]int{},
		start: make([]float64, len(s.Order)), end: make([]float64, len(s.Order))}
	for i, h := range r.Fabric.Nodes {
		st := s.NodeStreams(h.ID)
		d.sendLimit[i], d.recvLimit[i] = st.Send, st.Receive
	}
	for k, a := range s.Order {
		src, dst := f.index[a.Source], f.index[a.Destination]
		d.src, d.dst = append(d.src, src), append(d.dst, dst)
		d.cross = append(d.cross, f.rack[src] != f.rack[dst])
		d.pending[src] = append(d.pending[src], k)
		d.pending[dst] = append(d.pending[dst], k)
		if d.cross[k] {
			for _, rk := range []string{f.rack[src], f.rack[dst]} {
				if _, limited := s.RackStreams[rk]; limited {
					d.rackPending[rk] = append(d.rackPending[rk], k)
				}
			}
		}
	}
	return d
}

func below(n, limit int) bool { return limit == 0 || n < limit }

// startable reports whether the copy at position k may start now.
func (d *driver) startable(k int) bool {
	s, t := d.src[k], d.dst[k]
	if !below(d.sending[s], d.sendLimit[s]) || !below(d.receiving[t], d.recvLimit[t]) {
		return false
	}
	if d.cross[k] {
		rs, rt := d.f.rack[s], d.f.rack[t]
		if !below(d.rackOut[rs], d.rackLimit[rs].Send) || !below(d.rackIn[rt], d.rackLimit[rt].Receive) {
			return false
		}
	}
	return true
}

func (d *driver) begin(k int) error {
	a := d.s.Order[k]
	id, err := d.sim.Start(flowsim.Flow{SizeBytes: float64(d.r.Copies[a.Copy].Bytes), Route: d.f.route(d.src[k], d.dst[k])})
	if err != nil {
		return fmt.Errorf("movesim: copy %d: %w", a.Copy, err)
	}
	for len(d.byFlow) <= int(id) {
		d.byFlow = append(d.byFlow, -1)
	}
	d.byFlow[id] = k
	d.started[k] = true
	d.start[k] = d.sim.Now()
	d.sending[d.src[k]]++
	d.receiving[d.dst[k]]++
	if d.cross[k] {
		d.rackOut[d.f.rack[d.src[k]]]++
		d.rackIn[d.f.rack[d.dst[k]]]++
	}
	return nil
}

func (d *driver) finish(k int) {
	d.end[k] = d.sim.Now()
	d.sending[d.src[k]]--
	d.receiving[d.dst[k]]--
	if d.cross[k] {
		d.rackOut[d.f.rack[d.src[k]]]--
		d.rackIn[d.f.rack[d.dst[k]]]--
	}
}

// fill starts, in order, every copy not started that its limits allow, among the copies of
// the nodes and racks given (all of them at the start): only a copy that shares a node or
// a rack with one that completed can have become startable.
func (d *driver) fill(nodes []int, racks []string) error {
	var cands []int
	for _, n := range nodes {
		for d.head[n] < len(d.pending[n]) && d.started[d.pending[n][d.head[n]]] {
			d.head[n]++
		}
		cands = append(cands, d.pending[n][d.head[n]:]...)
	}
	for _, rk := range racks {
		list, h := d.rackPending[rk], d.rackHead[rk]
		for h < len(list) && d.started[list[h]] {
			h++
		}
		d.rackHead[rk] = h
		cands = append(cands, list[h:]...)
	}
	slices.Sort(cands)
	for k, pos := range cands {
		if (k > 0 && cands[k-1] == pos) || d.started[pos] || !d.startable(pos) {
			continue
		}
		if err := d.begin(pos); err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) run() error {
	all := make([]int, len(d.pending))
	for n := range all {
		all[n] = n
	}
	if err := d.fill(all, nil); err != nil {
		return err
	}
	var nodes []int
	var racks []string
	for d.sim.Active() > 0 {
		d.maxActive = max(d.maxActive, d.sim.Active())
		_, done := d.sim.Next()
		nodes, racks = nodes[:0], racks[:0]
		for _, id := range done {
			k := d.byFlow[id]
			d.finish(k)
			nodes = append(nodes, d.src[k], d.dst[k])
			if d.cross[k] {
				racks = append(racks, d.f.rack[d.src[k]], d.f.rack[d.dst[k]])
			}
		}
		slices.Sort(nodes)
		slices.Sort(racks)
		if err := d.fill(slices.Compact(nodes), slices.Compact(racks)); err != nil {
			return err
		}
	}
	for k, ok := range d.started {
		if !ok {
			d.end[k] = math.NaN()
			return fmt.Errorf("movesim: copy %d never started (a stream limit of 0 where one is needed?)", d.s.Order[k].Copy)
		}
	}
	return nil
}
