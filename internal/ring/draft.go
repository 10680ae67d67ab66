package ring

import (
	"fmt"
	"math/bits"
)

// draft is the balanced allocator's working copy of a ring, edited in place one token at a
// time: the vnodes in a circular doubly linked list in token order (an insertion next to a
// known vnode and a removal are O(1)), each range's replica set under the strategy, and
// every node's replicated token space, summed exactly.
//
// What makes it incremental is that a range's replica set depends only on the first few
// vnodes of the walk from its end: its extent (ext), the vnodes the walk read until the
// strategy's rule was satisfied. A token added or removed at a point changes the replica
// sets of only the ranges whose walk reads that point: the ranges ending up to ext vnodes
// before it, found by walking backwards (maxExt bounds the walk: a few vnodes in a cluster
// with more hosts and racks than RF). Two things reach further, and both are rare once a
// cluster has RF hosts:
//   - A walk also stops when every node, host or rack with tokens holds a replica (as the
//     strategy counts them: nothing more can be taken), and EngineDiverse covers as many
//     roles as the ring allows: counts over the whole ring (globals). When one of them
//     below RF changes (a node's first token, or the removal of its last), every range is
//     recomputed.
//   - An open walk went round the whole ring without satisfying its rule (an EngineDiverse
//     walk that searched for its cover, or a RackAware one whose racks are blocked by
//     hosts): its replica set also depends on which nodes have tokens at all. A node's
//     first token, or the removal of its last, recomputes every open range. Within the
//     ring it depends only on the vnodes up to its last choice (ext), because every rule
//     here rejects a node by what has been chosen, which only grows along the walk.
//
// A draft is not safe for concurrent use.
type draft struct {
	kind     placement
	strategy Strategy
	rf       int

	nodes   []Node    // Tokens kept current for the nodes the draft adds tokens to
	vids    [][]int32 // vids[i][k]: the vnode of nodes[i].Tokens[k], for nodes given tokens by the draft
	index   map[NodeID]int32
	hostNum map[string]int32
	rackNum map[string]int32
	host    []int32 // per node: its host, numbered
	rack    []int32 // per node: its rack, numbered
	ntok    []int32 // per node: its vnodes in the draft
	g       globals // over the nodes with tokens

	// Vnodes by id; ids of removed vnodes are reused.
	tok      []Token
	own      []int32
	nxt, prv []int32
	reps     []int32 // rf per vnode: its range's replica set, -1 past its end
	ext      []int32 // vnodes its walk read up to its last choice
	open     []bool  // its walk went round the ring without satisfying the rule
	free     []int32
	live     int
	head     int32 // a live vnode, -1 when none

	extCount []int32 // ranges by ext
	maxExt   int32
	openList []int32 // the open ranges
	openPos  []int32 // by vnode: index in openList, -1

	held  []u128    // node*rf + l: the token space node holds among the first l+1 replicas
	heldF []float64 // held as shares
	total []u128    // per l: held summed over nodes

	widest widest
	topBuf []int32
	walk   walker // reused by EngineDiverse walks

	weights    []float64 // the score's weight of each level (joinScore's, or spread's: the last only)
	levelF     []float64 // per level: its weight / its total^2 (see changeScore)
	cache      evalCache // candidate evaluations: see draftcache.go
	checkCache bool      // tests: compare every cache hit with a fresh evaluation
	join       bool      // the score is joinScore (else the spread of ReplicatedOwnership)
	exactTies  int       // the largest ring on which ties are broken as the old allocator did, and widest orders equal ranges as it did
	deltas     []float64 // scratch of bestDelta
	version    int       // commits so far

	// Scratch of one change (prepare, then commit or abort).
	presence bool // a node gains its first token or loses its last
	all      bool // every range is touched
	chg      []change
	chgPos   []int32 // by vnode: its index in chg, when mark is epoch
	newReps  []int32 // rf per change
	mark     []uint32
	epoch    uint32
	slot     []int32   // per node: its index in dNodes, -1
	dNodes   []int32   // nodes whose held changes
	dHeld    []u128    // len(dNodes)*rf
	dShares  []float64 // dHeld as shares
	short    bool      // a changed range has fewer than rf replicas
	delta    float64   // the change in score
	saved    globals   // before the change
	base     float64   // score of the committed state, when baseOK
	baseOK   bool
	walkEnd  int32 // the furthest vnode the last walk read
	spanAt   int32 // the vnode the change is before (or after the removed one)
	spanLo   Token // the change read the ranges in (spanLo, spanHi]
	spanHi   Token
	spanLoV  int32 // the vnodes of spanLo and spanHi
	spanHiV  int32
	spanBack int32 // vnodes from spanLoV to spanAt, at most
	spanFwd  int32 // vnodes from spanAt to spanHiV, at most
	spanAll  bool  // or more of the ring than that
	snap     *Ring // for strategies the draft cannot walk itself
	gCache   struct {
		s, delta int32
		version  int
		g        globals
		ok       bool
	}
}

