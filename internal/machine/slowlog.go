package machine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

// SlowWrite describes a coordinated write that took at least Config.SlowWriteAfter: when
// each replica's answer reached the coordinator, and how long the coordinator spent on
// its own part of the write. An operator reading it learns whether a slow write waited
// for one replica, for the network, or for this node.
type SlowWrite struct {
	Took time.Duration
	// Replicas says, for each replica, when its answer came after the write started
	// ("write-optimized 0e6f13b5: 12ms"), that it was down, or that none had come by the
	// reply.
	Replicas string
	Own      time.Duration // in the coordinator's own effects (WriteOp.Own)
	Err      error
	// NotLogged counts the slow writes since the last one logged that were not: at most
	// one is logged a second, so that an overloaded node does not log each request.
	NotLogged int
}

// slowLogEvery is the least time between two slow write log lines.
const slowLogEvery = time.Second

// slowLog rate-limits SlowWrites.
type slowLog struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// writeTrace is what a write records for the slow write log, until its reply.
type writeTrace struct {
	start   time.Time
	own     time.Duration
	answers []answer
}

type answer struct {
	from ring.NodeID
	err  error
	at   time.Time
}

// check returns the SlowWrite to log for a write that took took and replied err at now,
// or nil when it was quick enough or another was logged less than slowLogEvery ago.
func (l *slowLog) check(after, took time.Duration, now time.Time, tr *writeTrace, replicas []coord.Replica, err error) *SlowWrite {
	if took < after {
		return nil
	}
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < slowLogEvery {
		l.skipped++
		l.mu.Unlock()
		return nil
	}
	skipped := l.skipped
	l.last, l.skipped = now, 0
	l.mu.Unlock()
	return &SlowWrite{Took: took, Replicas: describeAnswers(tr, replicas), Own: tr.own, Err: err, NotLogged: skipped}
}

// describeAnswers says, for each replica, when its answer reached the coordinator, that
// it was down, or that none had come by the reply.
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
