// Package lowprio runs background work (the stream pages a node sends, its LSM's
// compactions and flushes) at the lowest CPU priority the operating system offers, so
// that on a busy machine the foreground's requests take the CPU first and background
// work gets what they leave.
//
// Go has no goroutine priorities, but Linux schedules threads, and a thread's nice value
// is its own: a goroutine locked to a thread (runtime.LockOSThread) whose nice is 19
// gets about 1.5% of a core while threads at nice 0 want it (CFS weights 15 and 1024),
// and all of it when they do not. A Lane runs each piece of work on such a thread, a
// fresh one that ends with the work (a locked goroutine that returns without unlocking
// takes its thread with it), so no thread ever goes back to the runtime with its
// priority lowered, and no privilege is needed to raise it again.
//
// A thread the kernel holds back still holds the Go scheduler's P while it waits, so a
// Lane lets at most Width pieces of work run at once, and the node adds Width to
// GOMAXPROCS (Reserve): the foreground keeps as many Ps as the machine has cores.
package lowprio

import (
	"runtime"
	"sync/atomic"
)

// lowestNice is the nice value of background threads: the lowest priority.
const lowestNice = 19

// Lane runs work at low CPU priority, at most Width pieces at once. The zero Lane, and a
// nil one, runs work on the caller's goroutine at its priority.
type Lane struct {
	sem     chan struct{}
	lowered atomic.Int64 // pieces of work run on a lowered thread
	failed  atomic.Int64 // pieces of work run at normal priority: the kernel refused
}

// New returns a Lane of the given width (at least 1).
func New(width int) *Lane { return &Lane{sem: make(chan struct{}, max(width, 1))} }

// Width is how many pieces of work l runs at once (0 for a Lane that runs work inline).
func (l *Lane) Width() int {
	if l == nil {
		return 0
	}
	return cap(l.sem)
}

// Reserve raises GOMAXPROCS by threads, the most lowered threads that may hold a P at
// once (the lanes' widths, and two per LSM compaction that may run at once), so that
// threads the kernel holds back leave the foreground as many Ps as before. It returns
// the new value. Call it once per process.
func Reserve(threads int) int {
	n := runtime.GOMAXPROCS(0) + max(threads, 0)
	runtime.GOMAXPROCS(n)
	return n
}

// Do runs fn at low priority, after waiting for room in the lane, and returns when fn
// has. A nil Lane runs fn inline.
func (l *Lane) Do(fn func()) {
	if l == nil || l.sem == nil {
		fn()
		return
	}
	l.sem <- struct{}{}
	defer func() { <-l.sem }()
	done := make(chan any, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if lower() == nil {
			l.lowered.Add(1)
		} else {
			l.failed.Add(1)
		}
		defer func() { done <- recover() }()
		fn()
	}()
	if p := <-done; p != nil {
		panic(p) // fn's panic, on the caller's goroutine
	}
}

// LowerThisThread locks the calling goroutine to its thread, and lowers the thread to
// the lowest priority, unless that was done already; it reports whether the thread is
// lowered. It is for goroutines that are not the caller's own to start, such as an
// LSM's compactions (see lsm.Options.LowPriorityCompactions), called from inside them:
// the goroutine must then never call runtime.UnlockOSThread, so that its thread ends
// with it, and must not hold a P for long (nor ever wait for the foreground) while it
// is held back.
func LowerThisThread() bool {
	switch n, err := nice(); {
	case err != nil:
		return false // no thread priorities here: nothing to lock the goroutine for
	case n == lowestNice:
		return true // lowered here before (or the whole process runs at lowestNice)
	}
	runtime.LockOSThread()
	if lower() != nil {
		return false
	}
	threadsLowered.Add(1)
	return true
}

// Nice returns the calling thread's nice value (an error off Linux).
func Nice() (int, error) { return nice() }

// threadsLowered counts the threads LowerThisThread lowered.
var threadsLowered atomic.Int64

// ThreadsLowered returns how many threads LowerThisThread has lowered in this process.
func ThreadsLowered() int64 { return threadsLowered.Load() }

// Counts returns how many pieces of work ran on a lowered thread and how many ran at
// normal priority because the kernel refused to lower it.
func (l *Lane) Counts() (lowered, failed int64) {
	if l == nil {
		return 0, 0
	}
	return l.lowered.Load(), l.failed.Load()
}
