package lowprio

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Work in a Lane runs on a thread at the lowest priority, and the caller's thread keeps
// its own; a nil Lane runs work inline at the caller's.
func TestWorkRunsOnALoweredThreadAndTheCallersKeepsItsPriority(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are Linux only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := nice()
	if err != nil {
		t.Fatal(err)
	}
	l := New(1)
	var inside int
	l.Do(func() { inside, err = nice() })
	if err != nil || inside != lowestNice {
		t.Fatalf("work ran at nice %d (%v), want %d", inside, err, lowestNice)
	}
	if after, _ := nice(); after != before {
		t.Fatalf("the caller's thread went from nice %d to %d", before, after)
	}
	var inline int
	(*Lane)(nil).Do(func() { inline, _ = nice() })
	if inline != before {
		t.Fatalf("a nil Lane ran work at nice %d, want the caller's %d", inline, before)
	}
	if lowered, failed := l.Counts(); lowered != 1 || failed != 0 {
		t.Fatalf("counts: %d lowered, %d failed; want 1 and 0", lowered, failed)
	}
}

// At most Width pieces of work run at once; a panic in one reaches its caller.
func TestLaneRunsAtMostWidthAtOnceAndPassesPanicsOn(t *testing.T) {
	l := New(2)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			l.Do(func() {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				running.Add(-1)
			})
		})
	}
	wg.Wait()
	if m := most.Load(); m < 1 || m > 2 {
		t.Fatalf("%d pieces of work ran at once in a lane of width 2", m)
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the work's panic", p)
		}
	}()
	l.Do(func() { panic("boom") })
}

func TestReserveAddsThreads(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	if got := Reserve(New(2).Width() + (*Lane)(nil).Width() + 1); got != old+3 || runtime.GOMAXPROCS(0) != old+3 {
		t.Fatalf("Reserve: %d (GOMAXPROCS %d), want %d", got, runtime.GOMAXPROCS(0), old+3)
	}
}

// LowerThisThread lowers the calling goroutine's thread once, and the goroutine stays on
// it: later calls find it lowered.
func TestLowerThisThreadLowersOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are Linux only")
	}
	done := make(chan [3]int)
	go func() {
		var got [3]int
		got[0], _ = nice()
		LowerThisThread()
		runtime.Gosched() // a chance to move, which the lock forbids
		got[1], _ = nice()
		LowerThisThread()
		got[2], _ = nice()
		done <- got
	}()
	got := <-done
	if got[0] == lowestNice {
		t.Skipf("the test runs at nice %d already", lowestNice)
	}
	if got[1] != lowestNice || got[2] != lowestNice {
		t.Fatalf("nice before, after one call and after two: %v; want [%d %d %d]", got, got[0], lowestNice, lowestNice)
	}
}
