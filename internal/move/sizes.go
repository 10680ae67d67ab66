package move

import (
	"fmt"
	"math/bits"

	"github.com/kuradb/kura/internal/ring"
)

// Range is the token range (Start, End], wrapping past ring.MaxToken when Start >= End;
// Start == End is the whole ring (a ring of one vnode).
type Range struct {
	Start, End ring.Token
}

// String writes the range as (Start,End].
func (r Range) String() string { return fmt.Sprintf("(%d,%d]", r.Start, r.End) }

// Keys returns the range's bounds in the engines' key order.
func (r Range) Keys() []ring.KeyRange { return ring.EngineKeyRanges(r.Start, r.End) }

// Sizes tells the planner how many bytes one replica holds in a token range. The planner
// cuts the ring where either ring has a token, so Bytes must be additive: the bytes of
// two adjacent ranges sum to those of their union, exactly, or a plan's bytes would
// depend on where it cut. Uniform and PerRange are; a caller's own must be too.
type Sizes interface {
	// Bytes returns the bytes one replica holds in r.
	Bytes(r Range) int64
}

// Uniform spreads a replica's bytes (the data set's size, before replication) evenly
// over the token space, as murmur3 spreads keys: a range's share is its width over 2^64.
type Uniform int64

// Bytes implements Sizes.
func (u Uniform) Bytes(r Range) int64 {
	cum := func(t ring.Token) int64 { // bytes in (MinToken, t]
		hi, _ := bits.Mul64(uint64(t)^1<<63, uint64(u))
		return int64(hi)
	}
	return between(cum, ring.MinToken, int64(u), r)
}

// between returns the bytes of r from cum, the bytes in (origin, t], which must be 0 at
// origin, never decrease clockwise from it and stay below total. Adjacent ranges sum
// exactly, because each range's bytes are a difference of cum.
func between(cum func(ring.Token) int64, origin ring.Token, total int64, r Range) int64 {
	if r.Start == r.End {
		return total
	}
	off := func(t ring.Token) uint64 { return uint64(t) - uint64(origin) }
	switch s, e := cum(r.Start), cum(r.End); {
	case r.End == origin:
		return total - s
	case off(r.Start) < off(r.End):
		return e - s
	default: // wraps past origin
		return total - s + e
	}
}

// PerRange gives each range of a ring its measured bytes (a node's per-range load, say);
// a part of a range gets a share of its bytes proportional to its width.
type PerRange struct {
	r      *ring.Ring
	bytes  []int64
	prefix []int64 // bytes of the ranges before range i, counting from range 0
	total  int64
}

// NewPerRange returns the sizes of the ranges of r: bytes[i] for range i (ring.RangeEnd).
func NewPerRange(r *ring.Ring, bytes []int64) (*PerRange, error) {
	if len(bytes) != r.RangeCount() {
		return nil, fmt.Errorf("move: %d range sizes for a ring of %d ranges", len(bytes), r.RangeCount())
	}
	p := &PerRange{r: r, bytes: bytes, prefix: make([]int64, len(bytes))}
	for i, b := range bytes {
		if b < 0 {
			return nil, fmt.Errorf("move: range %d has %d bytes", i, b)
		}
		p.prefix[i] = p.total
		p.total += b
	}
	return p, nil
}

// Bytes implements Sizes.
func (p *PerRange) Bytes(r Range) int64 {
	origin := p.r.RangeStart(0) // the last token: range 0 starts after it
	if p.r.RangeCount() == 1 {  // one range, the whole ring: width 2^64
		cum := func(t ring.Token) int64 {
			hi, _ := bits.Mul64(uint64(t)-uint64(origin), uint64(p.total))
			return int64(hi)
		}
		return between(cum, origin, p.total, r)
	}
	cum := func(t ring.Token) int64 {
		if t == origin {
			return 0
		}
		i := p.r.RangeIndex(t)
		start := p.r.RangeStart(i)
		hi, lo := bits.Mul64(uint64(t)-uint64(start), uint64(p.bytes[i]))
		q, _ := bits.Div64(hi, lo, uint64(p.r.RangeEnd(i))-uint64(start)) // below bytes[i]: no overflow
		return p.prefix[i] + int64(q)
	}
	return between(cum, origin, p.total, r)
}
