package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

const startMicros int64 = 1_700_000_000_000_000

func testOptions(snapshot string) Options {
	return Options{
		Options:      engine.Options{Clock: func() int64 { return startMicros }},
		SnapshotPath: snapshot,
	}
}

func openTest(t *testing.T, dir string, o Options) *DB {
	t.Helper()
	d, err := Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func put(key, col, val string, ts int64) row.Mutation {
	return row.Mutation{Key: []byte(key), Row: row.Row{Cells: []row.Cell{
		{Name: []byte(col), Value: []byte(val), Timestamp: ts},
	}}}
}

// wideRow is a 1 KB row: 10 columns of 100 random bytes, as the benchmarks write.
func wideRow(rng *rand.Rand, key string, ts int64) row.Mutation {
	m := row.Mutation{Key: []byte(key)}
	for c := range 10 {
		v := make([]byte, 100)
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
		m.Row.Cells = append(m.Row.Cells, row.Cell{Name: fmt.Appendf(nil, "field%d", c), Value: v, Timestamp: ts})
	}
	return m
}

// fill writes n small rows and returns what was written, key -> value.
func fill(t *testing.T, d *DB, n int) map[string]string {
	t.Helper()
	want := make(map[string]string)
	for i := range n {
		k, v := fmt.Sprintf("key%04d", i), fmt.Sprintf("value%d", i)
		if err := d.Apply([]row.Mutation{put(k, "c", v, int64(i+1))}); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	return want
}

// checkRows compares every row of d with want through an iterator.
func checkRows(t *testing.T, d *DB, want map[string]string) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	it, err := d.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() {
		r := it.Row()
		c := r.Find([]byte("c"))
		if c == nil || want[string(it.Key())] != string(c.Value) {
			t.Fatalf("row %q = %+v, want %q", it.Key(), it.Row(), want[string(it.Key())])
		}
		n++
	}
	if it.Err() != nil || n != len(want) {
		t.Fatalf("iterated %d rows (err %v), want %d", n, it.Err(), len(want))
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions("snap"))
	want := fill(t, d, 500)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, testOptions("snap"))
	checkRows(t, d, want)
	s := d.Stats()
	if s.RowsEstimate != 500 || !s.Exact || s.DiskBytes == 0 || s.MemoryBytes == 0 {
		t.Fatalf("stats %+v", s)
	}
	// Flush writes a snapshot too.
	if err := d.Apply([]row.Mutation{put("extra", "c", "x", 1)}); err != nil {
		t.Fatal(err)
	}
	want["extra"] = "x"
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "snap"))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing changed since: neither Flush nor Close rewrites the file.
	before, _ := os.Stat(filepath.Join(dir, "snap"))
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(filepath.Join(dir, "snap")); !os.SameFile(before, after) {
		t.Fatal("an unchanged tree was written again")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The flushed file alone (as if the process had died right after Flush) holds it.
	if err := os.WriteFile(filepath.Join(dir, "snap"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	checkRows(t, openTest(t, dir, testOptions("snap")), want)
}

func TestWithoutSnapshotNothingTouchesDisk(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions(""))
	fill(t, d, 10)
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("dir holds %d entries, want none", len(entries))
	}
	d = openTest(t, dir, testOptions(""))
	if s := d.Stats(); s.RowsEstimate != 0 {
		t.Fatalf("rows after restart without snapshot: %d", s.RowsEstimate)
	}
}

// snapshotFile writes a small snapshot and returns its path and contents.
func snapshotFile(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	d := openTest(t, dir, testOptions("snap"))
	fill(t, d, 5)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "snap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestTruncatedSnapshotFailsOpen(t *testing.T) {
	path, data := snapshotFile(t)
	for n := range len(data) {
		if err := os.WriteFile(path, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(filepath.Dir(path), testOptions("snap"))
		if !errors.Is(err, engine.ErrCorrupt) {
			if d != nil {
				d.Close()
			}
			t.Fatalf("snapshot cut to %d of %d bytes: got %v, want ErrCorrupt", n, len(data), err)
		}
	}
	appended := append(append([]byte{}, data...), 0)
	if err := os.WriteFile(path, appended, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Dir(path), testOptions("snap")); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("snapshot with a trailing byte: got %v, want ErrCorrupt", err)
	}
}

