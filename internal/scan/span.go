package scan

import "github.com/kuradb/kura/internal/ring"

// Span is the tokens [From, To] of one ring range, or of adjacent ranges whose replica
// sets are equal: what a page reads from one set of replicas.
type Span struct {
	From, To ring.Token
	// Range is the ring range (ring.RangeIndex) holding From; its replica set is the
	// span's.
	Range int
}

// First returns the span that starts at token from: from to the end of from's ring
// range, extended over the following ranges for which same(Range, i) reports the same
// replica set (same may be nil: extend over none). The range after the ring's last
// token wraps to range 0, so a span never goes past MaxToken.
func First(r *ring.Ring, from ring.Token, same func(i, j int) bool) Span {
	s := Span{From: from, Range: r.RangeIndex(from)}
	s.To = rangeEnd(r, s.Range, from)
	for s.To != ring.MaxToken && same != nil {
		i := r.RangeIndex(s.To + 1)
		if !same(s.Range, i) {
			break
		}
		s.To = rangeEnd(r, i, s.To+1)
	}
	return s
}

// rangeEnd returns the last token of range i from t on: its end, or MaxToken for the
// part of range 0 past the ring's last token.
func rangeEnd(r *ring.Ring, i int, t ring.Token) ring.Token {
	if end := r.RangeEnd(i); end >= t {
		return end
	}
	return ring.MaxToken
}

// Spans returns every span from token from to MaxToken, in order, as a scan meets them
// one page at a time when each page takes a whole span.
func Spans(r *ring.Ring, from ring.Token, same func(i, j int) bool) []Span {
	var out []Span
	for {
		s := First(r, from, same)
		out = append(out, s)
		if s.To == ring.MaxToken {
			return out
		}
		from = s.To + 1
	}
}

// Keys returns the engine keys (ring.EngineKey) of the span's tokens: the bounds of its
// scan requests.
func (s Span) Keys() ring.KeyRange {
	return ring.KeyRange{Lo: ring.AppendTokenPrefix(nil, s.From), Hi: tokenBound(s.To)}
}
