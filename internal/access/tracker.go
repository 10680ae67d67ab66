// Package access counts the reads of keys over recent windows of time, in memory fixed
// when it is built whatever the number of keys: the access tracker of tiered storage
// (seed 001). It answers the two questions a placement asks: "was this key read at least
// K times in the last window W?" (the paper's rule; K=1 and W=10 s in its evaluation) and
// "which keys were read most in the last window?" (the ranking used when the fast device
// cannot hold every hot row).
//
// Counts come from a count-min sketch per window (16-bit counters, four per key,
// conservative update), so an estimate is never below the true count and is above it
// only when a key's four counters all collide with busier keys. Names come from a
// bounded list of the most-read keys of each window (the Space-Saving idea behind
// Cassandra's `nodetool toppartitions`): a key enters when its estimate beats the least
// count on the list. A longer memory, for the ranking (Score), is a third count-min
// sketch of its own (32-bit counters, conservative update, sized for every key read over
// an hour rather than one window's), aged by a fraction at each window's end. Windows
// are aligned to multiples of W since the Unix epoch, so every shard rolls over at the
// same instants without talking to the others.
//
// The tracker is safe for concurrent use. Time is passed in, never read, so tests and
// simulations drive it with a virtual clock.
package access

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Config sizes a Tracker. Zero fields take their defaults.
type Config struct {
	// Window is W, the length of a counting window; default 10 s.
	Window time.Duration
	// MinCount is K: a key read at least K times in a window is hot; default 1.
	MinCount int
	// Counters is the number of 16-bit counters in each window's sketch, across all
	// shards; default 1<<20 (2 MiB per window). Over-counting stays rare while there are
	// several counters per distinct key read in a window.
	Counters int
	// TopKeys is how many of a window's most-read keys the tracker remembers by name,
	// across all shards; default 65,536. Placement can only promote keys it can name, so
	// this should exceed the number of rows the fast device holds.
	TopKeys int
	// HistoryWindows sets the memory of Score: each window counts 1-1/HistoryWindows as
	// much as the next newer one; default 512 (a window's reads weigh half after about
	// 355 windows, an hour of 10 s windows). A placement ranking rows of which most are
	// read less than once an hour needs that long a memory: with 8, a tiered node's fast
	// tier, once full, swapped rows it had learned were hot for rows merely read last;
	// with 128, it served 0.01 less of the reads than with 512 in simulation
	// (docs/design/tiered.md, "Memory of the ranking"). The price is that a row that
	// turns cold keeps its rank for about as long, unless rows read more displace it.
	HistoryWindows int
	// HistoryCounters is the number of 32-bit counters in the sketch behind Score, across
	// all shards; default 1<<21 (8 MiB). It holds every key read over the history's
	// memory, not one window's: a ranking of rows read about once an hour needs a few
	// counters per row read in that time, or its estimates are mostly collisions.
	HistoryCounters int
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = 10 * time.Second
	}
	if c.MinCount <= 0 {
		c.MinCount = 1
	}
	if c.Counters <= 0 {
		c.Counters = 1 << 20
	}
	if c.TopKeys <= 0 {
		c.TopKeys = 65536
	}
	if c.HistoryWindows <= 1 {
		c.HistoryWindows = 512
	}
	if c.HistoryCounters <= 0 {
		c.HistoryCounters = 1 << 21
	}
	return c
}

// shards splits the tracker so that concurrent readers rarely wait for one another.
const shards = 16

// Tracker counts reads per key over windows of time. See the package comment.
type Tracker struct {
	cfg    Config
	shards [shards]shard
}

// New returns a tracker sized by cfg.
func New(cfg Config) *Tracker {
	cfg = cfg.withDefaults()
	t := &Tracker{cfg: cfg}
	for i := range t.shards {
		s := &t.shards[i]
		s.cur = newCountMin[uint16](cfg.Counters / shards)
		s.last = newCountMin[uint16](cfg.Counters / shards)
		s.history = newCountMin[uint32](cfg.HistoryCounters / shards)
		s.historyWindows = cfg.HistoryWindows
		s.top = topList{index: map[string]*entry{}, limit: max(1, cfg.TopKeys/shards)}
	}
	return t
}

// Config returns the tracker's settings, defaults filled in.
func (t *Tracker) Config() Config { return t.cfg }

// shard is one slice of the key space, with its own lock.
type shard struct {
	mu      sync.Mutex
	window  int64             // number of the current window (Unix time / W)
	cur     *countMin[uint16] // reads in the current window
	last    *countMin[uint16] // reads in the window before it (empty if it saw none)
	history *countMin[uint32] // every read, aged once a window (see Score), in 1/scoreScale reads
	top     topList           // the current window's most-read keys
	lastTop []Key             // the last window's, by count, most first

	historyWindows int // Config.HistoryWindows
}

// Key is a key and its estimated number of reads in a window.
type Key struct {
	Key   string
	Count int
}

func (t *Tracker) shardOf(h uint64) *shard { return &t.shards[h>>60] }

