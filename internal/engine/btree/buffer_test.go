package btree

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

func bufferOptions(bufferBytes int64) Options {
	o := testOptions()
	o.WriteBufferBytes, o.WriteBufferFlushInterval = bufferBytes, time.Hour
	return o
}

// A key written many times while buffered is written to the tree once: a flush of a
// thousand writes of one key commits one transaction, where the unbuffered engine commits
// one per write.
func TestWriteBufferWritesAKeyOncePerFlush(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		o := testOptions()
		if buffered {
			o = bufferOptions(64 << 20)
		}
		d := openTest(t, t.TempDir(), o)
		for i := range 1000 {
			if err := d.Apply([]row.Mutation{put("k", "c", fmt.Sprint(i), int64(i+1))}); err != nil {
				t.Fatal(err)
			}
		}
		mustGet(t, d, "k", "c", "999") // from the buffer, before the flush
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		mustGet(t, d, "k", "c", "999")
		commits := d.commits.Load()
		t.Logf("buffered %t: %d commits", buffered, commits)
		if buffered && commits != 1 || !buffered && commits < 1000 {
			t.Fatalf("buffered %t: %d commits for 1,000 writes of one key", buffered, commits)
		}
		if s := d.Stats(); s.RowsEstimate != 1 || !s.Exact || buffered && s.Flushes != 1 {
			t.Fatalf("after the flush: %+v", s)
		}
	}
}

// Writes left in the journal (the buffer is not flushed at Close) are in the tree after a
// reopen with the buffer off: turning it off never hides an acknowledged write.
func TestWriteBufferLeftoversReachTheTreeWhenTheBufferIsOff(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, bufferOptions(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := d.Apply([]row.Mutation{put(fmt.Sprintf("k%03d", i), "c", "v", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := segments(dir); len(seqs) == 0 {
		t.Fatal("Close left no journal: the test would prove nothing")
	}
	d = openTest(t, dir, testOptions())
	if seqs, _ := segments(dir); len(seqs) != 0 {
		t.Fatalf("journal segments %v left after an Open without the buffer", seqs)
	}
	if s := d.Stats(); s.RowsEstimate != 100 || !s.Exact {
		t.Fatalf("tree after the leftovers: %+v", s)
	}
	mustGet(t, d, "k042", "c", "v")
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// While a flush is held up, writes fill the active memtable and then wait (a write stall)
// instead of growing memory; when the flush fails, they fail with its error, and once it
// succeeds they go on.
func TestWriteBufferStallsBehindASlowFlushAndFailsWithAFailingOne(t *testing.T) {
	var failing atomic.Bool
	release := make(chan struct{})
	o := bufferOptions(4 << 10)
	o.beforeFlush = func() error {
		<-release
		if failing.Load() {
			return errors.New("disk full")
		}
		return nil
	}
	d := openTest(t, t.TempDir(), o)
	value := strings.Repeat("x", 1000)
	// Ten writes of 1 KB fill the first memtable (4 KiB) and the second.
	done := make(chan error, 1)
	go func() {
		for i := range 20 {
			if err := d.Apply([]row.Mutation{put(fmt.Sprint(i), "c", value, 1)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		t.Fatalf("20 KB of writes went through a 4 KiB buffer whose flush is held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if b, _ := d.buf.size(); b > 3*o.WriteBufferBytes {
		t.Fatalf("the buffer holds %d bytes, limit %d", b, o.WriteBufferBytes)
	}
	failing.Store(true)
	close(release) // the held flush fails, and so does every retry until failing is cleared
	err := <-done
	if s := d.Stats(); s.WriteStallNanos < int64(200*time.Millisecond) {
		t.Errorf("writes waited %v for the flush by Stats; want most of the 300ms it was held", time.Duration(s.WriteStallNanos))
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a write waiting for a failed flush: %v; want its error", err)
	}
	if err := d.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Flush while the flush fails: %v; want its error", err)
	}
	failing.Store(false)
	if err := d.Flush(); err != nil {
		t.Fatalf("Flush once the flush succeeds: %v", err)
	}
	for i := range 20 {
		if err := d.Apply([]row.Mutation{put(fmt.Sprint(i), "c", value, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, d, "3", "c", value)
}

// A record torn by a crash is the end of its segment; a bad record with more after it is
// damage.
func TestJournalReplayStopsAtATornTailAndRejectsDamage(t *testing.T) {
	dir := t.TempDir()
	f, err := createSegment(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var recs []byte
	for i := range 3 {
		recs = appendRecord(recs, []row.Mutation{put(fmt.Sprint(i), "c", "v", 1)})
	}
	one := len(recs) / 3
	if _, err := f.Write(recs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	count := func() (int, error) {
		n := 0
		err := replaySegment(dir, 1, func(row.Mutation) { n++ })
		return n, err
	}
	if n, err := count(); n != 3 || err != nil {
		t.Fatalf("whole segment: %d mutations, %v", n, err)
	}
	path := segmentPath(dir, 1)
	for _, cut := range []int{1, 5, one - 1} { // into the last record's header and payload
		if err := os.WriteFile(path, recs[:2*one+cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if n, err := count(); n != 2 || err != nil {
			t.Fatalf("torn after %d bytes of the last record: %d mutations, %v; want 2, nil", cut, n, err)
		}
	}
	damaged := append([]byte(nil), recs...)
	damaged[one+recordHeader+2] ^= 0xff // the second record's payload
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := count(); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("a damaged record before the end: %v; want ErrCorrupt", err)
	}
	if _, err := Open(dir, bufferOptions(1<<20)); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("Open over a damaged journal: %v; want ErrCorrupt", err)
	}
}

// A buffered mutation whose row tombstone shadows cells of its own reads as merged, the
// shadowed cells gone, even when the tree holds nothing of its key: a scan returned them
// (the metamorphic suite found it, seeds 4 and 9), as Get, which merges the memtables'
// rows, did not.
func TestWriteBufferMergesAKeysFirstMutation(t *testing.T) {
	d := openTest(t, t.TempDir(), bufferOptions(64<<20))
	m := row.Mutation{Key: []byte("k"), Row: row.Row{Deleted: startMicros + 10, Cells: []row.Cell{
		{Name: []byte("a"), Timestamp: startMicros + 5, Tombstone: true},
		{Name: []byte("b"), Value: []byte("old"), Timestamp: startMicros + 9},
		{Name: []byte("c"), Value: []byte("new"), Timestamp: startMicros + 11},
	}}}
	if err := d.Apply([]row.Mutation{m}); err != nil {
		t.Fatal(err)
	}
	merged := func(r row.Row) bool {
		return r.Deleted == startMicros+10 && len(r.Cells) == 1 && string(r.Cells[0].Name) == "c"
	}
	for _, when := range []string{"buffered", "flushed"} {
		if r, found, err := d.Get([]byte("k")); err != nil || !found || !merged(r) {
			t.Fatalf("%s: get = %+v, %t, %v; want the row tombstone and c", when, r, found, err)
		}
		it, err := d.NewIterator(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !it.Next() || !merged(it.Row()) {
			t.Fatalf("%s: scan = %+v, %v; want the row tombstone and c", when, it.Row(), it.Err())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}
