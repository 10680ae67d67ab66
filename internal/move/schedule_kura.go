package move

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/kuradb/kura/internal/ring"
)

// Kura is kura's re-replication scheduler (docs/design/rereplication.md). It balances
// time, not bytes: every resource (a node's send and receive, a rack's uplink and downlink)
// is charged the seconds a copy takes on it at its rate, and
//
//  1. assigns copies largest first (then those with fewest choices), each to the source
//     and destination after which the busiest of the resources it crosses is least busy:
//     the longest-processing-time rule over unrelated resources;
//  2. moves copies off the busiest resource while some move lowers it without making
//     another as busy: one copy, or a chain of up to 4 (a copy to another source, one of
//     whose copies moves on); steps 1 and 2 run again with the copies that have the
//     fewest choices first, and the better result is kept;
//  3. orders the copies so that the resource with the most work left always starts next
//     (the copy whose busiest resource has the most seconds still unordered goes first),
//     so the critical node starts at once and no node's work is left for the end;
//  4. lets each node run as many copies at once as keeps its send and receive busy when
//     its peers share theirs: StreamsPerRate copies per its rate over the median rate of
//     the other side (at least 2); and each rack as many across its uplink as fill it.
type Kura struct {
	// StreamsPerRate scales the per-node and per-rack stream limits (step 4); 0 means 8.
	// Zero limits are never produced: kura does not leave a disk idle for a fixed cap.
	StreamsPerRate float64
}

// Name implements Scheduler.
func (Kura) Name() string { return "kura" }

// Schedule implements Scheduler.
func (k Kura) Schedule(r *Recovery) (*Schedule, error) {
	order := make([]int, len(r.Copies))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(r.Copies[b].Bytes, r.Copies[a].Bytes); c != 0 {
			return c
		}
		return cmp.Compare(len(r.sources[a])*len(r.candidates[a]), len(r.sources[b])*len(r.candidates[b]))
	})
	// A second order places the copies with the fewest choices first; the better of the
	// two, each improved, is kept (either can miss what the other finds, and when free
	// space is tight the second may place copies the first cannot).
	second := slices.Clone(order)
	slices.SortStableFunc(second, func(a, b int) int {
		return cmp.Compare(len(r.sources[a])*len(r.candidates[a]), len(r.sources[b])*len(r.candidates[b]))
	})
	var p *kuraBalancer
	var err error
	for _, o := range [][]int{order, second} {
		q, e := assignInOrder(r, o)
		if e != nil {
			err = e
			continue
		}
		q.improve()
		if p == nil || q.peak() < p.peak() {
			p = q
		}
	}
	if p == nil {
		return nil, err
	}
	s := &Schedule{Scheduler: k.Name()}
	for _, i := range p.startOrder() {
		s.Order = append(s.Order, Assignment{Copy: i, Source: r.Fabric.Nodes[p.src[i]].ID, Destination: r.Fabric.Nodes[p.dst[i]].ID})
	}
	k.streams(r, s)
	return s, nil
}

// assignInOrder places the copies in order, each where the busiest resource it crosses is
// least busy after it (step 1).
func assignInOrder(r *Recovery, order []int) (*kuraBalancer, error) {
	p := newBalancer(r)
	for _, i := range order {
		s, d, _ := p.best(i, math.Inf(1))
		if d < 0 {
			return nil, p.t.stuck(i)
		}
		p.assign(i, s, d)
	}
	return p, nil
}

// kuraBalancer holds the seconds charged to each resource: node n's send is n, its receive
// N+n; rack k's uplink 2N+k, its downlink 2N+R+k.
type kuraBalancer struct {
	r        *Recovery
	t        *tracker
	rate     []float64 // per resource; 0: not limited
	busy     []float64 // seconds charged
	src, dst []int     // per copy, -1 until assigned
	nodes    int
	byNode   [2][][]int // the copies each node sends (side 0) and receives (side 1)
}

