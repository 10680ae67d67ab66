package engine

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

func TestReadViewTurnsExpiredCellsIntoTombstones(t *testing.T) {
	r := row.Row{Cells: []row.Cell{
		{Name: []byte("a"), Timestamp: 5, Value: []byte("x"), ExpiresAt: 10},
		{Name: []byte("b"), Timestamp: 5, Value: []byte("y"), ExpiresAt: 20},
		{Name: []byte("c"), Timestamp: 5, Value: []byte("z")},
	}}
	v := ReadView(r, 10)
	if a := v.Find([]byte("a")); a == nil || !a.Tombstone || a.Timestamp != 5 || a.Value != nil {
		t.Fatalf("expired cell a = %+v, want a tombstone at its timestamp", a)
	}
	if n := len(v.Visible(10)); n != 2 {
		t.Fatalf("%d visible cells, want 2", n)
	}
	if !r.Cells[0].Live(9) || r.Cells[0].Tombstone {
		t.Fatal("ReadView modified its input")
	}
	// The tombstone still wins over an older live copy held elsewhere: no resurrection
	// through repair.
	older := row.Row{Cells: []row.Cell{{Name: []byte("a"), Timestamp: 3, Value: []byte("old")}}}
	if m := row.Merge(v, older); m.Find([]byte("a")).Live(10) {
		t.Fatal("an older live value came back over an expired cell")
	}
}

func TestParseDurability(t *testing.T) {
	for in, want := range map[string]Durability{"sync": Sync, "": Sync, "periodic": Periodic} {
		got, err := ParseDurability(in)
		if err != nil || got != want {
			t.Errorf("ParseDurability(%q) = %v, %v", in, got, err)
		}
		if in != "" && got.String() != in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	if _, err := ParseDurability("always"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

func TestLockDirExcludesASecondHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir, "LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir, "LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockDir(dir, "LOCK")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
	l2.Unlock() // idempotent
}

func TestValidateBatchAndRange(t *testing.T) {
	ok := []row.Mutation{{Key: []byte("k"), Row: row.Row{Deleted: 1}}}
	if err := ValidateBatch(ok); err != nil {
		t.Fatal(err)
	}
	bad := append(ok, row.Mutation{Key: nil})
	if err := ValidateBatch(bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	if err := ValidateRange([]byte("b"), []byte("a")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("lo > hi: %v", err)
	}
	if err := ValidateRange(nil, []byte("a")); err != nil {
		t.Fatal(err)
	}
}
