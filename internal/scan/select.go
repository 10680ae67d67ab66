package scan

import (
	"bytes"
	"container/heap"
	"slices"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Selector keeps, in one pass over keys offered in any order, the page of a scan that
// starts at a token: the keys of the lowest tokens at or after it, at most n of them,
// and never part of one token's keys. A node whose engine is not in token order (a
// single node keeps client keys in key order) makes one pass of its engine per page
// with it. Not safe for concurrent use.
type Selector struct {
	from ring.Token
	n    int
	only bool    // keep every key of token from, and nothing else (Whole)
	h    entries // max-heap by (token, key): the n lowest offered so far
	// dropped is set once a key at or after from was offered and not kept; minDropped is
	// the lowest token of those. Every key kept is at or below every key dropped, so the
	// tokens below minDropped are whole.
	dropped    bool
	minDropped ring.Token
}

// NewSelector returns a selector of up to n keys (at least 1) from token from on.
func NewSelector(from ring.Token, n int) *Selector {
	return &Selector{from: from, n: max(n, 1)}
}

// Whole returns a selector of every key of token t and no other: the page to take when
// more keys share t than a page holds (Result's stuck).
func Whole(t ring.Token) *Selector { return &Selector{from: t, only: true} }

type entry struct {
	tok ring.Token
	m   row.Mutation
}

func less(at ring.Token, ak []byte, bt ring.Token, bk []byte) bool {
	if at != bt {
		return at < bt
	}
	return bytes.Compare(ak, bk) < 0
}

// Add offers key, whose token is t, and its row; the selector copies them if it keeps
// them (key and r may be reused once Add returns).
func (s *Selector) Add(t ring.Token, key []byte, r *row.Row) {
	switch {
	case t < s.from:
		return
	case s.only:
		if t == s.from {
			s.h = append(s.h, s.entry(t, key, r))
		}
		return
	case len(s.h) < s.n:
		heap.Push(&s.h, s.entry(t, key, r))
		return
	}
	top := &s.h[0]
	if !less(t, key, top.tok, top.m.Key) {
		s.drop(t)
		return
	}
	s.drop(top.tok)
	s.h[0] = s.entry(t, key, r)
	heap.Fix(&s.h, 0)
}

func (s *Selector) drop(t ring.Token) {
	if !s.dropped || t < s.minDropped {
		s.dropped, s.minDropped = true, t
	}
}

func (s *Selector) entry(t ring.Token, key []byte, r *row.Row) entry {
	return entry{tok: t, m: row.Mutation{Key: bytes.Clone(key), Row: r.Clone()}}
}

// Result returns the rows kept, in token then key order, and the last token all of whose
// keys are among them (After(through) is the next cursor). stuck reports that no token is
// whole: more keys share the first token than the page holds, and the page must be taken
// again with Whole(from).
func (s *Selector) Result() (rows []row.Mutation, through ring.Token, stuck bool) {
	slices.SortFunc(s.h, func(a, b entry) int {
		if a.tok != b.tok {
			return cmpToken(a.tok, b.tok)
		}
		return bytes.Compare(a.m.Key, b.m.Key)
	})
	through = ring.MaxToken
	switch {
	case s.only:
		through = s.from
	case s.dropped && (s.minDropped == s.from || s.minDropped == ring.MinToken):
		return nil, s.from, true
	case s.dropped:
		through = s.minDropped - 1
	}
	for _, e := range s.h {
		if e.tok > through {
			break
		}
		rows = append(rows, e.m)
	}
	return rows, through, false
}

// entries is a max-heap of entries by (token, key).
type entries []entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return less(h[j].tok, h[j].m.Key, h[i].tok, h[i].m.Key) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
