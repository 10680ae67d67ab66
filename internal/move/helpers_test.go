package move

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

// topology is a change as an operator states it, which the tests turn into a target
// ring: nodes joining (with their tokens), live nodes leaving, dead nodes removed, and
// dead nodes replaced by a new node that takes their tokens.
type topology struct {
	joins    []ring.Node
	leaves   []ring.NodeID
	removes  []ring.NodeID
	replaces map[ring.NodeID]ring.Node // the replaced node's ID to its replacement
}

// apply returns the nodes of the ring after t.
func (t topology) apply(nodes []ring.Node) []ring.Node {
	var out []ring.Node
	for _, n := range nodes {
		if slices.Contains(t.leaves, n.ID) || slices.Contains(t.removes, n.ID) {
			continue
		}
		if r, ok := t.replaces[n.ID]; ok {
			r.Tokens = n.Tokens
			out = append(out, r)
			continue
		}
		out = append(out, n)
	}
	return append(out, t.joins...)
}

// down returns the nodes t says are dead: those removed or replaced.
func (t topology) down() map[ring.NodeID]bool {
	out := map[ring.NodeID]bool{}
	for _, id := range t.removes {
		out[id] = true
	}
	for id := range t.replaces {
		out[id] = true
	}
	return out
}

func mustRing(t testing.TB, nodes []ring.Node) *ring.Ring {
	t.Helper()
	r, err := ring.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// minimumByNode computes the least bytes a change must move another way than Plan does:
// per node, the bytes of the token space it replicates after the change and did not
// before, from each ring's own ranges (ring.RangeEnd order) and interval arithmetic. It
// uses only the target ring's placement, so it holds with RingSuccessors.
func minimumByNode(c Change) int64 {
	held := func(r *ring.Ring) map[ring.NodeID][]Range {
		out := map[ring.NodeID][]Range{}
		for i := range r.RangeCount() {
			for _, id := range c.Strategy.Replicas(r, r.RangeEnd(i), c.RF) {
				out[id] = append(out[id], Range{Start: r.RangeStart(i), End: r.RangeEnd(i)})
			}
		}
		return out
	}
	before, after := held(c.Current), held(c.Target)
	var total int64
	for _, id := range slices.Sorted(maps.Keys(after)) {
		for _, piece := range subtract(after[id], before[id]) {
			total += c.Sizes.Bytes(piece)
		}
	}
	return total
}

// subtract returns the parts of the ranges in a outside every range of b, computed on
// tokens as closed intervals of offsets from MinToken ([0, 2^64-1], no wrapping).
func subtract(a, b []Range) []Range {
	type span struct{ lo, hi uint64 } // offsets lo to hi, both included
	const last = 1<<64 - 1
	spans := func(rs []Range) []span {
		var out []span
		for _, r := range rs {
			s, e := uint64(r.Start)^1<<63, uint64(r.End)^1<<63
			switch {
			case r.Start == r.End:
				out = append(out, span{0, last})
			case s < e:
				out = append(out, span{s + 1, e})
			default:
				if s < last {
					out = append(out, span{s + 1, last})
				}
				out = append(out, span{0, e})
			}
		}
		return out
	}
	var out []Range
	for _, s := range spans(a) {
		parts := []span{s}
		for _, x := range spans(b) {
			var next []span
			for _, p := range parts {
				if x.hi < p.lo || x.lo > p.hi {
					next = append(next, p)
					continue
				}
				if p.lo < x.lo {
					next = append(next, span{p.lo, x.lo - 1})
				}
				if x.hi < p.hi {
					next = append(next, span{x.hi + 1, p.hi})
				}
			}
			parts = next
		}
		for _, p := range parts {
			// (lo-1, hi]; from offset 0 that is (MaxToken, hi], which wraps to MinToken.
			out = append(out, Range{Start: ring.Token((p.lo - 1) ^ 1<<63), End: ring.Token(p.hi ^ 1<<63)})
		}
	}
	return out
}

// checkMovement checks the properties every plan must have, against c.
func checkMovement(c Change, m *Movement) error {
	var moved, short int64
	send, recv := map[ring.NodeID]int64{}, map[ring.NodeID]int64{}
	for _, tr := range m.Transfers {
		old := c.Strategy.Replicas(c.Current, tr.Range.End, c.RF)
		next := c.Strategy.Replicas(c.Target, tr.Range.End, c.RF)
		switch {
		case slices.Contains(old, tr.Destination):
			return fmt.Errorf("%s -> %s: the destination already holds %s", tr.Source, tr.Destination, tr.Range)
		case c.Rehome == nil && !slices.Contains(next, tr.Destination):
			return fmt.Errorf("%s -> %s: the destination is not a new replica of %s (%v)", tr.Source, tr.Destination, tr.Range, next)
		case !slices.Contains(old, tr.Source):
			return fmt.Errorf("%s -> %s: the source does not hold %s (%v)", tr.Source, tr.Destination, tr.Range, old)
		case c.Down[tr.Source]:
			return fmt.Errorf("%s -> %s: the source is down", tr.Source, tr.Destination)
		case tr.Bytes != c.Sizes.Bytes(tr.Range):
			return fmt.Errorf("%s -> %s: %d bytes for %s of %d", tr.Source, tr.Destination, tr.Bytes, tr.Range, c.Sizes.Bytes(tr.Range))
		}
		moved += tr.Bytes
		send[tr.Source] += tr.Bytes
		recv[tr.Destination] += tr.Bytes
	}
	for _, s := range m.Shortfalls {
		for _, id := range c.Strategy.Replicas(c.Current, s.Range.End, c.RF) {
			if !c.Down[id] {
				return fmt.Errorf("shortfall %s though %s holds it and is live", s.Range, id)
			}
		}
		short += s.Bytes * int64(len(s.Destinations))
	}
	switch {
	case moved != m.MovedBytes:
		return fmt.Errorf("transfers sum to %d bytes, the movement says %d", moved, m.MovedBytes)
	case moved+short != m.MinimumBytes:
		return fmt.Errorf("moved %d + shortfall %d bytes, minimum %d", moved, short, m.MinimumBytes)
	case !maps.Equal(send, m.Send) || !maps.Equal(recv, m.Receive):
		return fmt.Errorf("per-node sends and receives do not match the transfers")
	case m.Load < m.Bound.Bytes:
		return fmt.Errorf("the plan's load %d is below the bound %d", m.Load, m.Bound.Bytes)
	}
	if c.Rehome == nil {
		if want := minimumByNode(c); want != m.MinimumBytes {
			return fmt.Errorf("minimum %d bytes, by node %d", m.MinimumBytes, want)
		}
	}
	return nil
}

// names lists node IDs for messages.
func names(ids []ring.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// ratio is a / b, 1 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
