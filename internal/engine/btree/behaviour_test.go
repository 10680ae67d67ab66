package btree

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

func TestPurgedRowIsDeletedAndCounted(t *testing.T) {
	now := startMicros
	o := testOptions()
	o.Clock = func() int64 { return now }
	o.GracePeriod = time.Second
	dir := t.TempDir()
	d := openTest(t, dir, o)
	if err := d.Apply([]row.Mutation{put("a", "c", "v", now), put("b", "c", "v", now)}); err != nil {
		t.Fatal(err)
	}
	del := row.Mutation{Key: []byte("a"), Row: row.Row{Deleted: now + 1}}
	if err := d.Apply([]row.Mutation{del}); err != nil {
		t.Fatal(err)
	}
	// Within the grace period the row tombstone stays and is returned.
	if r, found, err := d.Get([]byte("a")); err != nil || !found || r.Deleted != now+1 {
		t.Fatalf("tombstoned row: %+v found=%v err=%v", r, found, err)
	}
	now += 10 * time.Second.Microseconds()
	// Any write to the row past the grace period purges the tombstone; an empty row is
	// deleted.
	if err := d.Apply([]row.Mutation{{Key: []byte("a"), Row: row.Row{Deleted: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := d.Get([]byte("a")); found || err != nil {
		t.Fatalf("purged row still found=%v err=%v", found, err)
	}
	if got := d.Stats().RowsEstimate; got != 1 {
		t.Fatalf("rows = %d, want 1", got)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, o)
	if got := d.Stats().RowsEstimate; got != 1 {
		t.Fatalf("rows after reopen = %d, want 1", got)
	}
}

func TestCloseReleasesOpenIterators(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions())
	if err := d.Apply([]row.Mutation{put("a", "c", "v", 1), put("b", "c", "v", 1)}); err != nil {
		t.Fatal(err)
	}
	it, err := d.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() {
		t.Fatal(it.Err())
	}
	key := it.Key()
	if err := d.Close(); err != nil { // must not wait for the iterator
		t.Fatal(err)
	}
	if string(key) != "a" {
		t.Fatalf("key held by the caller changed to %q", key)
	}
	if it.Next() || !errors.Is(it.Err(), engine.ErrClosed) {
		t.Fatalf("next after Close: err %v, want ErrClosed", it.Err())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := d.Apply([]row.Mutation{put("a", "c", "v", 1)}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("apply after close: %v", err)
	}
	if _, _, err := d.Get([]byte("a")); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := d.NewIterator(nil, nil); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("iterator after close: %v", err)
	}
}

func TestIteratorIsASnapshot(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions())
	var batch []row.Mutation
	for i := range 100 {
		batch = append(batch, put(fmt.Sprintf("k%03d", i), "c", "old", 1))
	}
	if err := d.Apply(batch); err != nil {
		t.Fatal(err)
	}
	it, err := d.NewIterator([]byte("k010"), []byte("k090"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writers go on while the iterator reads
		defer wg.Done()
		for i := range 100 {
			if err := d.Apply([]row.Mutation{put(fmt.Sprintf("k%03d", i), "c", "new", 2), put(fmt.Sprintf("k%03da", i), "c", "x", 2)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	n := 0
	for it.Next() {
		want := fmt.Sprintf("k%03d", 10+n)
		if !bytes.Equal(it.Key(), []byte(want)) || string(it.Row().Cells[0].Value) != "old" {
			t.Fatalf("row %d: %q %+v, want %q old", n, it.Key(), it.Row(), want)
		}
		n++
	}
	if it.Err() != nil || n != 80 {
		t.Fatalf("read %d rows, err %v; want 80", n, it.Err())
	}
	wg.Wait()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// longKeys returns keys around and past bbolt's key limit that share long prefixes, a direct
// key equal to a long key's prefix among them, in sorted order.
func longKeys() [][]byte {
	p := bytes.Repeat([]byte("p"), directKeyMax)
	keys := [][]byte{
		[]byte("a"),
		bytes.Repeat([]byte("p"), directKeyMax-1),
		p, // the direct key equal to the nested bucket's prefix
		append(bytes.Clone(p), 0),
		append(bytes.Clone(p), 0, 0),
		append(bytes.Clone(p), 'a'),
		append(bytes.Clone(p), bytes.Repeat([]byte("q"), directKeyMax+1)...), // nests twice
		append(bytes.Clone(p), bytes.Repeat([]byte("q"), row.MaxKeySize-directKeyMax)...),
		append(bytes.Clone(p), 'z'),
		bytes.Repeat([]byte("p"), directKeyMax+5),
		append(bytes.Repeat([]byte("p"), directKeyMax-1), 'q'),
		[]byte("z"),
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func TestLongKeysKeepOrder(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions())
	keys := longKeys()
	var batch []row.Mutation
	for i, k := range keys {
		batch = append(batch, put(string(k), "c", fmt.Sprint(i), 1))
	}
	if err := d.Apply(batch); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i, k := range keys {
			mustGet(t, d, string(k), "c", fmt.Sprint(i))
			// A seek to every key, and just past it, lands in order.
			for _, lo := range [][]byte{k, append(bytes.Clone(k), 0)} {
				got := scanKeys(t, d, lo, nil)
				want := keys[i:]
				if len(lo) > len(k) {
					want = keys[i+1:]
				}
				if !slices.EqualFunc(got, want, bytes.Equal) {
					t.Fatalf("round %d: scan from key %d (len %d): %d keys, want %d", round, i, len(lo), len(got), len(want))
				}
			}
		}
		if err := d.Check(); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d = openTest(t, dir, testOptions())
	}
	// Deleting every long key removes the nested buckets too.
	del := func(k []byte) row.Mutation { return row.Mutation{Key: k, Row: row.Row{Deleted: 5}} }
	o := testOptions()
	o.GracePeriod = time.Microsecond
	d.Close()
	d = openTest(t, dir, o)
	for _, k := range keys {
		if err := d.Apply([]row.Mutation{del(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := scanKeys(t, d, nil, nil); len(got) != 0 || d.Stats().RowsEstimate != 0 {
		t.Fatalf("%d keys left after deleting all", len(got))
	}
	err := d.bolt.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(dataBucket).Cursor().First(); k != nil {
			return fmt.Errorf("data bucket still holds %.20q", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func scanKeys(t *testing.T, d *DB, lo, hi []byte) [][]byte {
	t.Helper()
	it, err := d.NewIterator(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys [][]byte
	for it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return keys
}

// The row cache answers repeated reads without bbolt, and a write of a cached key leaves
// it cached with the row the write stored, so the next read hits and sees the write; with
// the cache disabled nothing is counted.
func TestRowCacheServesRepeatedReadsAndKeepsWrittenKeysUpToDate(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions())
	if err := d.Apply([]row.Mutation{put("k", "c", "v1", startMicros), put("other", "c", "o", startMicros)}); err != nil {
		t.Fatal(err)
	}
	stats := func() (int64, int64) { s := d.Stats(); return s.RowCacheHits, s.RowCacheMisses }
	mustGet(t, d, "k", "c", "v1") // miss: read from the file and cached
	mustGet(t, d, "k", "c", "v1") // hit
	mustGet(t, d, "k", "c", "v1") // hit
	if hits, misses := stats(); hits != 2 || misses != 1 {
		t.Fatalf("after three reads of one key: %d hits, %d misses; want 2, 1", hits, misses)
	}
	if _, found, err := d.Get([]byte("absent")); found || err != nil {
		t.Fatalf("absent key: found=%v err=%v", found, err)
	}
	if _, found, err := d.Get([]byte("absent")); found || err != nil { // cached as not found
		t.Fatalf("absent key, again: found=%v err=%v", found, err)
	}
	if hits, misses := stats(); hits != 3 || misses != 2 {
		t.Fatalf("after two reads of an absent key: %d hits, %d misses; want 3, 2", hits, misses)
	}
	if err := d.Apply([]row.Mutation{put("k", "c", "v2", startMicros+1), put("absent", "c", "now", startMicros)}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, d, "k", "c", "v2")
	mustGet(t, d, "absent", "c", "now")
	if hits, misses := stats(); hits != 5 || misses != 2 {
		t.Fatalf("reads after writes of their keys: %d hits, %d misses; want 5, 2 (both hit)", hits, misses)
	}
	if s := d.Stats(); s.MemoryBytes < int64(2*len("v2")) {
		t.Fatalf("memory %d does not count the cached rows", s.MemoryBytes)
	}

	o := testOptions()
	o.RowCacheBytes = -1
	off := openTest(t, t.TempDir(), o)
	if err := off.Apply([]row.Mutation{put("k", "c", "v", startMicros)}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, off, "k", "c", "v")
	mustGet(t, off, "k", "c", "v")
	if s := off.Stats(); s.RowCacheHits != 0 || s.RowCacheMisses != 0 {
		t.Fatalf("cache disabled: %d hits, %d misses counted", s.RowCacheHits, s.RowCacheMisses)
	}
}
