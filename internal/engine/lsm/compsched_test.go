package lsm

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/row"
)

// A store with LowPriorityCompactions compacts as pebble's default scheduler would (the
// data reads back after many flushes and a full compaction) and its compactions run on
// lowered threads; it closes without leaving the scheduler's goroutine behind (goleak in
// TestMain).
func TestLowPriorityCompactionsCompactOnLoweredThreads(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.LowPriorityCompactions = true; o.MemTableSizeBytes = 1 << 20 })
	before := lowprio.ThreadsLowered()
	const keys = 3000
	val := make([]byte, 512)
	for round := range 6 {
		var batch []row.Mutation
		for k := range keys {
			batch = append(batch, row.Mutation{Key: fmt.Appendf(nil, "key%05d", k),
				Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: val, Timestamp: testNow + int64(round)}}}})
			if len(batch) == 500 {
				mustApply(t, db, batch...)
				batch = batch[:0]
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	m := db.pdb.Metrics()
	if m.Compact.Count == 0 {
		t.Fatalf("no compaction ran")
	}
	for k := range keys {
		r, found, err := db.Get(fmt.Appendf(nil, "key%05d", k))
		if err != nil || !found || r.Cells[0].Timestamp != testNow+5 {
			t.Fatalf("key %d: found=%v err=%v row %v", k, found, err, r)
		}
	}
	if n, err := lowprio.Nice(); err != nil || n == 19 {
		t.Logf("thread priorities unknown or lowest already (nice %d, %v): not checked", n, err)
		return
	}
	if runtime.GOOS == "linux" && lowprio.ThreadsLowered() == before {
		t.Fatalf("%d compactions ran and no thread was lowered", m.Compact.Count)
	}
}

// A flush of such a store runs on a lowered thread too (pebble's FlushBegin, on the
// flush's own goroutine); the caller of Flush keeps its priority.
func TestLowPriorityFlushRunsOnALoweredThread(t *testing.T) {
	if n, err := lowprio.Nice(); err != nil || n == 19 {
		t.Skipf("thread priorities unknown or lowest already (nice %d, %v)", n, err)
	}
	db := openTest(t, t.TempDir(), newTestClock(), func(o *Options) { o.LowPriorityCompactions = true })
	before := lowprio.ThreadsLowered()
	mustApply(t, db, row.Mutation{Key: []byte("k"), Row: row.Row{Cells: []row.Cell{live("c", "v", testNow)}}})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if lowprio.ThreadsLowered() == before {
		t.Fatalf("a flush ran and no thread was lowered")
	}
	if n, _ := lowprio.Nice(); n == 19 {
		t.Fatalf("Flush's caller was lowered")
	}
}

// fakeCompactions is a pebble.DBForCompaction with a number of compactions waiting.
type fakeCompactions struct {
	mu        sync.Mutex
	allowed   int
	waiting   int
	scheduled []pebble.CompactionGrantHandle
}

func (f *fakeCompactions) GetAllowedWithoutPermission() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allowed
}

func (f *fakeCompactions) GetWaitingCompaction() (bool, pebble.WaitingCompaction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting > 0, pebble.WaitingCompaction{}
}

func (f *fakeCompactions) Schedule(h pebble.CompactionGrantHandle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == 0 {
		return false
	}
	f.waiting--
	f.scheduled = append(f.scheduled, h)
	return true
}

func (f *fakeCompactions) handle(i int) pebble.CompactionGrantHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scheduled[i]
}

func (f *fakeCompactions) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.scheduled)
}

// The scheduler runs as many compactions at once as the DB allows, starts the next when
// one is done, and grants nothing once unregistered.
func TestLowPrioritySchedulerKeepsTheDBsConcurrency(t *testing.T) {
	db := &fakeCompactions{allowed: 2, waiting: 5}
	s := newLowPriorityScheduler()
	s.Register(2, db)
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for db.count() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d compactions scheduled, want %d", db.count(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	s.UpdateGetAllowedWithoutPermission()
	waitFor(2)
	time.Sleep(250 * time.Millisecond) // two of the scheduler's ticks
	if n := db.count(); n != 2 {
		t.Fatalf("%d compactions running with 2 allowed", n)
	}
	if ok, _ := s.TrySchedule(); ok {
		t.Fatalf("TrySchedule granted a third compaction with 2 allowed")
	}
	db.handle(0).Done()
	waitFor(3)
	s.Unregister()
	db.handle(1).Done()
	time.Sleep(250 * time.Millisecond)
	if n := db.count(); n != 3 {
		t.Fatalf("%d compactions scheduled after Unregister, want 3", n)
	}
	if ok, _ := s.TrySchedule(); ok {
		t.Fatalf("TrySchedule granted after Unregister")
	}
}
