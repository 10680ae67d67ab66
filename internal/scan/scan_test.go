package scan

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// seed returns the seed of a randomized test: KURA_SCAN_SEED when set, else a fresh one;
// the test prints it, so that a failure can be run again with it.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("KURA_SCAN_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("KURA_SCAN_SEED: %v", err)
		}
	}
	t.Logf("seed %d (KURA_SCAN_SEED=%d reruns it)", s, s)
	return s
}

func TestCursorIsTheTokensRankWithZeroAtBothEnds(t *testing.T) {
	for _, tc := range []struct {
		tok    ring.Token
		cursor uint64
	}{
		{ring.MinToken, 0}, {ring.MinToken + 1, 1}, {-1, 1<<63 - 1}, {0, 1 << 63}, {1, 1<<63 + 1},
		{ring.MaxToken, math.MaxUint64},
	} {
		if got := Cursor(tc.tok); got != tc.cursor {
			t.Errorf("Cursor(%d) = %d, want %d", tc.tok, got, tc.cursor)
		}
		if got := From(tc.cursor); got != tc.tok {
			t.Errorf("From(%d) = %d, want %d", tc.cursor, got, tc.tok)
		}
	}
	if After(ring.MaxToken) != 0 {
		t.Error("a page through MaxToken must end the scan with cursor 0")
	}
	if After(ring.MinToken) != 1 || After(41) != Cursor(42) {
		t.Error("After(t) resumes at t+1")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		a, b := ring.Token(rng.Uint64()), ring.Token(rng.Uint64())
		if (a < b) != (Cursor(a) < Cursor(b)) {
			t.Fatalf("cursors of %d and %d are not in token order", a, b)
		}
	}
}

