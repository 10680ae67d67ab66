package scan

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// ErrPage is returned by Merge for a page that breaks its contract: a row outside the
// span, or a Next that is not an engine key of the span.
var ErrPage = errors.New("scan: malformed page")

// Page is one replica's answer to a scan of a span from the span's first token: rows in
// token order (wire.ScanResponse), and where the replica would go on.
type Page struct {
	// Rows hold keys as clients give them, and rows as stored (tombstones included).
	Rows []row.Mutation
	// Next is the engine key (ring.EngineKey) the replica would resume at, or nil when it
	// has no more rows in the span. It may fall between two keys of one token.
	Next []byte
}

// through returns the last token all of whose keys are in p: the span's last when p is
// done, else the token before Next's (Next's own token may be partly in p).
func (p *Page) through(s Span) (ring.Token, error) {
	if p.Next == nil {
		return s.To, nil
	}
	t, _, err := ring.SplitEngineKey(p.Next)
	if err != nil || t < s.From || t > s.To {
		return 0, fmt.Errorf("%w: next %x outside span [%d, %d]", ErrPage, p.Next, s.From, s.To)
	}
	if t == ring.MinToken { // no key has MinToken, so no page stops inside it
		return 0, fmt.Errorf("%w: next %x inside the empty key's token", ErrPage, p.Next)
	}
	return t - 1, nil
}

// Result is the merge of a quorum's pages of a span.
type Result struct {
	// Rows are the keys whose tokens lie in [span.From, Through], each with the merge
	// (row.Merge) of its rows in every page, ordered by token, then key. They alias the
	// pages' rows.
	Rows []row.Mutation
	// Through is the last token all of whose keys every page holds: the page's safe cut,
	// After(Through) the next cursor. It is below span.From when no token is whole
	// (Short is then set).
	Through ring.Token
	// Short lists the pages (by index) that stopped inside the span's first token, when
	// no token is whole: each must be completed through that token (Complete) and the
	// pages merged again. Only more keys sharing one token than a page holds do this.
	Short []int
}

// Merge merges the pages a quorum of the span's replicas answered for a scan from
// span.From. Keys of a token that some page may hold only in part are left for the next
// page.
func Merge(s Span, pages []Page) (Result, error) {
	res := Result{Through: s.To}
	cuts := make([]ring.Token, len(pages))
	for i := range pages {
		t, err := pages[i].through(s)
		if err != nil {
			return Result{}, err
		}
		cuts[i] = t
		res.Through = min(res.Through, t)
	}
	if res.Through < s.From {
		for i, t := range cuts {
			if t < s.From {
				res.Short = append(res.Short, i)
			}
		}
		return res, nil
	}
	// Each page is in engine order (token, then key), so a k-way merge of their heads
	// yields the keys in order, each with its rows from every page side by side.
	toks := make([][]ring.Token, len(pages))
	for i := range pages {
		toks[i] = make([]ring.Token, len(pages[i].Rows))
		for j, m := range pages[i].Rows {
			t := tokenOf(m.Key)
			switch {
			case t < s.From || t > s.To:
				return Result{}, fmt.Errorf("%w: key %q of token %d outside span [%d, %d]", ErrPage, m.Key, t, s.From, s.To)
			case j > 0 && !before(toks[i][j-1], pages[i].Rows[j-1].Key, t, m.Key):
				return Result{}, fmt.Errorf("%w: key %q out of order", ErrPage, m.Key)
			}
			toks[i][j] = t
		}
	}
	heads := make([]int, len(pages))
	for {
		best := -1
		for i, h := range heads {
			if h == len(pages[i].Rows) || toks[i][h] > res.Through {
				continue
			}
			if best < 0 || before(toks[i][h], pages[i].Rows[h].Key, toks[best][heads[best]], pages[best].Rows[heads[best]].Key) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		m := pages[best].Rows[heads[best]]
		for i, h := range heads {
			if h < len(pages[i].Rows) && bytes.Equal(pages[i].Rows[h].Key, m.Key) {
				if r := &pages[i].Rows[h].Row; i != best && !sameRow(&m.Row, r) {
					m.Row = row.Merge(m.Row, *r)
				}
				heads[i]++
			}
		}
		res.Rows = append(res.Rows, m)
	}
	return res, nil
}

// tokenOf is ring.TokenOf; tests replace it to make keys share tokens, which Murmur3 keys
// never do in practice.
var tokenOf = ring.TokenOf

// Complete returns the Next of a page completed through the span's first token, after
// the driver appended to it the rest of that token's rows (a scan from the page's Next
// to TokenEnd(span.From)): nil when that token is the span's last.
func Complete(s Span) []byte {
	if s.From == s.To {
		return nil
	}
	return ring.AppendTokenPrefix(nil, s.From+1)
}

// TokenEnd returns the exclusive upper bound of token t's engine keys: the Hi of a scan
// of the rest of t. Nil past MaxToken.
func TokenEnd(t ring.Token) []byte { return tokenBound(t) }

// sameRow reports whether two replicas' rows of a key are identical, as they are but for
// recent writes: their merge is either, and costs an allocation to compute.
func sameRow(a, b *row.Row) bool {
	if a.Deleted != b.Deleted || len(a.Cells) != len(b.Cells) {
		return false
	}
	for i := range a.Cells {
		x, y := &a.Cells[i], &b.Cells[i]
		if x.Timestamp != y.Timestamp || x.ExpiresAt != y.ExpiresAt || x.Tombstone != y.Tombstone ||
			!bytes.Equal(x.Name, y.Name) || !bytes.Equal(x.Value, y.Value) {
			return false
		}
	}
	return true
}

// before reports whether (at, ak) sorts before (bt, bk): engine order.
func before(at ring.Token, ak []byte, bt ring.Token, bk []byte) bool {
	if at != bt {
		return at < bt
	}
	return bytes.Compare(ak, bk) < 0
}

func cmpToken(a, b ring.Token) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
