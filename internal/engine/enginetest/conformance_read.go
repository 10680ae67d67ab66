package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The checks in this file cover reads (iteration order, bounds, snapshots) and who owns
// memory passed to and returned by the engine.

// iterKeys are chosen to trip bound handling: prefixes of one another, 0x00 and 0xff bytes.
var iterKeys = []string{"\x00", "\x00\x00", "a", "a\x00", "ab", "b", "ba", "c", "m1", "m2", "m3", "\xff", "\xff\xff"}

func checkIterBounds(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	// Half the keys reach on-disk form before the rest are written and some overwritten,
	// so a layered engine merges sources while iterating.
	for i, k := range iterKeys {
		if i%2 == 0 {
			fx.apply(mut(k, cell("v", "old-"+k, StartMicros)))
		}
	}
	fx.flush()
	for _, k := range iterKeys {
		fx.apply(mut(k, cell("v", "new-"+k, StartMicros+1)))
	}
	cases := [][2][]byte{
		{nil, nil}, {[]byte("a"), nil}, {nil, []byte("b")}, {[]byte("a"), []byte("b")},
		{[]byte("a\x00"), []byte("ba")}, {[]byte("aa"), []byte("ab")}, {[]byte("b"), []byte("b")},
		{[]byte("zz"), nil}, {nil, []byte("\x00")}, {[]byte("\x00"), []byte("\x00\x00")},
		{[]byte{}, nil}, {[]byte("m"), []byte("n")}, {[]byte("\xff"), nil}, {nil, []byte("\xff\xff\xff")},
	}
	fx.inEveryState(func() {
		for _, c := range cases {
			got, err := scan(fx.e, c[0], c[1])
			if err != nil {
				t.Errorf("%s: scan [%s, %s) (%s): %v", f.Name, fmtBound(c[0]), fmtBound(c[1]), fx.state, err)
				continue
			}
			if d := diffScans(got, expectedRange(c[0], c[1])); d != "" {
				t.Errorf("%s: scan [%s, %s) (%s): %s", f.Name, fmtBound(c[0]), fmtBound(c[1]), fx.state, d)
			}
		}
	})
}

// expectedRange is what checkIterBounds must see in [lo, hi).
func expectedRange(lo, hi []byte) []kv {
	keys := slices.Clone(iterKeys)
	slices.Sort(keys)
	var out []kv
	for _, k := range keys {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			out = append(out, kv{key: []byte(k), row: row.Row{Cells: []row.Cell{cell("v", "new-"+k, StartMicros+1)}}})
		}
	}
	return out
}

func checkIterInverted(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	fx.apply(mut("a", cell("v", "1", StartMicros)))
	it, err := fx.e.NewIterator([]byte("b"), []byte("a"))
	if !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("%s: NewIterator(b, a) error = %v, want ErrInvalid", f.Name, err)
	}
	if it != nil && err == nil {
		it.Close()
	}
	if rows, err := scan(fx.e, []byte("a"), []byte("a")); err != nil || len(rows) != 0 {
		t.Errorf("%s: scan [a, a) = %d rows, %v; want an empty range", f.Name, len(rows), err)
	}
}

// checkIterSnapshot opens iterators (one untouched, one advanced by a row), then
// overwrites, deletes, adds rows and flushes; both must still see the data as it was.
func checkIterSnapshot(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	var before []kv
	for i := 1; i <= 5; i++ {
		m := mut(fmt.Sprintf("s%d", i), cell("v", fmt.Sprint(i), ts))
		fx.apply(m)
		before = append(before, kv{key: m.Key, row: m.Row})
	}
	untouched, err := fx.e.NewIterator(nil, nil)
	if err != nil {
		t.Fatalf("%s: NewIterator: %v", f.Name, err)
	}
	advanced, err := fx.e.NewIterator([]byte("s1"), []byte("s9"))
	if err != nil {
		t.Fatalf("%s: NewIterator: %v", f.Name, err)
	}
	var first []kv
	if advanced.Next() {
		r := advanced.Row()
		first = append(first, kv{key: bytes.Clone(advanced.Key()), row: r.Clone()})
	}
	fx.apply(mut("s0", cell("v", "new", ts+1)), mut("s3", cell("v", "over", ts+1)),
		rowDelete("s2", ts+1), mut("s6", cell("v", "new", ts+1)), mut("s1", tomb("v", ts+1)))
	fx.flush()
	got, err := collect(untouched)
	if d := diffScans(got, before); err != nil || d != "" {
		t.Errorf("%s: iterator opened before writes saw them: %s (err %v)", f.Name, d, err)
	}
	rest, err := collect(advanced)
	if d := diffScans(append(first, rest...), before); err != nil || d != "" {
		t.Errorf("%s: iterator advanced before writes saw them: %s (err %v)", f.Name, d, err)
	}
	now, err := scan(fx.e, nil, nil)
	if err != nil || len(now) != 7 {
		t.Errorf("%s: new iterator after writes: %d rows, %v; want 7", f.Name, len(now), err)
	}
}