func newBalancer(r *Recovery) *kuraBalancer {
	n, k := len(r.Fabric.Nodes), len(r.racks)
	p := &kuraBalancer{r: r, t: newTracker(r), rate: make([]float64, 2*n+2*k), busy: make([]float64, 2*n+2*k),
		src: slices.Repeat([]int{-1}, len(r.Copies)), dst: slices.Repeat([]int{-1}, len(r.Copies)), nodes: n,
		byNode: [2][][]int{make([][]int, n), make([][]int, n)}}
	copy(p.rate, r.sendBps)
	copy(p.rate[n:], r.recvBps)
	copy(p.rate[2*n:], r.upBps)
	copy(p.rate[2*n+k:], r.downBps)
	return p
}

// resources returns the resources a copy from s to d crosses (2 or 4; rack links only
// where limited), in out.
func (p *kuraBalancer) resources(s, d int, out []int) []int {
	out = append(out[:0], s, p.nodes+d)
	if rs, rd := p.r.rack[s], p.r.rack[d]; rs != rd {
		if p.r.upBps[rs] > 0 {
			out = append(out, 2*p.nodes+rs)
		}
		if p.r.downBps[rd] > 0 {
			out = append(out, 2*p.nodes+len(p.r.racks)+rd)
		}
	}
	return out
}

func (p *kuraBalancer) charge(i, s, d int, sign float64) {
	var buf [4]int
	for _, x := range p.resources(s, d, buf[:0]) {
		p.busy[x] += sign * float64(p.r.Copies[i].Bytes) / p.rate[x]
	}
}

func (p *kuraBalancer) assign(i, s, d int) {
	p.src[i], p.dst[i] = s, d
	p.byNode[0][s] = append(p.byNode[0][s], i)
	p.byNode[1][d] = append(p.byNode[1][d], i)
	p.t.received[d] += p.r.Copies[i].Bytes
	p.t.chosen[p.r.Copies[i].Group] = append(p.t.chosen[p.r.Copies[i].Group], d)
	p.charge(i, s, d, 1)
}

func (p *kuraBalancer) unassign(i int) {
	s, d := p.src[i], p.dst[i]
	p.charge(i, s, d, -1)
	p.t.received[d] -= p.r.Copies[i].Bytes
	g := p.r.Copies[i].Group
	if k := slices.Index(p.t.chosen[g], d); k >= 0 {
		p.t.chosen[g] = slices.Delete(p.t.chosen[g], k, k+1)
	}
	p.byNode[0][s] = slices.DeleteFunc(p.byNode[0][s], func(j int) bool { return j == i })
	p.byNode[1][d] = slices.DeleteFunc(p.byNode[1][d], func(j int) bool { return j == i })
	p.src[i], p.dst[i] = -1, -1
}

// best returns the source and destination for copy i (unassigned) after which the busiest
// resource it crosses is least busy, below limit; ties go to the pair whose resources add
// up to the least (so a copy stays on its rack unless crossing is better), then to the
// earlier nodes. d is -1 when none is below limit.
func (p *kuraBalancer) best(i int, limit float64) (src, dst int, busiest float64) {
	b := float64(p.r.Copies[i].Bytes)
	src, dst, busiest = -1, -1, limit
	bestSum := math.Inf(1)
	for _, s := range p.r.sources[i] {
		ts := p.busy[s] + b/p.rate[s]
		if ts > busiest {
			continue
		}
		for _, d32 := range p.r.candidates[i] {
			d := int(d32)
			td := p.busy[p.nodes+d] + b/p.rate[p.nodes+d]
			worst, sum := max(ts, td), ts+td
			if worst > busiest || (worst == busiest && sum >= bestSum) {
				continue
			}
			if rs, rd := p.r.rack[s], p.r.rack[d]; rs != rd {
				if x := 2*p.nodes + rs; p.rate[x] > 0 {
					t := p.busy[x] + b/p.rate[x]
					worst, sum = max(worst, t), sum+t
				}
				if x := 2*p.nodes + len(p.r.racks) + rd; p.rate[x] > 0 {
					t := p.busy[x] + b/p.rate[x]
					worst, sum = max(worst, t), sum+t
				}
				if worst > busiest || (worst == busiest && sum >= bestSum) {
					continue
				}
			}
			if !p.fits(i, d) {
				continue
			}
			src, dst, busiest, bestSum = s, d, worst, sum
		}
	}
	return src, dst, busiest
}

