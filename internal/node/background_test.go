package node

import (
	"testing"

	"github.com/kuradb/kura/internal/config"
)

func TestLowPriorityThreadsCountWhatMayHoldAP(t *testing.T) {
	for _, c := range []struct {
		priority, engine, fastDir string
		want                      int
	}{
		{"normal", "lsm", "", 0},
		{"low", "lsm", "", 3},      // the stream lane, a compaction and its table writer
		{"low", "lsm", "/fast", 5}, // tiered: two lsm stores
		{"low", "btree", "", 1},    // no compactions
		{"low", "memory", "", 1},
	} {
		cfg := config.Config{BackgroundPriority: c.priority, Engine: c.engine, FastDir: c.fastDir}
		if got := LowPriorityThreads(cfg); got != c.want {
			t.Errorf("%s priority, %s engine, fast dir %q: %d threads, want %d", c.priority, c.engine, c.fastDir, got, c.want)
		}
	}
}