// placement is a strategy the draft walks itself.
type placement uint8

const (
	otherPlacement placement = iota
	simplePlacement
	hostPlacement
	rackPlacement
	diversePlacement
)

// change is one range a token's insertion or removal changes: its old replica set and
// width, and its new ones.
type change struct {
	v          int32
	walk       bool // recompute its replica set (else the width alone changes)
	hasOld     bool // false for the inserted vnode
	hasNew     bool // false for the removed vnode
	oldW, newW u128
	n          int // replicas in the new set
	ext        int32
	open       bool
}

// u128 is an unsigned 128-bit integer: a node's held token space, summed exactly so that
// adding and taking away the same range gives back the same value.
type u128 struct{ hi, lo uint64 }

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return u128{a.hi + b.hi + c, lo}
}

func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	return u128{a.hi - b.hi - c, lo}
}

// share is a as a share of the token space (a / 2^64).
func (a u128) share() float64 { return float64(a.hi) + float64(a.lo)*0x1p-64 }

// signedShare is share for a two's-complement difference.
func (a u128) signedShare() float64 {
	if int64(a.hi) < 0 {
		return -u128{}.sub(a).share()
	}
	return a.share()
}

// newDraft copies r (nil: no tokens yet) and appends joiners without tokens. On rings of at
// most exactTies vnodes it breaks ties and orders equally wide ranges as the old allocator
// did (see exactTieVnodes).
func newDraft(r *Ring, joiners []Node, strategy Strategy, rf int, exactTies int) *draft {
	d := &draft{strategy: strategy, rf: rf, head: -1, index: map[NodeID]int32{},
		hostNum: map[string]int32{}, rackNum: map[string]int32{}, checkCache: verifyCache, exactTies: exactTies}
	d.cache.gen = 1
	switch strategy.(type) {
	case Simple:
		d.kind = simplePlacement
	case HostAware:
		d.kind = hostPlacement
	case RackAware:
		d.kind = rackPlacement
	case EngineDiverse:
		d.kind = diversePlacement
	}
	d.widest.d = d
	d.walk.d = d
	if r != nil {
		for _, n := range r.nodes {
			d.addNode(n)
		}
		for _, v := range r.vnodes {
			x := d.alloc()
			d.tok[x], d.own[x] = v.token, int32(v.node)
			d.ntok[v.node]++
		}
		for x := range r.vnodes { // ids are r's vnode indexes, in token order
			d.nxt[x], d.prv[x] = int32((x+1)%len(r.vnodes)), int32((x+len(r.vnodes)-1)%len(r.vnodes))
		}
		d.live, d.head = len(r.vnodes), 0
	}
	for _, j := range joiners {
		j.Tokens = nil
		d.addNode(j)
	}
	d.recomputeAll()
	return d
}

// addNode appends a node: its tokens must be linked by the caller.
func (d *draft) addNode(n Node) {
	if _, ok := d.index[n.ID]; ok {
		panic(fmt.Sprintf("ring: balanced allocation given node %q twice", n.ID))
	}
	i := int32(len(d.nodes))
	d.index[n.ID] = i
	d.nodes = append(d.nodes, n)
	d.vids = append(d.vids, nil)
	d.host = append(d.host, number(d.hostNum, n.Host))
	d.rack = append(d.rack, number(d.rackNum, n.Rack))
	d.ntok = append(d.ntok, 0)
	d.slot = append(d.slot, -1)
	d.held = append(d.held, make([]u128, d.rf)...)
	d.heldF = append(d.heldF, make([]float64, d.rf)...)
	d.baseOK = false // the mean share changed
}