// checkIterStable: Key and Row may be called any number of times at one position and
// return the same thing; what was copied out stays correct after Next.
func checkIterStable(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	var want []kv
	for i := range 50 {
		m := mut(fmt.Sprintf("r%02d", i), cell("a", fmt.Sprint("value-", i), StartMicros), cell("b", "x", StartMicros+int64(i)))
		fx.apply(m)
		want = append(want, kv{key: m.Key, row: m.Row})
	}
	fx.inEveryState(func() {
		it, err := fx.e.NewIterator(nil, nil)
		if err != nil {
			t.Fatalf("%s: NewIterator: %v", f.Name, err)
		}
		defer it.Close()
		var got []kv
		for it.Next() {
			k, r := bytes.Clone(it.Key()), it.Row()
			r = r.Clone()
			if !bytes.Equal(it.Key(), k) || !RowsEqual(it.Row(), r) {
				t.Errorf("%s (%s): Key/Row changed between two calls at %q", f.Name, fx.state, k)
			}
			got = append(got, kv{key: k, row: r})
		}
		if d := diffScans(got, want); it.Err() != nil || d != "" {
			t.Errorf("%s (%s): copied rows: %s (err %v)", f.Name, fx.state, d, it.Err())
		}
	})
}

// checkGetOwned scribbles over every byte and cell of a row returned by Get; the engine's
// copy (in a memtable, a cache block or a page) must not change.
func checkGetOwned(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	want := row.Row{Cells: []row.Cell{cell("a", "alpha", StartMicros), cell("b", "beta", StartMicros)}}
	fx.apply(row.Mutation{Key: []byte("owned"), Row: want.Clone()})
	fx.inEveryState(func() {
		for range 2 {
			r := fx.get([]byte("owned")).row
			for i := range r.Cells {
				scribble(r.Cells[i].Name)
				scribble(r.Cells[i].Value)
				r.Cells[i].Timestamp = 1
			}
			fx.expect("owned", want)
		}
	})
}

// checkApplyCopies reuses the key, name and value buffers of an applied batch.
func checkApplyCopies(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	key, name, value := []byte("copy-key"), []byte("col"), []byte("value")
	batch := []row.Mutation{{Key: key, Row: row.Row{Cells: []row.Cell{{Name: name, Value: value, Timestamp: StartMicros}}}}}
	fx.apply(batch...)
	scribble(key)
	scribble(name)
	scribble(value)
	batch[0].Row.Cells[0].Timestamp = StartMicros + 99
	fx.inEveryState(func() {
		fx.expect("copy-key", row.Row{Cells: []row.Cell{cell("col", "value", StartMicros)}})
		fx.expectMissing(string(key))
	})
}

// scribble overwrites b in place.
func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

// checkInvalidBatch: one invalid mutation makes Apply fail with ErrInvalid and apply
// nothing of its batch, wherever the invalid mutation sits.
func checkInvalidBatch(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	ts := StartMicros
	invalid := map[string]row.Mutation{
		"empty-key":         mut("", cell("a", "v", ts)),
		"key-too-large":     {Key: bytes.Repeat([]byte{'k'}, row.MaxKeySize+1), Row: row.Row{Cells: []row.Cell{cell("a", "v", ts)}}},
		"unsorted-cells":    mut("k", cell("b", "v", ts), cell("a", "v", ts)),
		"duplicate-column":  mut("k", cell("a", "v", ts), cell("a", "w", ts)),
		"tombstone-value":   mut("k", row.Cell{Name: []byte("a"), Value: []byte("v"), Timestamp: ts, Tombstone: true}),
		"negative-time":     mut("k", cell("a", "v", -1)),
		"negative-row-time": rowDelete("k", -5),
	}
	for name, bad := range invalid {
		good := mut("ok-"+name, cell("a", "v", ts))
		for _, batch := range [][]row.Mutation{{good, bad}, {bad, good}} {
			if err := fx.e.Apply(batch); !errors.Is(err, engine.ErrInvalid) {
				t.Errorf("%s: apply with %s: error %v, want ErrInvalid", f.Name, name, err)
			}
		}
	}
	for _, empty := range [][]row.Mutation{nil, {}} {
		if err := fx.e.Apply(empty); err != nil {
			t.Errorf("%s: apply of an empty batch: %v", f.Name, err)
		}
	}
	fx.inEveryState(func() {
		if rows, err := scan(fx.e, nil, nil); err != nil || len(rows) != 0 {
			t.Errorf("%s (%s): invalid batches left %d rows (err %v); first: %s", f.Name, fx.state, len(rows), err, describeFirst(rows))
		}
	})
}

func describeFirst(rows []kv) string {
	if len(rows) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q %s", trunc(rows[0].key), FormatRow(rows[0].row))
}