func TestFlippedSnapshotByteFailsOpen(t *testing.T) {
	path, data := snapshotFile(t)
	for i := range data {
		bad := append([]byte{}, data...)
		bad[i] ^= 0x10
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(filepath.Dir(path), testOptions("snap"))
		if err == nil {
			d.Close()
			t.Fatalf("snapshot with byte %d of %d flipped opened without error", i, len(data))
		}
	}
}

func TestStaleTemporaryFileIsIgnored(t *testing.T) {
	path, _ := snapshotFile(t)
	if err := os.WriteFile(path+tempSuffix, []byte("half a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := openTest(t, filepath.Dir(path), testOptions("snap"))
	if s := d.Stats(); s.RowsEstimate != 5 {
		t.Fatalf("rows %d, want 5", s.RowsEstimate)
	}
	if _, err := os.Stat(path + tempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temporary file still there: %v", err)
	}
}

func TestSecondOpenOfSnapshotIsLocked(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, testOptions("snap"))
	if _, err := Open(dir, testOptions("snap")); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
}

func TestBackgroundSnapshotsStopOnClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	o := testOptions("snap")
	o.SnapshotInterval = time.Millisecond
	d, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, d, 3)
	for d.Stats().DiskBytes == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := d.LastSnapshotError(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIteratorIsolatedFromWriters(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions(""))
	want := fill(t, d, 300)
	it, err := d.NewIterator([]byte("key0100"), []byte("key0200"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // rewrites, deletes and inserts while the iterator walks
		defer wg.Done()
		for i := range 300 {
			k := fmt.Sprintf("key%04d", i)
			batch := []row.Mutation{put(k, "c", "new", 1_000_000), put(k+"x", "c", "x", 1)}
			if i%3 == 0 {
				batch = append(batch, row.Mutation{Key: []byte(k), Row: row.Row{Deleted: 2_000_000}})
			}
			if err := d.Apply(batch); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	n := 0
	for it.Next() {
		k := fmt.Sprintf("key%04d", 100+n)
		if string(it.Key()) != k || string(it.Row().Cells[0].Value) != want[k] {
			t.Fatalf("row %d: %q %+v, want %q %q", n, it.Key(), it.Row(), k, want[k])
		}
		n++
	}
	wg.Wait()
	if n != 100 || it.Err() != nil {
		t.Fatalf("read %d rows (err %v), want 100", n, it.Err())
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestPurgedRowIsDeleted(t *testing.T) {
	now := startMicros
	o := testOptions("")
	o.Clock = func() int64 { return now }
	o.GracePeriod = time.Second
	d := openTest(t, t.TempDir(), o)
	if err := d.Apply([]row.Mutation{put("a", "c", "v", now), {Key: []byte("a"), Row: row.Row{Deleted: now}}}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := d.Get([]byte("a")); !found {
		t.Fatal("tombstoned row gone within the grace period")
	}
	now += 2 * time.Second.Microseconds()
	if err := d.Apply([]row.Mutation{{Key: []byte("a"), Row: row.Row{Deleted: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := d.Get([]byte("a")); found {
		t.Fatal("row still stored after its tombstone was purged")
	}
	if s := d.Stats(); s.RowsEstimate != 0 || s.MemoryBytes != 0 {
		t.Fatalf("stats %+v after the only row went", s)
	}
}

// A range larger than a chunk is deleted whole, chunk after chunk, and the byte count
// and Stats follow: the rows and their memory are counted out.
func TestDeleteRangeLargerThanAChunkCountsRowsAndBytesOut(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions(""))
	const rows = 2*deleteRangeChunk + 5000
	batch := make([]row.Mutation, 0, 1000)
	for i := range rows {
		batch = append(batch, put(fmt.Sprintf("k%06d", i), "c", "value", startMicros))
		if len(batch) == cap(batch) {
			if err := d.Apply(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	before := d.Stats()
	if err := d.DeleteRange([]byte("k001000"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	after := d.Stats()
	if after.RowsEstimate != 1000 || after.MemoryBytes*20 > before.MemoryBytes {
		t.Fatalf("after deleting all but 1000 of %d rows: %d rows, %d of %d bytes", rows, after.RowsEstimate, after.MemoryBytes, before.MemoryBytes)
	}
	if _, found, _ := d.Get([]byte("k000999")); !found {
		t.Fatal("the row below the range is gone")
	}
}
