package node

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// slowWrites logs coordinated writes that took longer than after: when each replica's
// answer reached the coordinator, and how long the coordinator spent on its own part of
// the write (dispatching the local write, storing hints). An operator reading it learns
// whether a slow write waited for one replica, for the network, or for this node. At
// most one line per every, so that an overloaded node does not log each request; the
// line after a quiet spell says how many slow writes went unlogged.
type slowWrites struct {
	after time.Duration
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	last    time.Time
	skipped int
}

func newSlowWrites(after time.Duration, log *slog.Logger) *slowWrites {
	if after <= 0 {
		return nil
	}
	return &slowWrites{after: after, every: time.Second, log: log}
}

// writeTrace is what a write records for slowWrites.
type writeTrace struct {
	start   time.Time
	own     time.Duration // in the coordinator's own effects (clusterStore.runWrite)
	answers []writeResult // as they were taken up, until the reply
}

// check logs the write if it took longer than the threshold and the rate allows.
func (w *slowWrites) check(took time.Duration, tr *writeTrace, replicas []coord.Replica, err error) {
	if took < w.after {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.skipped++
		w.mu.Unlock()
		return
	}
	skipped := w.skipped
	w.last, w.skipped = now, 0
	w.mu.Unlock()
	w.log.Warn("slow write", "took", took.Round(time.Millisecond), "replicas", describeAnswers(tr, replicas),
		"coordinator_own", tr.own.Round(time.Millisecond), "err", err, "slow_writes_not_logged", skipped)
}

// describeAnswers says, for each replica, when its answer reached the coordinator
// ("write-optimized 0e6f13b5: 12ms"), that it was down, or that none had come by the
// reply.
func describeAnswers(tr *writeTrace, replicas []coord.Replica) string {
	parts := make([]string, 0, len(replicas))
	for _, r := range replicas {
		id := string(r.ID)
		if len(id) > 8 {
			id = id[:8]
		}
		role := "replica"
		if r.Role != ring.RoleUnknown {
			role = r.Role.String()
		}
		what := "no answer by the reply"
		if !r.Up {
			what = "down"
		}
		for _, a := range tr.answers {
			if a.from == r.ID {
				what = a.at.Sub(tr.start).Round(time.Millisecond).String()
				if a.err != nil {
					what += fmt.Sprintf(" (%v)", a.err)
				}
			}
		}
		parts = append(parts, role+" "+id+": "+what)
	}
	return strings.Join(parts, ", ")
}