// number returns name's number in nums, adding it if new.
func number(nums map[string]int32, name string) int32 {
	n, ok := nums[name]
	if !ok {
		n = int32(len(nums))
		nums[name] = n
	}
	return n
}

// alloc returns a free vnode id.
func (d *draft) alloc() int32 {
	if n := len(d.free); n > 0 {
		x := d.free[n-1]
		d.free = d.free[:n-1]
		return x
	}
	x := int32(len(d.tok))
	d.tok, d.own = append(d.tok, 0), append(d.own, -1)
	d.nxt, d.prv = append(d.nxt, -1), append(d.prv, -1)
	d.reps = append(d.reps, make([]int32, d.rf)...)
	d.ext, d.open = append(d.ext, 0), append(d.open, false)
	d.openPos, d.mark, d.chgPos = append(d.openPos, -1), append(d.mark, 0), append(d.chgPos, 0)
	d.widest.pos = append(d.widest.pos, -1)
	d.cache.grow(x)
	return x
}

// link puts a new vnode of node s with token t before vnode at (any when the draft is
// empty) and returns it.
func (d *draft) link(s int32, t Token, at int32) int32 {
	x := d.alloc()
	d.tok[x], d.own[x] = t, s
	if d.live == 0 {
		d.nxt[x], d.prv[x], d.head = x, x, x
	} else {
		pv := d.prv[at]
		d.nxt[pv], d.prv[x], d.nxt[x], d.prv[at] = x, pv, at, x
	}
	d.live++
	d.snap = nil
	return x
}

// unlink takes vnode x out of the list and frees its id.
func (d *draft) unlink(x int32) {
	if d.live == 1 {
		d.head = -1
	} else {
		pv, nx := d.prv[x], d.nxt[x]
		d.nxt[pv], d.prv[nx] = nx, pv
		if d.head == x {
			d.head = nx
		}
	}
	d.live--
	d.snap = nil
	d.own[x] = -1
	d.free = append(d.free, x)
}

// width is the token space of the range ending at vnode v; a lone vnode's is all of it.
func (d *draft) width(v int32) u128 {
	if d.nxt[v] == v {
		return u128{hi: 1}
	}
	return u128{lo: uint64(d.tok[v]) - uint64(d.tok[d.prv[v]])}
}

// repsOf returns the replica set stored for the range ending at v.
func (d *draft) repsOf(v int32) []int32 {
	r := d.reps[int(v)*d.rf : int(v+1)*d.rf]
	for n, i := range r {
		if i < 0 {
			return r[:n]
		}
	}
	return r
}

// recomputeAll recomputes the globals, every range's replica set and every node's held
// token space from scratch.
func (d *draft) recomputeAll() {
	d.g = d.globals(-1, 0)
	d.cache.reset()
	clear(d.extCount)
	d.maxExt = 0
	for _, v := range d.openList {
		d.openPos[v] = -1
	}
	d.openList = d.openList[:0]
	clear(d.held)
	d.total = make([]u128, d.rf)
	for _, e := range d.widest.heap {
		d.widest.pos[e.v] = -1
	}
	d.widest.heap = d.widest.heap[:0]
	d.snap = nil
	if d.live == 0 {
		return
	}
	v := d.head
	for range d.live {
		out := d.reps[int(v)*d.rf : int(v+1)*d.rf]
		n, ext, open := d.walkFrom(v, out)
		for k := n; k < d.rf; k++ {
			out[k] = -1
		}
		d.setExt(v, ext, open)
		d.addHeld(out[:n], d.width(v))
		d.widest.push(v)
		v = d.nxt[v]
	}
	for k, h := range d.held {
		d.heldF[k] = h.share()
	}
	d.refreshLevels()
	d.baseOK = false
	d.version++
	d.orderWidest()
}

