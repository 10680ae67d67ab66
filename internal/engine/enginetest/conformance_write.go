package enginetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// The checks in this file cover what a write does to a row: the merge rules of package
// row (last write wins per column, tie-breaks, tombstones), expiry and purging.

func checkNameAndRole(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	if fx.e.Name() == "" {
		t.Errorf("%s: Name() is empty", f.Name)
	}
	switch r := fx.e.Role(); r {
	case ring.WriteOptimized, ring.ReadOptimized, ring.InMemory:
	default:
		t.Errorf("%s: Role() = %v, want one of the three roles", f.Name, r)
	}
}

func checkPutGet(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"k", "k1", "k1\x00", "k10", "k2", "\x00", "\xff\xff", "a/b/c"}
	want := make(map[string]row.Row)
	for i, k := range keys {
		want[k] = RandomRow(rng, 1+i%4, 8*i, StartMicros+int64(i))
		fx.apply(row.Mutation{Key: []byte(k), Row: want[k]})
	}
	fx.inEveryState(func() {
		for _, k := range keys {
			fx.expect(k, want[k])
		}
		for _, k := range []string{"absent", "k0", "k1\x00\x00", "\x00\x00", "\xff"} {
			fx.expectMissing(k)
		}
	})
}

func checkEmptyMutation(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	fx.apply(mut("empty"))
	fx.inEveryState(func() {
		fx.expectMissing("empty")
		rows, err := scan(fx.e, nil, nil)
		if err != nil || len(rows) != 0 {
			t.Errorf("%s: scan (%s) after an empty mutation = %d rows, %v; want none", f.Name, fx.state, len(rows), err)
		}
	})
}

func checkMergePartial(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	want := row.Row{Cells: []row.Cell{cell("a", "1", ts), cell("b", "2", ts+10), cell("c", "3", ts+5)}}
	fx.expectMergeAllOrders("partial", want,
		mut("", cell("a", "1", ts), cell("c", "3", ts+5)),
		mut("", cell("b", "2", ts+10)))
}

func checkNewerWins(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	want := row.Row{Cells: []row.Cell{cell("a", "new", ts+50), cell("b", "newb", ts+100)}}
	fx.expectMergeAllOrders("lww", want,
		mut("", cell("a", "old", ts), cell("b", "newb", ts+100)),
		mut("", cell("a", "new", ts+50), cell("b", "oldb", ts+20)))
}

func checkTombstoneWinsTie(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	want := row.Row{Cells: []row.Cell{tomb("a", ts), tomb("b", ts)}}
	fx.expectMergeAllOrders("tie-tomb", want,
		mut("", cell("a", "v", ts), tomb("b", ts)),
		mut("", tomb("a", ts), cell("b", "zzzz", ts)))
}

func checkLargerValueWinsTie(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	later := ts + time.Hour.Microseconds()
	d1 := row.Cell{Name: []byte("d"), Value: []byte("v"), Timestamp: ts, ExpiresAt: later}
	d2 := row.Cell{Name: []byte("d"), Value: []byte("v"), Timestamp: ts}
	want := row.Row{Cells: []row.Cell{cell("a", "y", ts), cell("b", "ba", ts), cell("c", "\x00", ts), d2}}
	fx.expectMergeAllOrders("tie-value", want,
		mut("", cell("a", "x", ts), cell("b", "b", ts), cell("c", "", ts), d1),
		mut("", cell("a", "y", ts), cell("b", "ba", ts), cell("c", "\x00", ts), d2))
}

func checkColumnTombstone(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	fx.expectMergeAllOrders("coltomb", row.Row{Cells: []row.Cell{tomb("a", ts+20), cell("b", "w", ts)}},
		mut("", cell("a", "v", ts), cell("b", "w", ts)),
		mut("", tomb("a", ts+20), tomb("b", ts-10)))
	// A row holding only tombstones is still found, so replicas can compare deletes.
	fx.expectMergeAllOrders("tomb-only", row.Row{Cells: []row.Cell{tomb("a", ts+20)}},
		mut("", cell("a", "v", ts)),
		mut("", tomb("a", ts+20)))
	// A write newer than the tombstone shows again.
	fx.expectMergeAllOrders("rewritten", row.Row{Cells: []row.Cell{cell("a", "again", ts+30)}},
		mut("", cell("a", "v", ts)),
		mut("", tomb("a", ts+20)),
		mut("", cell("a", "again", ts+30)))
}

