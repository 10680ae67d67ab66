package route

import (
	"sync"
	"time"
)

// A write is remembered for between RecentWriteWindow and twice that; at most
// recentWriteMax keys per window are (16 bytes each), and under a heavier write load the
// rest go unmarked: their reads are planned as engine-aware ones, which stay correct (a
// stale replica shows as a disagreement and is repaired) and only cost a second round.
const (
	RecentWriteWindow = time.Second
	recentWriteMax    = 1 << 17
)

// recentWrites is a set of key hashes seen in the current and the previous window.
type recentWrites struct {
	mu         sync.Mutex
	window     time.Duration
	max        int
	cur, prev  map[uint64]struct{}
	curStarted time.Time
}

// rotate starts a new window when the current one is over. Windows start at multiples
// of the window after the first, whenever the set is looked at, so that a key is
// remembered for at least one window and less than two.
func (r *recentWrites) rotate(now time.Time) {
	switch {
	case r.cur == nil:
		r.cur, r.curStarted = map[uint64]struct{}{}, now
	case now.Sub(r.curStarted) >= 2*r.window:
		clear(r.cur)
		clear(r.prev)
		r.curStarted = now
	case now.Sub(r.curStarted) >= r.window:
		old := r.prev
		if old == nil {
			old = map[uint64]struct{}{}
		}
		clear(old)
		r.prev, r.cur = r.cur, old
		r.curStarted = r.curStarted.Add(r.window)
	}
}

func (r *recentWrites) add(h uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(now)
	if len(r.cur) < r.max {
		r.cur[h] = struct{}{}
	}
}

func (r *recentWrites) has(h uint64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(now)
	_, inCur := r.cur[h]
	_, inPrev := r.prev[h]
	return inCur || inPrev
}