// roll moves s to the window holding now; s.mu is held.
func (s *shard) roll(now time.Time, w time.Duration) {
	n := now.UnixNano() / int64(w)
	if n <= s.window {
		return // the same window (or a clock step back: keep counting in the current one)
	}
	if s.window == 0 { // the first read: nothing counted yet, nothing to age
		s.window = n
		return
	}
	s.history.age(s.historyWindows, min(n-s.window, 65))
	s.cur, s.last = s.last, s.cur
	s.cur.reset()
	s.lastTop = s.top.drain()
	if n > s.window+1 { // a whole window without reads in between
		s.last.reset()
		s.lastTop = nil
	}
	s.window = n
}

// Record counts one read of key at now.
func (t *Tracker) Record(key []byte, now time.Time) {
	s, h := t.lockFor(key, now)
	s.top.offer(key, int(s.cur.add(h, 1)))
	s.history.add(h, scoreScale)
	s.mu.Unlock()
}

// lockFor locks key's shard, rolled to the window holding now, and returns it with key's
// hash. The caller unlocks it.
func (t *Tracker) lockFor(key []byte, now time.Time) (*shard, uint64) {
	h := xxhash.Sum64(key)
	s := t.shardOf(h)
	s.mu.Lock()
	s.roll(now, t.cfg.Window)
	return s, h
}

// Count returns key's estimated reads in the last complete window before now.
func (t *Tracker) Count(key []byte, now time.Time) int {
	s, h := t.lockFor(key, now)
	defer s.mu.Unlock()
	return int(s.last.estimate(h))
}

// Recent returns key's estimated reads so far in the window holding now.
func (t *Tracker) Recent(key []byte, now time.Time) int {
	s, h := t.lockFor(key, now)
	defer s.mu.Unlock()
	return int(s.cur.estimate(h))
}

// Hot reports whether key was read at least K times in the last complete window or in
// the current one so far: a key that turns hot counts at once, not a window later.
func (t *Tracker) Hot(key []byte, now time.Time) bool {
	s, h := t.lockFor(key, now)
	defer s.mu.Unlock()
	return int(max(s.last.estimate(h), s.cur.estimate(h))) >= t.cfg.MinCount
}

// scoreScale is the fixed point of the history sketch: a read adds scoreScale, so that
// aging can take fractions of a read away. Aging takes at least one unit a window (it
// rounds up, so that counters reach zero), which bounds how long a lone read is
// remembered; in 4096ths a read ages as 1-1/HistoryWindows a window until it is worth
// HistoryWindows units, then by one unit a window (a read lasts about 1,400 windows at
// the default 512). Counts cap at about a million reads.
const scoreScale = 4096

// Score returns key's reads so far, each complete window weighing 1-1/HistoryWindows as
// much as the next newer one and the current window's reads counting in full (an
// estimate, never below the true aged count): a ranking with a longer memory than one
// window, which a placement needs when most rows it ranks are read less than once a
// window.
func (t *Tracker) Score(key []byte, now time.Time) float64 {
	s, h := t.lockFor(key, now)
	defer s.mu.Unlock()
	return float64(s.history.estimate(h)) / scoreScale
}

// Top returns the most-read keys of the last complete window before now that were read
// at least K times, most first (ties by key). The caller owns the slice.
func (t *Tracker) Top(now time.Time) []Key {
	var out []Key
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.roll(now, t.cfg.Window)
		for _, k := range s.lastTop {
			if k.Count >= t.cfg.MinCount {
				out = append(out, k)
			}
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Key) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key)) })
	return out
}

// Bytes returns the memory the counters take (the top lists add about TopKeys times the
// key length plus 64 bytes per window).
func (t *Tracker) Bytes() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		n += 2*(len(s.cur.table)+len(s.last.table)) + 4*len(s.history.table)
	}
	return n
}

// topList is a bounded list of the most-read keys of a window: a min-heap on count, so
// that a newcomer replaces the least-read entry when it beats it.
type topList struct {
	index map[string]*entry
	heap  entryHeap
	limit int
}

type entry struct {
	key   string
	count int
	pos   int // position in the heap
}

// offer tells the list that key has now been read an estimated count times.
func (l *topList) offer(key []byte, count int) {
	if e, ok := l.index[string(key)]; ok { // no allocation: the compiler reuses key's bytes
		e.count = count
		heap.Fix(&l.heap, e.pos)
		return
	}
	if len(l.heap) < l.limit {
		e := &entry{key: string(key), count: count}
		l.index[e.key] = e
		heap.Push(&l.heap, e)
		return
	}
	if least := l.heap[0]; count > least.count {
		delete(l.index, least.key)
		least.key, least.count = string(key), count
		l.index[least.key] = least
		heap.Fix(&l.heap, 0)
	}
}

// drain empties the list and returns its keys, most-read first.
func (l *topList) drain() []Key {
	out := make([]Key, len(l.heap))
	for i, e := range l.heap {
		out[i] = Key{Key: e.key, Count: e.count}
	}
	slices.SortFunc(out, func(a, b Key) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key)) })
	l.heap = l.heap[:0]
	clear(l.index)
	return out
}

type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.pos = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
