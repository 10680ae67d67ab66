package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// testNow is where the tests' clocks start (November 2023, in microseconds).
const testNow int64 = 1_700_000_000_000_000

var testGrace = time.Hour.Microseconds()

// seed returns a seed for a randomized test and logs it; KURA_SEED is not needed because
// the seed is derived from the test name: rerunning a test reproduces it.
func seed(t *testing.T) *rand.Rand {
	var s int64
	for _, c := range t.Name() {
		s = s*31 + int64(c)
	}
	t.Logf("seed %d", s)
	return rand.New(rand.NewSource(s))
}

// randomRow draws a small row whose columns, timestamps and values collide often, so that
// merges exercise ties, tombstones, expiry and row deletes.
func randomRow(rng *rand.Rand) row.Row {
	var r row.Row
	if rng.Intn(6) == 0 {
		r.Deleted = testNow + int64(rng.Intn(8))
	}
	for c := 'a'; c <= 'f'; c++ {
		if rng.Intn(2) == 0 {
			continue
		}
		cl := row.Cell{Name: []byte{byte(c)}, Timestamp: testNow + int64(rng.Intn(10))}
		switch rng.Intn(4) {
		case 0:
			cl.Tombstone = true
		case 1:
			cl.Value = []byte{byte('0' + rng.Intn(3))}
			cl.ExpiresAt = cl.Timestamp + int64(1+rng.Intn(5))
		default:
			cl.Value = []byte{byte('0' + rng.Intn(3))}
		}
		r.Cells = append(r.Cells, cl)
	}
	return r
}

// mergeAll runs operands through one merger, each fed with MergeNewer or MergeOlder at
// random, and returns the encoded result.
func mergeAll(t *testing.T, rng *rand.Rand, m *pebble.Merger, ops [][]byte, includesBase bool) []byte {
	t.Helper()
	vm, err := m.Merge([]byte("k"), ops[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops[1:] {
		if rng.Intn(2) == 0 {
			err = vm.MergeNewer(op)
		} else {
			err = vm.MergeOlder(op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	v, closer, err := vm.Finish(includesBase)
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	out := bytes.Clone(v)
	if closer != nil {
		closer.Close()
	}
	return out
}

// emptyRow is the encoding of a row with nothing in it.
var emptyRow = row.Encode(&row.Row{})

// TestMergerGivesRowMergeInAnyGrouping merges random operands in random groups, as
// memtables and partial compactions would, then merges the groups' results, and checks the
// outcome against folding row.Merge over the operands.
func TestMergerGivesRowMergeInAnyGrouping(t *testing.T) {
	rng := seed(t)
	m := newMerger(func([]byte) int64 { return testNow - testGrace }, nil)
	for iter := range 500 {
		n := 1 + rng.Intn(8)
		var want row.Row
		ops := make([][]byte, n)
		for i := range ops {
			r := randomRow(rng)
			want = row.Merge(want, r)
			ops[i] = row.Encode(&r)
		}
		rng.Shuffle(n, func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		var partials [][]byte
		for len(ops) > 0 {
			k := 1 + rng.Intn(len(ops))
			partials = append(partials, mergeAll(t, rng, m, ops[:k], false))
			ops = ops[k:]
		}
		got := mergeAll(t, rng, m, partials, false)
		if !bytes.Equal(got, row.Encode(&want)) {
			t.Fatalf("iteration %d: merged %x, want %x", iter, got, row.Encode(&want))
		}
	}
}

// TestMergerPurgesOnlyWithIncludesBase: an old tombstone survives a merge that may not
// have seen every version and goes when includesBase says it did.
func TestMergerPurgesOnlyWithIncludesBase(t *testing.T) {
	rng := seed(t)
	now := testNow + 2*testGrace
	m := newMerger(func([]byte) int64 { return now - testGrace }, nil)
	oldTomb := row.Row{Cells: []row.Cell{{Name: []byte("a"), Timestamp: testNow, Tombstone: true}}}
	live := row.Row{Cells: []row.Cell{{Name: []byte("b"), Value: []byte("v"), Timestamp: testNow}}}
	ops := [][]byte{row.Encode(&oldTomb), row.Encode(&live)}

	want := row.Merge(oldTomb, live)
	if got := mergeAll(t, rng, m, ops, false); !bytes.Equal(got, row.Encode(&want)) {
		t.Errorf("includesBase=false: got %x, want the tombstone kept: %x", got, row.Encode(&want))
	}
	if got := mergeAll(t, rng, m, ops, true); !bytes.Equal(got, row.Encode(&live)) {
		t.Errorf("includesBase=true: got %x, want only the live cell: %x", got, row.Encode(&live))
	}
	only := [][]byte{row.Encode(&oldTomb)}
	if got := mergeAll(t, rng, m, only, false); !bytes.Equal(got, only[0]) {
		t.Errorf("lone tombstone without includesBase: got %x, want it kept", got)
	}
	if got := mergeAll(t, rng, m, only, true); !bytes.Equal(got, emptyRow) {
		t.Errorf("lone tombstone with includesBase: got %x, want the empty row %x", got, emptyRow)
	}
}

// TestMergerKeepsRecentTombstones: a tombstone inside the grace period is kept even when
// the merge saw every version, so that repair can still spread it.
func TestMergerKeepsRecentTombstones(t *testing.T) {
	m := newMerger(func([]byte) int64 { return testNow + testGrace/2 - testGrace }, nil)
	tomb := row.Row{Deleted: testNow}
	op := row.Encode(&tomb)
	if got := mergeAll(t, seed(t), m, [][]byte{op}, true); !bytes.Equal(got, op) {
		t.Errorf("got %x, want the recent row tombstone %x kept", got, op)
	}
}

// TestMergerRejectsCorruptOperands: every malformed operand fails the merge with
// engine.ErrCorrupt, whatever its position.
func TestMergerRejectsCorruptOperands(t *testing.T) {
	m := newMerger(func([]byte) int64 { return testNow - testGrace }, nil)
	good := row.Row{Cells: []row.Cell{{Name: []byte("a"), Value: []byte("v"), Timestamp: testNow}}}
	enc := row.Encode(&good)
	bad := map[string][]byte{
		"empty":       {},
		"version":     append([]byte{99}, enc[1:]...),
		"truncated":   enc[:len(enc)-1],
		"trailing":    append(bytes.Clone(enc), 0),
		"cell flags":  bytes.Replace(bytes.Clone(enc), []byte("a\x00"), []byte("a\x07"), 1),
		"random junk": []byte("not a row at all"),
	}
	for name, op := range bad {
		for pos := range 2 {
			t.Run(fmt.Sprintf("%s/pos%d", name, pos), func(t *testing.T) {
				ops := [][]byte{enc, op}
				if pos == 0 {
					ops[0], ops[1] = op, enc
				}
				vm, err := m.Merge([]byte("k"), ops[0])
				if err == nil {
					err = vm.MergeOlder(ops[1])
				}
				if err == nil {
					_, _, err = vm.Finish(true)
				}
				if !errors.Is(err, engine.ErrCorrupt) {
					t.Errorf("error %v, want ErrCorrupt", err)
				}
			})
		}
	}
}
