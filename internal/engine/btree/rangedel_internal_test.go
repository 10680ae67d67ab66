package btree

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

// A range of 50,000 rows is deleted in five transactions of 10,000 keys, not one, and a
// write takes its turn between two of them: it commits while the deletion is under way.
// Keys too long for bbolt (in nested buckets, see keys.go) go with their neighbours. The
// row count, the row cache and Check agree afterwards.
func TestDeleteRangeOfManyRowsTakesSeveralTransactions(t *testing.T) {
	o := testOptions()
	var d *DB
	chunks, wrote := 0, false
	o.afterDeleteChunk = func() {
		chunks++
		if chunks == 1 {
			wrote = d.Apply([]row.Mutation{put("a-between-chunks", "c", "v", startMicros)}) == nil
		}
	}
	d = openTest(t, t.TempDir(), o)
	const rows = 5 * deleteRangeChunk
	long := func(i int) string {
		return fmt.Sprintf("k%06d", i) + string(bytes.Repeat([]byte{'x'}, directKeyMax+10))
	}
	batch := make([]row.Mutation, 0, 1000)
	for i := range rows {
		batch = append(batch, put(fmt.Sprintf("k%06d", i), "c", "value", startMicros))
		if i%10_000 == 5 {
			batch = append(batch, put(long(i), "c", "long", startMicros))
		}
		if len(batch) >= 1000 {
			if err := d.Apply(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	outside := []row.Mutation{put("j", "c", "below", startMicros), put("l", "c", "above", startMicros)}
	if err := d.Apply(append(batch, outside...)); err != nil {
		t.Fatal(err)
	}
	mustGet(t, d, "k000005", "c", "value") // cached
	mustGet(t, d, long(5), "c", "long")
	commits := d.commits.Load()
	if err := d.DeleteRange([]byte("k"), []byte("l")); err != nil {
		t.Fatal(err)
	}
	// The rows and the long keys make five full chunks and a few keys: six
	// transactions, and the write between the first two.
	if n := d.commits.Load() - commits; chunks != 6 || n != 7 || !wrote {
		t.Fatalf("deleted %d rows in %d chunks, %d commits in all, a write between them: %t; want 6 chunks, 7 commits, true",
			rows+5, chunks, n, wrote)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.RowsEstimate != 3 || !s.Exact {
		t.Fatalf("rows after the deletion: %d (exact: %t), want 3", s.RowsEstimate, s.Exact)
	}
	for _, k := range []string{"k000005", long(5), "k049999"} {
		if _, found, err := d.Get([]byte(k)); err != nil || found {
			t.Fatalf("get %.10q after the deletion: found %t, %v", k, found, err)
		}
	}
	mustGet(t, d, "j", "c", "below")
	mustGet(t, d, "l", "c", "above")
	mustGet(t, d, "a-between-chunks", "c", "v")
}
