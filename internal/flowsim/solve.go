package flowsim

import "fmt"

// The sharing is recomputed lazily, once per instant at which flows started or finished.
//
// What a solve recomputes (and why it is exact). Call a link tight when the rates of its flows
// add up to its capacity. In a max-min allocation every flow has a bottleneck: a tight link on
// which no flow has a larger rate. Let F be the flows to recompute and R the tight links
// reached from the changed flows:
//
//   - start with the flows started since the last solve in F, and the links of those and of
//     the flows that finished as links to look at;
//   - a link looked at that was tight after the last solve goes into R and all its flows into
//     F; every link of a flow in F is looked at.
//
// Every other flow keeps its rate. That is right: its bottleneck was tight, so if any flow of
// F crossed it, or a finished flow did, it would be in R and the flow in F; so nothing that
// crosses its bottleneck changed, and the bottleneck is still tight with the flow's rate the
// largest on it. The flows in F are then filled progressively on the links they cross, each
// link's capacity less what the fixed flows use. A flow frozen on a link of R has the largest
// rate there, since all that link's flows are in F. A flow frozen on a link outside R (one
// that was not tight before) may not: a fixed flow there may be faster. solve checks that
// case and, when it happens, adds the link to R and starts over (at worst R grows to every
// link, which is a solve from scratch). So every flow ends with a bottleneck, which is the
// definition of the max-min allocation, and that allocation is unique.
//
// SimGrid's selective update (System::update_modified_cnst_set_rec) recomputes the whole
// connected component of the changed constraints, through every link. Here the closure only
// passes through tight links: in a cluster every flow crosses a rack uplink, so the connected
// component is every active flow, while the tight links around a completed flow are usually
// its destination's disk and little else.

const (
	// tightTolerance: a link whose load is within this fraction of its capacity counts as
	// tight. Calling a link tight that is not only makes a solve look at more flows, so the
	// tolerance errs on the generous side of rounding.
	tightTolerance = 1e-6
	// rateTolerance: a fixed flow faster than a link's fair share by more than this fraction
	// makes the solve widen (see above); within it the two are equal up to rounding.
	rateTolerance = 1e-9
)

// solver holds a solve's scratch space, kept between solves so that a solve allocates
// nothing once the simulation is warm. Marks are epochs, so nothing needs clearing.
type solver struct {
	epoch  uint32
	lk     []linkScratch
	fl     []flowScratch
	fa     []FlowID // F: the flows whose rates are recomputed
	sub    []LinkID // the links looked at: every link of F, and those of finished flows
	queue  []LinkID
	forced []LinkID // links added to R after a failed check, for the rest of this solve
	shares minHeap  // links of sub with flows of F not yet frozen, by fair share
}

type linkScratch struct {
	visit    uint32 // == epoch: in sub
	inR      uint32 // == epoch: in R
	forced   uint32 // == epoch: in forced
	faFlows  []FlowID
	faOld    float64 // the old rates of faFlows, summed
	residual float64 // capacity left for the flows of F not yet frozen
	left     int32   // flows of F on the link not yet frozen
}

type flowScratch struct {
	fa      uint32 // == epoch: in F
	frozen  uint32 // == epoch: its new rate is set
	newRate float64
}

func (v *solver) init(links int) {
	v.lk = make([]linkScratch, links)
	v.shares.pos = make([]int32, links)
	for i := range v.shares.pos {
		v.shares.pos[i] = -1
	}
}

// solve recomputes the rates of the flows that the changes since the last solve can affect.
func (s *Sim) solve() {
	if !s.dirty {
		return
	}
	v := &s.solver
	for len(v.fl) < len(s.flows) {
		v.fl = append(v.fl, flowScratch{})
	}
	v.forced = v.forced[:0]
	for {
		v.epoch++
		s.collect()
		bad, ok := s.fill()
		if ok {
			break
		}
		v.forced = append(v.forced, bad)
	}
	s.commit()
	s.added, s.freed, s.dirty = s.added[:0], s.freed[:0], false
}

// collect finds F and R (see the top of this file).
func (s *Sim) collect() {
	v := &s.solver
	v.fa, v.sub, v.queue = v.fa[:0], v.sub[:0], v.queue[:0]
	for _, l := range v.forced {
		v.lk[l].forced = v.epoch
	}
	for _, l := range s.freed {
		s.look(l)
	}
	for _, id := range s.added {
		s.addToF(id)
	}
	if s.full {
		for id := range s.flows {
			if s.flows[id].active {
				s.addToF(FlowID(id))
			}
		}
	}
	for i := 0; i < len(v.queue); i++ {
		l := v.queue[i]
		x := &v.lk[l]
		if !s.links[l].tight && x.forced != v.epoch && !s.full {
			continue
		}
		x.inR = v.epoch
		for _, id := range s.links[l].flows {
			s.addToF(id)
		}
	}
}

