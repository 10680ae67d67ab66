package node

import "github.com/kuradb/kura/internal/config"

// streamLaneWidth is how many stream pages a node reads and encodes for its peers at once
// at low CPU priority (--background-priority low; replica.Handler.Background).
const streamLaneWidth = 1

// LowPriorityThreads is how many threads at low CPU priority may hold a Go P at once in
// a node that cfg configures: the stream lane's, and two per lsm store (a compaction and
// its table writer: pebble runs one compaction at a time per store; a flush, whose thread
// is lowered too, may add one while it runs). The binary raises GOMAXPROCS by it
// (lowprio.Reserve), so that threads the kernel holds back leave the foreground a P per
// core. 0 unless --background-priority is low.
func LowPriorityThreads(cfg config.Config) int {
	if cfg.BackgroundPriority != "low" {
		return 0
	}
	stores := 0
	if cfg.Engine == "lsm" {
		stores = 1
		if cfg.Tiered() {
			stores = 2
		}
	}
	return streamLaneWidth + 2*stores
}