// orderWidest switches widest to midHash order the first time the committed ring has more
// than exactTies vnodes, and never back: a refinement that takes a token out of a ring of
// exactTies+1 vnodes keeps the order the token was placed in, and a trial insertion
// (aborted) never changes it.
func (d *draft) orderWidest() {
	if !d.widest.hashed && d.live > d.exactTies {
		d.widest.hashOrder()
	}
}

// setWeights sets the score (joinScore's weights when join, else spread's).
func (d *draft) setWeights(join bool) {
	d.join, d.weights = join, spreadWeights(d.rf)
	if join {
		d.weights = joinWeights(d.rf)
	}
	d.refreshLevels()
	d.baseOK = false
}

// refreshLevels recomputes each level's weight over its total squared.
func (d *draft) refreshLevels() {
	d.levelF = d.levelF[:0]
	for l := range d.rf {
		f := 0.0
		if l < len(d.weights) && d.weights[l] != 0 {
			t := d.total[l].share()
			f = d.weights[l] / (t * t)
		}
		d.levelF = append(d.levelF, f)
	}
}

// globals are the counts over the nodes with tokens that walks read: a walk stops when
// every node, host or rack (as its strategy counts) holds a replica, since it can take
// nothing more, and EngineDiverse covers as many roles as the ring allows.
type globals struct{ nodes, hosts, racks, coverable int }

// globals returns the globals when node s (if not -1) gains (delta 1) or loses (-1) its
// tokens.
func (d *draft) globals(s int32, delta int32) globals {
	var g globals
	hosts, racks := make([]bool, len(d.hostNum)), make([]bool, len(d.rackNum))
	var nodes []Node
	for i, n := range d.nodes {
		if d.ntok[i] == 0 && int32(i) != s || int32(i) == s && delta < 0 {
			continue
		}
		g.nodes++
		if !hosts[d.host[i]] {
			hosts[d.host[i]] = true
			g.hosts++
		}
		if !racks[d.rack[i]] {
			racks[d.rack[i]] = true
			g.racks++
		}
		nodes = append(nodes, n)
	}
	if d.kind == diversePlacement || d.kind == otherPlacement {
		g.coverable = coverableRoles(nodes)
	}
	return g
}

// globalsMatter reports whether the strategy's walks read differently with g than with the
// draft's globals: only counts below rf stop a walk.
func (d *draft) globalsMatter(g globals) bool {
	differ := func(a, b int) bool { return min(d.rf, a) != min(d.rf, b) }
	switch d.kind {
	case simplePlacement:
		return differ(g.nodes, d.g.nodes)
	case hostPlacement:
		return differ(g.hosts, d.g.hosts)
	case rackPlacement:
		return differ(g.racks, d.g.racks) || differ(g.hosts, d.g.hosts)
	case diversePlacement:
		return differ(g.coverable, d.g.coverable)
	}
	return false
}

// setExt records the extent of v's walk; v must have none recorded.
func (d *draft) setExt(v int32, ext int32, open bool) {
	for int(ext) >= len(d.extCount) {
		d.extCount = append(d.extCount, 0)
	}
	d.extCount[ext]++
	d.maxExt = max(d.maxExt, ext)
	d.ext[v], d.open[v] = ext, open
	if open {
		d.openPos[v] = int32(len(d.openList))
		d.openList = append(d.openList, v)
	}
}

// clearExt forgets the extent of v's walk.
func (d *draft) clearExt(v int32) {
	d.extCount[d.ext[v]]--
	for d.maxExt > 0 && d.extCount[d.maxExt] == 0 {
		d.maxExt--
	}
	if p := d.openPos[v]; p >= 0 {
		last := d.openList[len(d.openList)-1]
		d.openList[p], d.openPos[last] = last, p
		d.openList = d.openList[:len(d.openList)-1]
		d.openPos[v] = -1
	}
}

// addHeld adds width w for each replica of a range at each level it counts at (the replica
// at position p counts among the first l+1 for every l >= p).
func (d *draft) addHeld(reps []int32, w u128) {
	for p, i := range reps {
		for l := p; l < d.rf; l++ {
			h := &d.held[int(i)*d.rf+l]
			*h, d.total[l] = h.add(w), d.total[l].add(w)
		}
	}
}
