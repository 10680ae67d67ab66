package move

import (
	"math/rand/v2"
	"slices"
)

// hdfsStreams is HDFS's dfs.namenode.replication.max-streams: the NameNode gives a DataNode
// at most 2 replication tasks to send at once (the receiving side has no such limit).
const hdfsStreams = 2

// HDFSDefault is HDFS's re-replication, seed 002's baseline: copies in no particular order,
// each from a random live replica to a random node the placement allows, on the source's
// rack when the rules allow one there (HDFS's chooseTarget puts a third replica on the
// writer's rack when the two others are on different racks, and on a remote rack when they
// share one), each node sending at most 2 at once.
type HDFSDefault struct {
	// Rand draws the order, sources and destinations.
	Rand *rand.Rand
}

// Name implements Scheduler.
func (HDFSDefault) Name() string { return "hdfs" }

// Schedule implements Scheduler.
func (h HDFSDefault) Schedule(r *Recovery) (*Schedule, error) {
	t := newTracker(r)
	s := &Schedule{Scheduler: h.Name(), Default: Streams{Send: hdfsStreams}}
	var local, any []int
	for _, i := range h.Rand.Perm(len(r.Copies)) {
		src := r.sources[i][h.Rand.IntN(len(r.sources[i]))]
		local, any = local[:0], any[:0]
		for _, d := range r.candidates[i] {
			if t.allowed(i, int(d)) {
				any = append(any, int(d))
				if r.rack[d] == r.rack[src] {
					local = append(local, int(d))
				}
			}
		}
		pool := local
		if len(pool) == 0 {
			pool = any
		}
		if len(pool) == 0 {
			return nil, t.stuck(i)
		}
		s.Order = append(s.Order, t.take(i, src, pool[h.Rand.IntN(len(pool))]))
	}
	return s, nil
}

// RingScheme is seed 002's scheduler (section 3, extended to several racks in section 4.1):
// each rack's live nodes form a logical ring. A copy that can stay in a rack (some source
// has a destination the rules allow on its own rack: the paper's state 1) comes from the
// source with the fewest such copies assigned (I_i) and goes to the first allowed node
// after it on its rack's ring, so that copies flow one way round each ring. Any other copy
// (state 2: it must cross racks) comes from the source with the fewest cross-rack copies
// assigned (O_i) and goes to a rack the rules allow (racks in turn when there are several;
// with two racks there is one), to the next allowed node of that rack's round-robin
// pointer (R_j). With Priority the state 2 copies start first; without it, copies start
// in the recovery's order. Each node sends at most 2 at once, as in the HDFS the paper
// modified.
type RingScheme struct {
	Priority bool
}

// Name implements Scheduler.
func (g RingScheme) Name() string {
	if g.Priority {
		return "ring-priority"
	}
	return "ring"
}

// Schedule implements Scheduler.
func (g RingScheme) Schedule(r *Recovery) (*Schedule, error) {
	t := newTracker(r)
	in, out := make([]int, len(r.Fabric.Nodes)), make([]int, len(r.Fabric.Nodes)) // I_i, O_i
	next := make([]int, len(r.racks))                                             // R_j, a position in the rack's ring
	pos := make([]int, len(r.Fabric.Nodes))                                       // a node's position in its rack's ring
	for _, ns := range r.liveNodesByRack {
		for k, n := range ns {
			pos[n] = k
		}
	}
	rackTurn := 0
	var first, second []Assignment
	for i := range r.Copies {
		src, dst := -1, -1
		for _, s := range r.sources[i] { // state 1: stay on the source's rack
			if d := t.ringNext(i, s); d >= 0 && (src < 0 || in[s] < in[src]) {
				src, dst = s, d
			}
		}
		if src >= 0 {
			in[src]++
			second = append(second, t.take(i, src, dst))
			continue
		}
		for _, s := range r.sources[i] { // state 2: cross to another rack
			if src < 0 || out[s] < out[src] {
				src = s
			}
		}
		for k := range len(r.racks) {
			rk := (rackTurn + k) % len(r.racks)
			if d := t.roundRobin(i, rk, next[rk]); d >= 0 {
				dst, next[rk] = d, pos[d]+1
				rackTurn = rk + 1
				break
			}
		}
		if dst < 0 {
			return nil, t.stuck(i)
		}
		out[src]++
		first = append(first, t.take(i, src, dst))
	}
	s := &Schedule{Scheduler: g.Name(), Default: Streams{Send: hdfsStreams}}
	if g.Priority {
		s.Order = append(first, second...)
	} else {
		s.Order = slices.SortedFunc(slices.Values(append(first, second...)), func(a, b Assignment) int { return a.Copy - b.Copy })
	}
	return s, nil
}

// ringNext returns the first node after s on its rack's ring that may take copy i, or -1.
func (t *tracker) ringNext(i, s int) int {
	ns := t.r.liveNodesByRack[t.r.rack[s]]
	at := slices.Index(ns, s)
	for k := 1; k < len(ns); k++ {
		if d := ns[(at+k)%len(ns)]; t.allowed(i, d) {
			return d
		}
	}
	return -1
}

// roundRobin returns the first node of rack rk from position from on (wrapping) that may
// take copy i, or -1.
func (t *tracker) roundRobin(i, rk, from int) int {
	ns := t.r.liveNodesByRack[rk]
	for k := range len(ns) {
		if d := ns[(from+k)%len(ns)]; t.allowed(i, d) {
			return d
		}
	}
	return -1
}