// look adds l to the links looked at.
func (s *Sim) look(l LinkID) {
	v := &s.solver
	x := &v.lk[l]
	if x.visit == v.epoch {
		return
	}
	x.visit, x.faFlows, x.faOld = v.epoch, x.faFlows[:0], 0
	v.sub = append(v.sub, l)
	v.queue = append(v.queue, l)
}

// addToF adds an active flow to F and looks at its links.
func (s *Sim) addToF(id FlowID) {
	v := &s.solver
	if v.fl[id].fa == v.epoch {
		return
	}
	v.fl[id].fa = v.epoch
	v.fa = append(v.fa, id)
	f := &s.flows[id]
	for _, l := range f.route {
		s.look(l)
		x := &v.lk[l]
		x.faFlows = append(x.faFlows, id)
		x.faOld += f.rate
	}
}

// fill sets the new rates of F by progressive filling, which is SimGrid's
// MaxMin::maxmin_solve with every weight 1: repeatedly take the link with the smallest fair
// share (capacity left over flows not yet frozen), freeze its flows at that share, and take
// their rates off the other links they cross. A heap keeps the links by share, so a solve
// costs O(e log l) for e route entries of F over l links, instead of SimGrid's scan of every
// constraint per saturation round. It returns ok false and a link to add to R when a flow of
// F froze on a link outside R where a fixed flow is faster.
func (s *Sim) fill() (bad LinkID, ok bool) {
	v := &s.solver
	v.shares.clear()
	for _, l := range v.sub {
		x := &v.lk[l]
		if len(x.faFlows) == 0 {
			continue
		}
		x.residual = s.links[l].capacity
		if x.inR != v.epoch {
			x.residual -= s.links[l].load - x.faOld
		}
		x.left = int32(len(x.faFlows))
		v.shares.set(int32(l), max(x.residual, 0)/float64(x.left))
	}
	for v.shares.len() > 0 {
		it := v.shares.pop()
		l, share := LinkID(it.id), it.key
		x := &v.lk[l]
		for _, id := range x.faFlows {
			fx := &v.fl[id]
			if fx.frozen == v.epoch {
				continue
			}
			fx.frozen, fx.newRate = v.epoch, share
			for _, m := range s.flows[id].route {
				if m == l {
					continue
				}
				y := &v.lk[m]
				y.residual -= share
				if y.left--; y.left == 0 {
					v.shares.remove(int32(m))
				} else {
					v.shares.set(int32(m), max(y.residual, 0)/float64(y.left))
				}
			}
		}
		x.left = 0
		if x.inR == v.epoch {
			continue
		}
		for _, id := range s.links[l].flows {
			if v.fl[id].fa != v.epoch && s.flows[id].rate > share*(1+rateTolerance) {
				return l, false
			}
		}
	}
	return 0, true
}

// commit applies the new rates: each changed flow's remaining bytes are brought up to now
// before its rate changes, and its predicted completion moves; the links looked at get
// their new loads and tightness.
func (s *Sim) commit() {
	v := &s.solver
	for _, id := range v.fa {
		f := &s.flows[id]
		r := v.fl[id].newRate
		if !(r > 0) {
			panic(fmt.Sprintf("flowsim: bug: flow %d got rate %v", id, r))
		}
		if r == f.rate && s.finishes.contains(int32(id)) {
			continue
		}
		f.remaining = max(f.remaining-f.rate*(s.now-f.last), 0)
		f.last, f.rate = s.now, r
		s.finishes.set(int32(id), s.now+f.remaining/r)
	}
	for _, l := range v.sub {
		x, ls := &v.lk[l], &s.links[l]
		switch {
		case len(ls.flows) == 0:
			ls.load = 0
		case x.inR == v.epoch:
			// Every flow of the link is in F: sum afresh, so rounding does not build up.
			ls.load = 0
			for _, id := range x.faFlows {
				ls.load += s.flows[id].rate
			}
		default:
			ls.load -= x.faOld
			for _, id := range x.faFlows {
				ls.load += s.flows[id].rate
			}
		}
		ls.tight = ls.load >= ls.capacity*(1-tightTolerance)
		if s.record {
			s.sample(l)
		}
	}
}