func checkRowTombstone(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	want := row.Row{Deleted: ts + 100, Cells: []row.Cell{cell("c", "z", ts+110), cell("f", "after", ts+101)}}
	fx.expectMergeAllOrders("rowdel", want,
		mut("", cell("a", "x", ts+90), cell("b", "y", ts+100), cell("c", "z", ts+110)),
		rowDelete("", ts+100),
		mut("", cell("a", "late", ts+95), cell("b", "late", ts+100)), // older than the delete
		rowDelete("", ts+50), // an older row delete never lowers the newer one
		row.Mutation{Row: row.Row{Deleted: ts + 100, Cells: []row.Cell{
			cell("e", "same", ts+100), cell("f", "after", ts+101)}}})
	fx.expectMergeAllOrders("rowdel-only", row.Row{Deleted: ts + 100},
		mut("", cell("a", "x", ts+90)),
		rowDelete("", ts+100))
}

// checkExpiry: a cell reads as a tombstone with its own timestamp from ExpiresAt on, and
// keeps shadowing older writes of its column.
func checkExpiry(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	a := row.Cell{Name: []byte("a"), Value: []byte("v"), Timestamp: ts, ExpiresAt: ts + 100}
	c := row.Cell{Name: []byte("c"), Value: []byte("new"), Timestamp: ts, ExpiresAt: ts + 50}
	fx.apply(mut("ttl", a, cell("b", "w", ts), cell("c", "old", ts-10)), mut("ttl", c))
	live := row.Row{Cells: []row.Cell{a, cell("b", "w", ts), c}}
	fx.inEveryState(func() { fx.expect("ttl", live) })
	fx.clk.Set(ts + 49)
	fx.expect("ttl", live)
	fx.clk.Set(ts + 50) // exactly at ExpiresAt the cell is gone
	fx.expect("ttl", row.Row{Cells: []row.Cell{a, cell("b", "w", ts), tomb("c", ts)}})
	fx.clk.Set(ts + 100)
	expired := row.Row{Cells: []row.Cell{tomb("a", ts), cell("b", "w", ts), tomb("c", ts)}}
	fx.apply(mut("ttl", cell("c", "older", ts-5)))
	fx.inEveryState(func() {
		fx.expect("ttl", expired)
		rows, err := scan(fx.e, nil, nil)
		if err != nil || len(rows) != 1 || !RowsEqual(rows[0].row, expired) {
			t.Errorf("%s: scan (%s) = %v rows, %v; want the expired view %s", f.Name, fx.state, len(rows), err, FormatRow(expired))
		}
	})
}