// fits reports whether copy i, one of whose candidates d is, may still go there: room
// left, and the rules kept with the other copies of its range.
func (p *kuraBalancer) fits(i, d int) bool {
	c := &p.r.Copies[i]
	if p.t.received[d]+c.Bytes > p.r.Fabric.Nodes[d].FreeBytes {
		return false
	}
	sib := p.t.chosen[c.Group]
	return len(sib) == 0 || p.r.allows(append(slices.Clone(p.r.peers[i]), sib...), d, !c.Relaxed)
}

// improve moves copies off the busiest resource while a move lowers it without making
// another resource as busy: one copy to another source and destination, or, when no such
// move exists, a chain (ejection chain): a copy to another source (or destination) that
// the move makes the busiest, one of whose copies moves on, up to chainDepth moves.
func (p *kuraBalancer) improve() {
	var buf [4]int
	visited := make([]bool, p.nodes)
	for range 4 * len(p.r.Copies) {
		top := 0
		for x := range p.busy {
			if p.busy[x] > p.busy[top] {
				top = x
			}
		}
		peak := p.busy[top]
		theta := peak * (1 - 1e-9)
		bestI, bestS, bestD, bestPeak := -1, -1, -1, theta
		for i := range p.r.Copies {
			if !slices.Contains(p.resources(p.src[i], p.dst[i], buf[:0]), top) {
				continue
			}
			s0, d0 := p.src[i], p.dst[i]
			p.unassign(i)
			if s, d, w := p.best(i, bestPeak); d >= 0 && (s != s0 || d != d0) {
				bestI, bestS, bestD, bestPeak = i, s, d, w
			}
			p.assign(i, s0, d0)
		}
		if bestI >= 0 {
			p.unassign(bestI)
			p.assign(bestI, bestS, bestD)
			continue
		}
		if top >= 2*p.nodes {
			return // a rack link no single move relieves
		}
		clear(visited)
		side, node := top/p.nodes, top%p.nodes
		if !p.relieve(node, node, side, theta, chainDepth, visited) {
			return
		}
	}
}

func (p *kuraBalancer) peak() float64 { return slices.Max(p.busy) }

// chainDepth is the most moves in one chain of improve.
const chainDepth = 4

// relieve moves one of the copies node x sends (side 0) or receives (side 1) to another
// node on that side, so that x's resource drops below theta and every resource the move
// touches stays below it, the new node excepted, which then relieves itself in turn, at
// most depth moves in all; a chain may end back at root, the node it started from (a
// swap), if root stays below theta. Nodes a failed chain went through are not tried again
// (visited), as in an augmenting-path search. It reports success; on failure nothing has
// moved.
func (p *kuraBalancer) relieve(root, x, side int, theta float64, depth int, visited []bool) bool {
	var buf [4]int
	for _, i := range slices.Clone(p.byNode[side][x]) {
		s0, d0 := p.src[i], p.dst[i]
		alts := p.r.sources[i]
		if side == 1 {
			alts = nil
		}
		b := float64(p.r.Copies[i].Bytes)
		try := func(y int) bool {
			if visited[y] {
				return false
			}
			s, d := s0, y
			if side == 0 {
				s, d = y, d0
			}
			// Every resource the moved copy would cross stays below theta, y's own side
			// excepted (which a further move may relieve): checked before moving anything.
			for _, z := range p.resources(s, d, buf[:0]) {
				if z != side*p.nodes+y && p.busy[z]+b/p.rate[z] >= theta {
					return false
				}
			}
			if side == 1 && !p.fits(i, y) {
				return false
			}
			p.assign(i, s, d)
			if p.busy[side*p.nodes+y] < theta {
				return true
			}
			if depth > 1 && y != root {
				visited[y] = true
				if p.relieve(root, y, side, theta, depth-1, visited) {
					return true
				}
			}
			p.unassign(i)
			return false
		}
		p.unassign(i)
		if p.busy[side*p.nodes+x] >= theta {
			p.assign(i, s0, d0) // moving this copy alone does not relieve x
			continue
		}
		if side == 0 {
			for _, y := range alts {
				if y != s0 && try(y) {
					return true
				}
			}
		} else {
			for _, y := range p.r.candidates[i] {
				if int(y) != d0 && try(int(y)) {
					return true
				}
			}
		}
		p.assign(i, s0, d0)
	}
	return false
}

