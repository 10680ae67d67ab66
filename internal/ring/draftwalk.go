package ring

// The draft's replica walks. Each returns, for the range ending at vnode v, the strategy's
// replica set in the order Strategy.Replicas returns it (written to out, which has room
// for rf), how many vnodes the walk read up to its last choice (ext), and whether it went
// round the ring without satisfying its rule (open); it leaves in walkEnd the furthest
// vnode it read (that mattered, when open). Simple, HostAware and RackAware are
// walked here without allocating, as placement.go's pick walks them (the allocator's
// tests check every strategy against Replicas on a built Ring); EngineDiverse runs its own
// code (walker.choose) over the draft.

// walkFrom computes the replica set of the range ending at v.
func (d *draft) walkFrom(v int32, out []int32) (n int, ext int32, open bool) {
	switch d.kind {
	case simplePlacement:
		return d.walkDistinct(v, out, false, d.g.nodes)
	case hostPlacement:
		return d.walkDistinct(v, out, true, d.g.hosts)
	case rackPlacement:
		return d.walkRacks(v, out)
	case diversePlacement:
		return d.walkDiverse(v, out)
	}
	return d.walkOther(v, out)
}

// walkDistinct takes each node not chosen yet (byHost: on a host not chosen yet) until rf
// are chosen or all there are (there, nodes or hosts with tokens): Simple and HostAware.
func (d *draft) walkDistinct(v int32, out []int32, byHost bool, there int) (int, int32, bool) {
	n, ext := 0, int32(0)
	for k := range d.live {
		i := d.own[v]
		taken := false
		for _, c := range out[:n] {
			if c == i || byHost && d.host[c] == d.host[i] {
				taken = true
				break
			}
		}
		if !taken {
			out[n], ext = i, int32(k+1)
			n++
			if n == d.rf || n == there {
				d.walkEnd = v
				return n, ext, false
			}
		}
		v = d.nxt[v]
	}
	d.walkEnd = d.prv[v]
	return n, ext, true
}

// walkRacks is RackAware: nodes on racks and hosts not chosen yet, until rf are chosen or
// every rack with tokens holds one; then, walking again, nodes on hosts not chosen yet,
// until rf are chosen or every host with tokens holds one.
func (d *draft) walkRacks(v int32, out []int32) (int, int32, bool) {
	n, ext, open := 0, int32(0), true
	start := v
	d.walkEnd = d.prv[v]
	for k := range d.live {
		i := d.own[v]
		if !d.chosenOn(out[:n], i, true) {
			out[n], ext, d.walkEnd = i, int32(k+1), v
			n++
			if n == d.rf {
				return n, ext, false
			}
			if n == d.g.racks {
				open = false
				break
			}
		}
		v = d.nxt[v]
	}
	if n == d.g.hosts {
		return n, ext, open
	}
	v = start
	for k := range d.live {
		i := d.own[v]
		if !d.chosenOn(out[:n], i, false) {
			if int32(k+1) > ext {
				ext, d.walkEnd = int32(k+1), v
			}
			out[n] = i
			n++
			if n == d.rf || n == d.g.hosts {
				return n, ext, open
			}
		}
		v = d.nxt[v]
	}
	return n, ext, true
}

// chosenOn reports whether a chosen node shares node i's host (or, with racks, its rack).
func (d *draft) chosenOn(chosen []int32, i int32, racks bool) bool {
	for _, c := range chosen {
		if d.host[c] == d.host[i] || racks && d.rack[c] == d.rack[i] {
			return true
		}
	}
	return false
}

// walkDiverse runs EngineDiverse's choice over the draft with the draft's reused walker.
func (d *draft) walkDiverse(v int32, out []int32) (int, int32, bool) {
	w := &d.walk
	for _, i := range w.order {
		w.seen[i] = false
	}
	for len(w.seen) < len(d.nodes) {
		w.seen = append(w.seen, false)
	}
	w.nodes, w.vnodes, w.present, w.cur = d.nodes, d.live, d.g.nodes, v
	w.next, w.lastNew, w.exhausted, w.order = 0, 0, false, w.order[:0]
	chosen := w.choose(d.g.coverable, d.rf)
	for k, p := range chosen {
		out[k] = int32(w.order[p])
	}
	d.walkEnd = d.prv[w.cur] // the last vnode read
	return len(chosen), int32(w.lastNew), w.exhausted
}

// walkOther asks a strategy the draft cannot walk itself, on a Ring built from the draft;
// every range then counts as open, so that every change recomputes them all.
func (d *draft) walkOther(v int32, out []int32) (int, int32, bool) {
	if d.snap == nil {
		d.snap = d.snapshot()
	}
	ids := d.strategy.Replicas(d.snap, d.tok[v], d.rf)
	for k, id := range ids {
		out[k] = d.index[id]
	}
	return len(ids), int32(d.live), true
}

// snapshot builds a Ring of the draft's vnodes as they are linked now.
func (d *draft) snapshot() *Ring {
	r := &Ring{nodes: d.nodes, vnodes: make([]vnode, 0, d.live), coverable: d.g.coverable}
	r.withTokens.nodes, r.withTokens.hosts, r.withTokens.racks = d.g.nodes, d.g.hosts, d.g.racks
	first := d.head // the vnode of the smallest token
	for v, k := d.head, 0; k < d.live; v, k = d.nxt[v], k+1 {
		if d.tok[v] < d.tok[first] {
			first = v
		}
	}
	for v, k := first, 0; k < d.live; v, k = d.nxt[v], k+1 {
		r.vnodes = append(r.vnodes, vnode{token: d.tok[v], node: int(d.own[v])})
	}
	return r
}