// checkPurge shortens the grace period, deletes and expires data spread over several
// flushes, moves the clock past the grace period and writes more data to provoke
// rewrites. Tombstones may then disappear, but what a client sees must not change: no
// deleted or expired value comes back, and no live value is lost.
func checkPurge(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.GracePeriod = time.Hour })
	model := NewModel(engine.Options{Clock: fx.clk.Now})
	both := func(muts ...row.Mutation) {
		fx.apply(muts...)
		if err := model.Apply(muts); err != nil {
			t.Fatalf("model: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ts := StartMicros
	for i := range 200 {
		both(row.Mutation{Key: fmt.Appendf(nil, "p%03d", i), Row: RandomRow(rng, 3, 20, ts)})
	}
	fx.flush()
	for i := range 200 {
		both(purgeOverwrite(i, ts))
	}
	fx.flush()
	fx.clk.Set(ts + 2*time.Hour.Microseconds())
	for round := range 3 {
		for i := range 200 {
			both(row.Mutation{Key: fmt.Appendf(nil, "q%d-%03d", round, i), Row: RandomRow(rng, 10, 100, ts+int64(round))})
		}
		fx.reopen()
	}
	fx.inEveryState(func() { expectSameVisible(t, fx, model) })
}

// checkPurgeHorizon gives the engine a PurgeHorizon that keeps every tombstone of the
// keep* keys and bounds nothing for the drop* keys, deletes both, moves the clock past
// the grace period and writes an old cell tombstone to every key (a rewrite of each
// row). A keep* key still holds its row tombstone, in every state, where the grace
// period alone would let the rewrite or the read drop it: what a node whose ranges were
// not repaired since the delete keeps (internal/node/purge.go). A drop* key shows no
// value (an engine may purge its tombstones or not yet).
func checkPurgeHorizon(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) {
		o.GracePeriod = time.Hour
		o.PurgeHorizon = func(key []byte) int64 {
			if bytes.HasPrefix(key, []byte("keep")) {
				return 0
			}
			return 1 << 62
		}
	})
	ts := StartMicros
	const n = 50
	for _, prefix := range []string{"keep", "drop"} {
		for i := range n {
			fx.apply(mut(fmt.Sprintf("%s%03d", prefix, i), cell("v", "value", ts)))
		}
	}
	fx.flush()
	for _, prefix := range []string{"keep", "drop"} {
		for i := range n {
			fx.apply(rowDelete(fmt.Sprintf("%s%03d", prefix, i), ts+1))
		}
	}
	fx.flush()
	fx.clk.Set(ts + 2*time.Hour.Microseconds())
	for _, prefix := range []string{"keep", "drop"} {
		for i := range n {
			fx.apply(mut(fmt.Sprintf("%s%03d", prefix, i), tomb("w", ts+2)))
		}
	}
	fx.inEveryState(func() {
		for i := range n {
			fx.expect(fmt.Sprintf("keep%03d", i), row.Row{Deleted: ts + 1, Cells: []row.Cell{tomb("w", ts+2)}})
			key := []byte(fmt.Sprintf("drop%03d", i))
			if r, _, err := fx.e.Get(key); err != nil || len(r.Visible(fx.clk.Now())) > 0 {
				t.Errorf("%s: get %q (%s) = %s, %v: a deleted value", f.Name, key, fx.state, FormatRow(r), err)
			}
		}
	})
}

// purgeOverwrite deletes row i, a column of it, or overwrites a column with a short TTL,
// or leaves it alone, by i mod 4.
func purgeOverwrite(i int, ts int64) row.Mutation {
	key := fmt.Appendf(nil, "p%03d", i)
	switch i % 4 {
	case 0:
		return row.Mutation{Key: key, Row: row.Row{Deleted: ts + 1}}
	case 1:
		return row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{tomb("c001", ts+1)}}}
	case 2:
		c := row.Cell{Name: []byte("c002"), Value: []byte("short-lived"), Timestamp: ts + 1, ExpiresAt: ts + 10}
		return row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{c}}}
	}
	return row.Mutation{Key: key}
}

// expectSameVisible compares what a client would see (live cells only) in e and the model,
// key by key over a full scan.
func expectSameVisible(t testing.TB, fx *fixture, model *Model) {
	t.Helper()
	now := fx.clk.Now()
	got, err := scan(fx.e, nil, nil)
	if err != nil {
		t.Fatalf("%s: scan (%s): %v", fx.f.Name, fx.state, err)
	}
	want, _ := scan(model, nil, nil)
	visible := func(rows []kv) map[string]row.Row {
		out := make(map[string]row.Row)
		for _, r := range rows {
			if v := r.row.Visible(now); len(v) > 0 {
				out[string(r.key)] = row.Row{Cells: v}
			}
		}
		return out
	}
	g, w := visible(got), visible(want)
	for k, wr := range w {
		if gr, ok := g[k]; !ok || !RowsEqual(gr, wr) {
			t.Errorf("%s (%s): key %q shows %s, want %s", fx.f.Name, fx.state, k, FormatRow(gr), FormatRow(wr))
		}
	}
	for k, gr := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s (%s): deleted key %q came back as %s", fx.f.Name, fx.state, k, FormatRow(gr))
		}
	}
}

func checkMaxSizes(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	key := bytes.Repeat([]byte{'k'}, row.MaxKeySize)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	want := row.Row{Cells: []row.Cell{{Name: []byte("v"), Value: big, Timestamp: StartMicros}}}
	fx.apply(row.Mutation{Key: key, Row: want}, mut("small", cell("a", "b", StartMicros)))
	fx.inEveryState(func() {
		fx.expect(string(key), want)
		rows, err := scan(fx.e, nil, nil)
		if err != nil || len(rows) != 2 || !bytes.Equal(rows[0].key, key) || !RowsEqual(rows[0].row, want) {
			t.Errorf("%s: scan (%s) of the 64 KiB key: %d rows, err %v", f.Name, fx.state, len(rows), err)
		}
	})
}
