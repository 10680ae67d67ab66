package row

import (
	"math/rand"
	"testing"
)

func cell(name string, ts int64, val string) Cell {
	return Cell{Name: []byte(name), Timestamp: ts, Value: []byte(val)}
}

func tomb(name string, ts int64) Cell {
	return Cell{Name: []byte(name), Timestamp: ts, Tombstone: true}
}

func TestMergeKeepsNewerCellPerColumn(t *testing.T) {
	a := Row{Cells: []Cell{cell("a", 1, "old"), cell("b", 5, "b5")}}
	b := Row{Cells: []Cell{cell("a", 2, "new"), cell("c", 1, "c1")}}
	got := rowString(Merge(a, b))
	if want := "del=0 a@2=new b@5=b5 c@1=c1"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestMergeTieBreaks(t *testing.T) {
	cases := []struct {
		name string
		a, b Cell
		want string
	}{
		{"tombstone beats live at equal timestamp", cell("a", 3, "z"), tomb("a", 3), "a@3=X"},
		{"larger value wins at equal timestamp", cell("a", 3, "x"), cell("a", 3, "y"), "a@3=y"},
		{"no expiry beats expiry at equal value", Cell{Name: []byte("a"), Timestamp: 3, Value: []byte("v"), ExpiresAt: 9}, cell("a", 3, "v"), "a@3=v"},
		{"later expiry wins", Cell{Name: []byte("a"), Timestamp: 3, Value: []byte("v"), ExpiresAt: 9}, Cell{Name: []byte("a"), Timestamp: 3, Value: []byte("v"), ExpiresAt: 7}, "a@3=v~9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]Cell{{tc.a, tc.b}, {tc.b, tc.a}} {
				got := rowString(Merge(Row{Cells: []Cell{order[0]}}, Row{Cells: []Cell{order[1]}}))
				if want := "del=0 " + tc.want; got != want {
					t.Fatalf("got %s, want %s", got, want)
				}
			}
		})
	}
}

func TestRowTombstoneShadowsCellsAtOrBeforeIt(t *testing.T) {
	a := Row{Cells: []Cell{cell("a", 4, "at"), cell("b", 3, "before"), cell("c", 5, "after")}}
	got := rowString(Merge(a, Row{Deleted: 4}))
	if want := "del=4 c@5=after"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestMergeIsACommutativeIdempotentSemigroup checks the three laws that let LSM operands
// merge in any grouping and replicas apply writes in any order.
func TestMergeIsACommutativeIdempotentSemigroup(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	for i := 0; i < 20000; i++ {
		a, b, c := randomRow(rng), randomRow(rng), randomRow(rng)
		if x, y := rowString(Merge(a, b)), rowString(Merge(b, a)); x != y {
			t.Fatalf("not commutative:\n a=%s\n b=%s\n ab=%s\n ba=%s", rowString(a), rowString(b), x, y)
		}
		if x, y := rowString(Merge(Merge(a, b), c)), rowString(Merge(a, Merge(b, c))); x != y {
			t.Fatalf("not associative:\n a=%s\n b=%s\n c=%s\n (ab)c=%s\n a(bc)=%s", rowString(a), rowString(b), rowString(c), x, y)
		}
		if x, y := rowString(Merge(a, a)), rowString(a); x != y {
			t.Fatalf("not idempotent: %s -> %s", y, x)
		}
		if m := Merge(a, b); m.Validate() != nil {
			t.Fatalf("merge produced an invalid row %s: %v", rowString(m), m.Validate())
		}
	}
}

func TestPurgeDropsOnlyWhatIsOlderThanGrace(t *testing.T) {
	r := Row{Deleted: 5, Cells: []Cell{
		tomb("a", 9), tomb("b", 20),
		{Name: []byte("c"), Timestamp: 6, Value: []byte("v"), ExpiresAt: 9},
		{Name: []byte("d"), Timestamp: 6, Value: []byte("v"), ExpiresAt: 30},
		cell("e", 6, "live"),
	}}
	Purge(&r, 25, 10) // horizon 15
	if got, want := rowString(r), "del=0 b@20=X d@6=v~30 e@6=live"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestVisibleHidesTombstonesAndExpiredCells(t *testing.T) {
	r := Row{Cells: []Cell{
		tomb("a", 1),
		{Name: []byte("b"), Timestamp: 1, Value: []byte("v"), ExpiresAt: 10},
		cell("c", 1, "v"),
	}}
	if n := len(r.Visible(9)); n != 2 {
		t.Fatalf("at 9: %d visible, want 2", n)
	}
	if n := len(r.Visible(10)); n != 1 {
		t.Fatalf("at 10: %d visible, want 1 (expiry is exclusive)", n)
	}
}

func TestCloneSharesNoMemory(t *testing.T) {
	r := Row{Cells: []Cell{cell("a", 1, "xy")}}
	c := r.Clone()
	r.Cells[0].Value[0] = 'Z'
	r.Cells[0].Name[0] = 'Q'
	if got := rowString(c); got != "del=0 a@1=xy" {
		t.Fatalf("clone changed with its source: %s", got)
	}
}

func TestValidateRejectsBrokenRows(t *testing.T) {
	bad := []Row{
		{Cells: []Cell{cell("b", 1, "x"), cell("a", 1, "x")}},
		{Cells: []Cell{cell("a", 1, "x"), cell("a", 2, "x")}},
		{Cells: []Cell{{Name: []byte("a"), Timestamp: 1, Tombstone: true, Value: []byte("x")}}},
		{Cells: []Cell{{Name: []byte("a"), Timestamp: -1}}},
		{Deleted: -3},
	}
	for i, r := range bad {
		if r.Validate() == nil {
			t.Errorf("row %d (%s) passed validation", i, rowString(r))
		}
	}
	if err := ValidateKey(make([]byte, MaxKeySize+1)); err == nil {
		t.Error("oversized key passed")
	}
	if err := ValidateKey(nil); err == nil {
		t.Error("empty key passed")
	}
}
