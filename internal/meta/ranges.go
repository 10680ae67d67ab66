package meta

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// A range (Start, End] holds the tokens Start+1 .. End, wrapping; Start == End is the
// whole ring. Offsets below count tokens from a range's first one.

// last returns the offset of r's last token from its first: its width minus one (the
// whole ring's is the largest uint64).
func last(r move.Range) uint64 { return uint64(r.End) - uint64(r.Start) - 1 }

// offset returns how far token t lies after the first token of r (meaningful when r
// holds t: at most last(r)).
func offset(r move.Range, t ring.Token) uint64 { return uint64(t) - uint64(r.Start) - 1 }

// contains reports whether r holds token t.
func contains(r move.Range, t ring.Token) bool { return offset(r, t) <= last(r) }

// within returns the offsets of inner's first and last tokens in outer, and whether
// outer holds all of inner.
func within(inner, outer move.Range) (first, lastOff uint64, ok bool) {
	first, lastOff = offset(outer, inner.Start+1), offset(outer, inner.End)
	return first, lastOff, first <= lastOff && lastOff <= last(outer) && last(inner) == lastOff-first
}

// overlaps reports whether a and b share a token.
func overlaps(a, b move.Range) bool {
	return contains(a, b.Start+1) || contains(b, a.Start+1)
}

// rangeFor returns the index of the range of rs (disjoint, in token order of their ends)
// that holds t, or -1.
func rangeFor(rs []RangeState, t ring.Token) int {
	if len(rs) == 0 {
		return -1
	}
	i, _ := slices.BinarySearchFunc(rs, t, func(r RangeState, t ring.Token) int { return cmp.Compare(r.Range.End, t) })
	if i == len(rs) {
		i = 0 // past the last end: only a range that wraps can hold t
	}
	if contains(rs[i].Range, t) {
		return i
	}
	return -1
}

// checkTransfers checks that transfers are exactly the copies ranges need: for every
// range and every node of its new set that is not in its old set, transfers to that node
// whose ranges tile the range, each from a live node of the old set; and nothing else.
func checkTransfers(ranges []RangeState, transfers []move.Transfer, down map[ring.NodeID]bool) error {
	type key struct {
		rng  int
		dest ring.NodeID
	}
	type span struct{ first, last uint64 }
	got := map[key][]span{}
	for _, t := range transfers {
		i := rangeFor(ranges, t.Range.End)
		if i < 0 {
			return fmt.Errorf("%w: transfer of %s to %s is in no range the change moves", ErrTransfers, t.Range, t.Destination)
		}
		r := ranges[i]
		first, lastOff, ok := within(t.Range, r.Range)
		switch {
		case !ok:
			return fmt.Errorf("%w: transfer of %s crosses the end of range %s", ErrTransfers, t.Range, r.Range)
		case slices.Contains(r.Old, t.Destination) || !slices.Contains(r.New, t.Destination):
			return fmt.Errorf("%w: %s does not join the replicas of %s (old %v, new %v)", ErrTransfers, t.Destination, r.Range, r.Old, r.New)
		case !slices.Contains(r.Old, t.Source):
			return fmt.Errorf("%w: source %s of %s does not hold it (old %v)", ErrTransfers, t.Source, t.Range, r.Old)
		case down[t.Source]:
			return fmt.Errorf("%w: source %s of %s is down", ErrNoSource, t.Source, t.Range)
		}
		k := key{i, t.Destination}
		got[k] = append(got[k], span{first, lastOff})
	}
	for i, r := range ranges {
		for _, d := range r.New {
			if slices.Contains(r.Old, d) {
				continue
			}
			spans := got[key{i, d}]
			if len(spans) == 0 && countLive(r.Old, down) == 0 {
				return fmt.Errorf("%w: every replica of %s is down (%v); %s cannot receive it", ErrNoSource, r.Range, r.Old, d)
			}
			slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.first, b.first) })
			next := uint64(0)
			for _, sp := range spans {
				if sp.first != next {
					return fmt.Errorf("%w: the copies of %s to %s leave a gap or overlap", ErrTransfers, r.Range, d)
				}
				next = sp.last + 1
			}
			if len(spans) == 0 || spans[len(spans)-1].last != last(r.Range) {
				return fmt.Errorf("%w: %s does not receive all of %s", ErrTransfers, d, r.Range)
			}
		}
	}
	return nil
}