// startOrder returns the copies in start order: repeatedly the copy whose busiest
// resource has the most seconds of work not yet ordered (ties: larger, then earlier).
func (p *kuraBalancer) startOrder() []int {
	left := slices.Clone(p.busy)
	var buf [4]int
	priority := func(i int) float64 {
		pr := 0.0
		for _, x := range p.resources(p.src[i], p.dst[i], buf[:0]) {
			pr = max(pr, left[x])
		}
		return pr
	}
	h := &copyHeap{r: p.r}
	for i := range p.r.Copies {
		h.items = append(h.items, heapItem{copy: i, priority: priority(i)})
	}
	heap.Init(h)
	out := make([]int, 0, len(p.r.Copies))
	for h.Len() > 0 {
		it := heap.Pop(h).(heapItem)
		if pr := priority(it.copy); pr < it.priority*(1-1e-12) {
			heap.Push(h, heapItem{copy: it.copy, priority: pr}) // stale: its resources were ordered meanwhile
			continue
		}
		out = append(out, it.copy)
		b := float64(p.r.Copies[it.copy].Bytes)
		for _, x := range p.resources(p.src[it.copy], p.dst[it.copy], buf[:0]) {
			left[x] -= b / p.rate[x]
		}
	}
	return out
}

type heapItem struct {
	copy     int
	priority float64
}

type copyHeap struct {
	r     *Recovery
	items []heapItem
}

func (h *copyHeap) Len() int { return len(h.items) }
func (h *copyHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.priority != y.priority {
		return x.priority > y.priority
	}
	if bx, by := h.r.Copies[x.copy].Bytes, h.r.Copies[y.copy].Bytes; bx != by {
		return bx > by
	}
	return x.copy < y.copy
}
func (h *copyHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *copyHeap) Push(x any)    { h.items = append(h.items, x.(heapItem)) }
func (h *copyHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// defaultStreamsPerRate: seed 002's platforms (equal disks, equal 67 MB blocks) reach 0.95
// to 1.00 of the bound at 2 streams a node, 0.96 to 1.00 at 8, and the static load's ratio
// with no limit at all (docs/design/rereplication.md has the table).
const defaultStreamsPerRate = 8

// streams sets the per-node and per-rack limits (step 4 of Kura).
func (k Kura) streams(r *Recovery, s *Schedule) {
	per := k.StreamsPerRate
	if per == 0 {
		per = defaultStreamsPerRate
	}
	var sends, recvs []float64
	for n := range r.Fabric.Nodes {
		if r.live[n] {
			sends, recvs = append(sends, r.sendBps[n]), append(recvs, r.recvBps[n])
		}
	}
	medSend, medRecv := median(sends), median(recvs)
	s.Streams = map[ring.NodeID]Streams{}
	for n, h := range r.Fabric.Nodes {
		if !r.live[n] {
			continue
		}
		s.Streams[h.ID] = Streams{Send: max(2, int(math.Ceil(per*r.sendBps[n]/medRecv))),
			Receive: max(2, int(math.Ceil(per*r.recvBps[n]/medSend)))}
	}
	for rk, name := range r.racks {
		var st Streams
		if r.upBps[rk] > 0 {
			st.Send = max(2, int(math.Ceil(per*r.upBps[rk]/medRecv)))
		}
		if r.downBps[rk] > 0 {
			st.Receive = max(2, int(math.Ceil(per*r.downBps[rk]/medSend)))
		}
		if st != (Streams{}) {
			if s.RackStreams == nil {
				s.RackStreams = map[string]Streams{}
			}
			s.RackStreams[name] = st
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 1
	}
	ys := slices.Sorted(slices.Values(xs))
	return ys[len(ys)/2]
}