func testRing(t *testing.T, tokens map[ring.NodeID][]ring.Token) *ring.Ring {
	t.Helper()
	var nodes []ring.Node
	for id, ts := range tokens {
		nodes = append(nodes, ring.Node{ID: id, Host: string(id), Tokens: ts})
	}
	slices.SortFunc(nodes, func(a, b ring.Node) int { return strings.Compare(string(a.ID), string(b.ID)) })
	r, err := ring.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sameSet compares the replica sets (as sets) of two ranges under strategy st.
func sameSet(r *ring.Ring, st ring.Strategy, rf int) func(i, j int) bool {
	return func(i, j int) bool {
		a := st.Replicas(r, r.RangeEnd(i), rf)
		b := st.Replicas(r, r.RangeEnd(j), rf)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	}
}

func TestSpansCutTheRingFromACursorAtRangeEnds(t *testing.T) {
	r := testRing(t, map[ring.NodeID][]ring.Token{"a": {-100, 50}, "b": {0}, "c": {200}})
	show := func(spans []Span) string {
		var b strings.Builder
		for _, s := range spans {
			fmt.Fprintf(&b, "[%d,%d]r%d ", s.From, s.To, s.Range)
		}
		return strings.TrimSpace(b.String())
	}
	mt, xt := int64(ring.MinToken), int64(ring.MaxToken)
	for _, tc := range []struct {
		from ring.Token
		same func(i, j int) bool
		want string
	}{
		{ring.MinToken, nil, fmt.Sprintf("[%d,-100]r0 [-99,0]r1 [1,50]r2 [51,200]r3 [201,%d]r0", mt, xt)},
		{-5, nil, fmt.Sprintf("[-5,0]r1 [1,50]r2 [51,200]r3 [201,%d]r0", xt)},
		{0, nil, fmt.Sprintf("[0,0]r1 [1,50]r2 [51,200]r3 [201,%d]r0", xt)},
		{300, nil, fmt.Sprintf("[300,%d]r0", xt)},
		{ring.MaxToken, nil, fmt.Sprintf("[%d,%d]r0", xt, xt)},
		// Every range has the same replicas (RF 3 of 3 nodes): one span.
		{ring.MinToken, sameSet(r, ring.Simple{}, 3), fmt.Sprintf("[%d,%d]r0", mt, xt)},
		{7, sameSet(r, ring.Simple{}, 3), fmt.Sprintf("[7,%d]r2", xt)},
		// RF 1: every range has one replica, a different one from its neighbours'.
		{ring.MinToken, sameSet(r, ring.Simple{}, 1), fmt.Sprintf("[%d,-100]r0 [-99,0]r1 [1,50]r2 [51,200]r3 [201,%d]r0", mt, xt)},
	} {
		if got := show(Spans(r, tc.from, tc.same)); got != tc.want {
			t.Errorf("Spans from %d:\n got %s\nwant %s", tc.from, got, tc.want)
		}
	}
	one := testRing(t, map[ring.NodeID][]ring.Token{"a": {10}})
	if got, want := show(Spans(one, ring.MinToken, nil)), fmt.Sprintf("[%d,10]r0 [11,%d]r0", mt, xt); got != want {
		t.Errorf("one vnode: %s, want %s", got, want)
	}
}

// Spans partition [from, MaxToken] in order, and every token of a span has the span's
// replica set: checked on random rings against the placement of each token probed.
func TestSpansPartitionTheRestOfTheRingByReplicaSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 0))
	for range 200 {
		tokens := map[ring.NodeID][]ring.Token{}
		n := 1 + rng.IntN(5)
		taken := map[ring.Token]bool{}
		for i := range n {
			id := ring.NodeID(fmt.Sprint("n", i))
			tokens[id] = ring.RandomTokens(rng, 1+rng.IntN(4), taken)
			for _, tk := range tokens[id] {
				taken[tk] = true
			}
		}
		r := testRing(t, tokens)
		rf := 1 + rng.IntN(3)
		st := ring.Strategy(ring.Simple{})
		from := ring.Token(rng.Uint64())
		spans := Spans(r, from, sameSet(r, st, rf))
		next := from
		for i, s := range spans {
			if s.From != next || s.To < s.From {
				t.Fatalf("span %d %+v does not follow %d", i, s, next)
			}
			want := st.Replicas(r, r.RangeEnd(s.Range), rf)
			slices.Sort(want)
			for _, probe := range []ring.Token{s.From, s.To, s.From + ring.Token((uint64(s.To)-uint64(s.From))/2)} {
				got := st.Replicas(r, probe, rf)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("token %d of span %+v has replicas %v, the span %v", probe, s, got, want)
				}
			}
			if i > 0 && sameSet(r, st, rf)(spans[i-1].Range, s.Range) {
				t.Fatalf("spans %d and %d have one replica set and were not joined", i-1, i)
			}
			if s.To == ring.MaxToken {
				if i != len(spans)-1 {
					t.Fatal("spans go on past MaxToken")
				}
				break
			}
			next = s.To + 1
		}
		if spans[len(spans)-1].To != ring.MaxToken {
			t.Fatal("spans stop before MaxToken")
		}
	}
}

func TestAskTakesTheLevelsCountOfReadableReplicasInOrder(t *testing.T) {
	set := []coord.Replica{{ID: "self", Up: true}, {ID: "down"}, {ID: "refilling", Up: true, Refilling: true},
		{ID: "b", Up: true}, {ID: "c", Up: true}}
	for _, tc := range []struct {
		level       coord.Level
		ask, spares string
		err         bool
	}{
		{coord.One, "self", "b c", false},
		{coord.Quorum, "self b c", "", false}, // 3 of 5
		{coord.Two, "self b", "c", false},
		{coord.All, "", "", true},
	} {
		ask, spares, err := Ask(set, tc.level)
		if tc.err {
			if !errors.Is(err, coord.ErrUnavailable) {
				t.Errorf("%s: %v, want unavailable", tc.level, err)
			}
			continue
		}
		if err != nil || join(ask) != tc.ask || join(spares) != tc.spares {
			t.Errorf("%s: ask %v spares %v err %v, want %q and %q", tc.level, ask, spares, err, tc.ask, tc.spares)
		}
	}
}

func join(ids []ring.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// fakeTokens makes keys "<token>/<name>" have the token written in them, so that tests
// can make keys share a token.
func fakeTokens(t *testing.T) {
	t.Helper()
	tokenOf = func(key []byte) ring.Token {
		s, _, _ := strings.Cut(string(key), "/")
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("test key %q has no token", key))
		}
		return ring.Token(n)
	}
	t.Cleanup(func() { tokenOf = ring.TokenOf })
}

