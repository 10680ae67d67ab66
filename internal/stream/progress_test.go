package stream

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/move"
)

// A record is kept per transfer and read back as saved; a record of another transfer
// under the same ID (a reverting change's), a damaged one, or none starts the transfer
// over; Completed lists the done ones of a change by index, past stray files; Discard
// removes a change's records and nothing else.
func TestProgressRecordsOneFilePerTransfer(t *testing.T) {
	dir := t.TempDir()
	p, err := newProgressStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := move.Transfer{Range: rangeOf(0.8, 0.2), Source: "a", Destination: "b"}
	id := TransferID{Change: 4, Index: 11}
	rec, fresh, err := p.load(id, tr)
	if err != nil || !fresh || len(rec.Keys) != 2 || rec.Done {
		t.Fatalf("no record: %+v, fresh %v, %v", rec, fresh, err)
	}
	rec.Keys[0] = keyProgress{Next: []byte{0x80, 0, 1}}
	rec.Bytes, rec.Rows = 123, 4
	if err := p.save(id, &rec); err != nil {
		t.Fatal(err)
	}
	got, fresh, err := p.load(id, tr)
	if err != nil || fresh || string(got.Keys[0].Next) != string(rec.Keys[0].Next) || got.Bytes != 123 || got.Rows != 4 {
		t.Fatalf("read back %+v, fresh %v, %v", got, fresh, err)
	}
	reverse := move.Transfer{Range: tr.Range, Source: "b", Destination: "a"}
	if _, fresh, _ := p.load(id, reverse); !fresh {
		t.Fatal("a record of another transfer under the same ID was taken")
	}
	if err := os.WriteFile(p.path(TransferID{4, 12}), []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := p.load(TransferID{4, 12}, tr); err != nil || !fresh {
		t.Fatalf("a damaged record: fresh %v, %v", fresh, err)
	}

	for _, i := range []int{3, 1, 20} {
		done := newRecord(tr)
		done.Done = true
		if err := p.save(TransferID{4, i}, &done); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.save(TransferID{5, 0}, &rec); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(p.changeDir(4), "transfer-9.json.tmp"), []byte("{}"), 0o644)
	ids, err := p.completed(4)
	if err != nil || len(ids) != 3 || ids[0] != (TransferID{4, 1}) || ids[1] != (TransferID{4, 3}) || ids[2] != (TransferID{4, 20}) {
		t.Fatalf("completed %v, %v", ids, err)
	}
	if err := p.discard(4); err != nil {
		t.Fatal(err)
	}
	if ids, err := p.completed(4); err != nil || len(ids) != 0 {
		t.Fatalf("completed after discard: %v, %v", ids, err)
	}
	if _, fresh, _ := p.load(TransferID{5, 0}, tr); fresh {
		t.Fatal("discarding change 4 lost change 5's record")
	}
	if err := p.discard(99); err != nil {
		t.Fatalf("discarding a change without records: %v", err)
	}
	// The store saves again into a discarded change's directory.
	if err := p.save(id, &rec); err != nil {
		t.Fatal(err)
	}
}