func live(v string, ts int64) row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("\x00"), Value: []byte(v), Timestamp: ts}}}
}

func deleted(ts int64) row.Row { return row.Row{Deleted: ts} }

// fakeReplica stores rows under their engine keys (token prefix and key) and answers
// scans as replica.Handler does: at most n rows, and Next just after the last one once n
// are taken.
type fakeReplica struct{ rows map[string]row.Row }

func (f *fakeReplica) put(key string, r row.Row) {
	ek := string(ring.AppendTokenPrefix(nil, tokenOf([]byte(key)))) + key
	f.rows[ek] = row.Merge(f.rows[ek], r)
}

func (f *fakeReplica) scan(lo, hi []byte, n int) Page {
	keys := make([]string, 0, len(f.rows))
	for k := range f.rows {
		if k >= string(lo) && (hi == nil || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var p Page
	for _, k := range keys {
		p.Rows = append(p.Rows, row.Mutation{Key: []byte(k[ring.EngineKeyPrefixLen:]), Row: f.rows[k]})
		if len(p.Rows) == n {
			p.Next = append([]byte(k), 0)
			break
		}
	}
	return p
}

// page reads one page of the span from these replicas as the node's driver does,
// completing short pages, and returns the merge.
func page(t *testing.T, s Span, reps []*fakeReplica, n int) Result {
	t.Helper()
	pages := make([]Page, len(reps))
	kr := s.Keys()
	for i, r := range reps {
		pages[i] = r.scan(kr.Lo, kr.Hi, n)
	}
	for {
		res, err := Merge(s, pages)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Short) == 0 {
			return res
		}
		for _, i := range res.Short {
			for next := pages[i].Next; next != nil; {
				more := reps[i].scan(next, TokenEnd(s.From), n)
				pages[i].Rows = append(pages[i].Rows, more.Rows...)
				next = more.Next
			}
			pages[i].Next = Complete(s)
		}
	}
}

func keysOf(ms []row.Mutation) string {
	var out []string
	for _, m := range ms {
		vis := ""
		if len(m.Row.Visible(100)) == 0 {
			vis = "(deleted)"
		}
		out = append(out, string(m.Key)+vis)
	}
	return strings.Join(out, " ")
}

func TestMergeKeepsWholeTokensAndMergesEachKeysRows(t *testing.T) {
	fakeTokens(t)
	all := Span{From: ring.MinToken, To: ring.MaxToken}
	a, b := &fakeReplica{rows: map[string]row.Row{}}, &fakeReplica{rows: map[string]row.Row{}}
	for _, k := range []string{"1/x", "2/x", "2/y", "3/x", "5/x"} {
		a.put(k, live("a", 10))
		b.put(k, live("b", 11))
	}
	a.put("4/only-a", live("a", 10))  // b missed it: still seen
	b.put("3/x", deleted(20))         // a delete b has: honoured
	a.put("6/a-deleted", live("", 5)) // a's stale value under b's delete
	b.put("6/a-deleted", deleted(7))

	// Pages of 3 rows: a stops at 2/y and b at 2/y too; 2 may be split, so the page is 1's.
	res := page(t, all, []*fakeReplica{a, b}, 3)
	if got := keysOf(res.Rows); got != "1/x" || res.Through != 1 {
		t.Errorf("page of 3: %s through %d, want 1/x through 1", got, res.Through)
	}
	res = page(t, Span{From: 2, To: ring.MaxToken}, []*fakeReplica{a, b}, 4)
	if got := keysOf(res.Rows); got != "2/x 2/y 3/x(deleted)" || res.Through != 3 {
		t.Errorf("page of 4 from 2: %s through %d", got, res.Through)
	}
	if v := string(res.Rows[0].Row.Cells[0].Value); v != "b" {
		t.Errorf("2/x merged to %q, want the newer b", v)
	}
	res = page(t, Span{From: 4, To: ring.MaxToken}, []*fakeReplica{a, b}, 100)
	if got := keysOf(res.Rows); got != "4/only-a 5/x 6/a-deleted(deleted)" || res.Through != ring.MaxToken {
		t.Errorf("last page: %s through %d", got, res.Through)
	}
	// Many keys of one token: a page of 2 cannot hold token 7's three keys, so the pages
	// are completed through it.
	for _, k := range []string{"7/a", "7/b", "7/c", "8/a"} {
		a.put(k, live("a", 10))
		b.put(k, live("b", 10))
	}
	res = page(t, Span{From: 7, To: ring.MaxToken}, []*fakeReplica{a, b}, 2)
	if got := keysOf(res.Rows); got != "7/a 7/b 7/c" || res.Through != 7 {
		t.Errorf("page of 2 over a token of 3 keys: %s through %d", got, res.Through)
	}
}

func TestMergeRefusesPagesOutsideTheSpan(t *testing.T) {
	fakeTokens(t)
	s := Span{From: 10, To: 20}
	for name, p := range map[string]Page{
		"row below":   {Rows: []row.Mutation{{Key: []byte("9/k"), Row: live("v", 1)}}},
		"row above":   {Rows: []row.Mutation{{Key: []byte("21/k"), Row: live("v", 1)}}},
		"next above":  {Next: ring.AppendTokenPrefix(nil, 21)},
		"next below":  {Next: ring.AppendTokenPrefix(nil, 9)},
		"short next":  {Next: []byte{1, 2}},
		"empty token": {Next: ring.AppendTokenPrefix(nil, ring.MinToken)},
	} {
		sp := s
		if name == "empty token" {
			sp = Span{From: ring.MinToken, To: 0}
		}
		if _, err := Merge(sp, []Page{p}); !errors.Is(err, ErrPage) {
			t.Errorf("%s: %v, want ErrPage", name, err)
		}
	}
}

// A whole scan of a ring of fake replicas, each page from a random quorum of the span's
// replicas and of a random size, returns every key acknowledged at quorum exactly once
// (no duplicates: a cursor is never repeated here), never a key deleted at quorum, only
// keys that exist somewhere, in token order.
func TestScanAtQuorumReturnsEveryQuorumKeyOnceInTokenOrder(t *testing.T) {
	fakeTokens(t)
	rng := rand.New(rand.NewPCG(seed(t), 1))
	for round := range 100 {
		ids := []ring.NodeID{"n0", "n1", "n2", "n3", "n4"}[:3+rng.IntN(3)]
		tokens := map[ring.NodeID][]ring.Token{}
		taken := map[ring.Token]bool{}
		for _, id := range ids {
			for range 1 + rng.IntN(3) {
				tk := ring.Token(rng.IntN(2000) - 1000)
				for taken[tk] {
					tk++
				}
				taken[tk] = true
				tokens[id] = append(tokens[id], tk)
			}
		}
		r := testRing(t, tokens)
		const rf = 3
		q := coord.Quorum.Required(rf)
		reps := map[ring.NodeID]*fakeReplica{}
		for _, id := range ids {
			reps[id] = &fakeReplica{rows: map[string]row.Row{}}
		}
		must, mustNot, exists := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i := range 60 {
			// Few tokens, so that keys share them.
			key := fmt.Sprintf("%d/k%d", rng.IntN(2400)-1200, i)
			set := ring.Simple{}.Replicas(r, tokenOf([]byte(key)), rf)
			rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
			acked := q + rng.IntN(rf-q+1) // acknowledged at quorum...
			kind := rng.IntN(4)
			if kind == 0 {
				acked = rng.IntN(q) // ...or reached fewer replicas (maybe none)
			}
			for _, id := range set[:acked] {
				reps[id].put(key, live("v", 10))
			}
			if acked > 0 {
				exists[key] = true
			}
			switch {
			case kind == 1: // deleted at quorum
				rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
				for _, id := range set[:q] {
					reps[id].put(key, deleted(20))
				}
				mustNot[key] = true
			case kind != 0:
				must[key] = true
			}
		}
		same := sameSet(r, ring.Simple{}, rf)
		var got []string
		var lastTok ring.Token = ring.MinToken
		cursor, pages := uint64(0), 0
		for {
			pages++
			if pages > 10000 {
				t.Fatal("the scan does not end")
			}
			s := First(r, From(cursor), same)
			set := ring.Simple{}.Replicas(r, r.RangeEnd(s.Range), rf)
			rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
			var asked []*fakeReplica
			for _, id := range set[:q] {
				asked = append(asked, reps[id])
			}
			res := page(t, s, asked, 1+rng.IntN(6))
			if res.Through < s.From {
				t.Fatalf("no progress from %d", s.From)
			}
			for _, m := range res.Rows {
				tk := tokenOf(m.Key)
				if tk < lastTok || tk < s.From || tk > res.Through {
					t.Fatalf("round %d: key %q of token %d out of order (page [%d, %d])", round, m.Key, tk, s.From, res.Through)
				}
				lastTok = tk
				if len(m.Row.Visible(100)) > 0 {
					got = append(got, string(m.Key))
				}
			}
			if cursor = After(res.Through); cursor == 0 {
				break
			}
		}
		seen := map[string]bool{}
		for _, k := range got {
			switch {
			case seen[k]:
				t.Fatalf("round %d: %q returned twice", round, k)
			case !exists[k]:
				t.Fatalf("round %d: %q never existed", round, k)
			case mustNot[k]:
				t.Fatalf("round %d: %q was deleted at quorum and came back", round, k)
			}
			seen[k] = true
		}
		for k := range must {
			if !seen[k] {
				t.Fatalf("round %d: %q, acknowledged at quorum, was not returned", round, k)
			}
		}
	}
}

// One pass per page with Selector, pages of random sizes, returns every key once in
// token order, whatever order the keys are offered in and however many share a token.
func TestSelectorPagesThroughKeysOfferedInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	for round := range 200 {
		type kt struct {
			tok ring.Token
			key string
		}
		var keys []kt
		for i := range rng.IntN(80) {
			tok := ring.Token(rng.IntN(30) - 15)
			if rng.IntN(10) == 0 {
				tok = ring.Token(rng.Uint64() | 1) // anywhere, MaxToken included sometimes
			}
			if rng.IntN(50) == 0 {
				tok = ring.MaxToken
			}
			keys = append(keys, kt{tok, fmt.Sprint("k", i)})
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, func(a, b kt) int {
			if a.tok != b.tok {
				return cmpToken(a.tok, b.tok)
			}
			return strings.Compare(a.key, b.key)
		})
		var got []kt
		cursor, passes := uint64(0), 0
		for {
			if passes++; passes > 1000 {
				t.Fatal("the scan does not end")
			}
			n := 1 + rng.IntN(5)
			sel := NewSelector(From(cursor), n)
			offer := func(s *Selector) {
				rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				for _, k := range keys {
					r := live("value", 1)
					s.Add(k.tok, []byte(k.key), &r)
				}
			}
			offer(sel)
			rows, through, stuck := sel.Result()
			if stuck {
				sel = Whole(From(cursor))
				offer(sel)
				if rows, through, stuck = sel.Result(); stuck || through != From(cursor) {
					t.Fatal("Whole is stuck")
				}
			}
			if len(rows) > n && through != From(cursor) {
				t.Fatalf("a page of %d holds %d rows", n, len(rows))
			}
			for _, m := range rows {
				got = append(got, kt{ring.Token(0), string(m.Key)})
			}
			if cursor = After(through); cursor == 0 {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d keys returned, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i].key != want[i].key {
				t.Fatalf("round %d: key %d is %s, want %s (token order)", round, i, got[i].key, want[i].key)
			}
		}
	}
}

func TestSelectorCopiesWhatItKeeps(t *testing.T) {
	sel := NewSelector(ring.MinToken, 2)
	key := []byte("abc")
	r := live("v", 1)
	sel.Add(5, key, &r)
	key[0], r.Cells[0].Value[0] = 'X', 'X'
	rows, _, _ := sel.Result()
	if !bytes.Equal(rows[0].Key, []byte("abc")) || string(rows[0].Row.Cells[0].Value) != "v" {
		t.Errorf("kept %q %q: it aliases the caller's memory", rows[0].Key, rows[0].Row.Cells[0].Value)
	}
}
