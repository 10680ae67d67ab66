package lsm

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultCollapseOperands is the operand count at which a read asks for its key to be
// collapsed (see collapser).
const DefaultCollapseOperands = 16

// Limits of the collapser.
const (
	collapseStripes    = 64  // locks shared by Apply and collapses, by key hash
	collapseQueueDepth = 256 // keys waiting; more are dropped (a later read asks again)
)

// collapser rewrites a key whose reads merge a long chain of operands as one Set of the
// merged row. Writes are blind merge operands, so a key updated thousands of times
// between flushes (the hottest keys of a zipfian workload) would otherwise make every
// read of it merge thousands of operands until a flush or compaction combines them: we
// measured YCSB write-heavy throughput falling from 9.7k to 3.6k ops/s within a minute
// that way (docs/bench/engines.md).
//
// A collapse must not lose a write: the Set shadows every operand below its sequence
// number, so it must contain all of them. Apply holds a stripe lock shared for the keys
// of its batch until the batch is committed (visible), and a collapse holds the key's
// stripe exclusively around its Get and Set. So every operand committed before the Set
// was visible to the Get, and every later one gets a higher sequence number. The Set is
// not synced: if a crash loses it, the operands it summarized are still in the WAL.
type collapser struct {
	db      *DB
	stripes [collapseStripes]sync.RWMutex
	queue   chan []byte

	mu        sync.Mutex
	queued    map[string]struct{} // keys in queue, so a hot key is queued once
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	collapsed atomic.Int64
}

// newCollapser returns a collapser that queues requests but collapses nothing until
// start: pebble merges while it opens, before db.pdb is set.
func newCollapser(db *DB) *collapser {
	return &collapser{db: db, queue: make(chan []byte, collapseQueueDepth),
		queued: make(map[string]struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

func (c *collapser) start() { go c.loop() }

// request is the merge operator's hook: key merged operands at once. It never blocks,
// because pebble calls it from reads, flushes and compactions.
func (c *collapser) request(key []byte, operands int) {
	if operands < c.db.opts.CollapseOperands {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queued[string(key)]; ok {
		return
	}
	select {
	case c.queue <- slices.Clone(key):
		c.queued[string(key)] = struct{}{}
	default:
	}
}

func (c *collapser) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case key := <-c.queue:
			c.mu.Lock()
			delete(c.queued, string(key))
			c.mu.Unlock()
			c.collapse(key)
		}
	}
}

// collapse replaces key's operands with one Set of their merge. Errors are dropped: a
// key that is not collapsed is only slower to read.
func (c *collapser) collapse(key []byte) {
	db := c.db
	if db.enter("collapse") != nil {
		return
	}
	defer db.mu.RUnlock()
	s := &c.stripes[stripeOf(key)]
	s.Lock()
	defer s.Unlock()
	v, closer, err := db.pdb.Get(key)
	if err != nil {
		return
	}
	b := db.pdb.NewBatch()
	err = b.Set(key, v, nil) // copies v
	_ = closer.Close()
	if err == nil {
		err = db.admit(int64(b.Len())) // a collapse is an optimization: none on a full disk
	}
	if err == nil && db.pdb.Apply(b, pebble.NoSync) == nil {
		c.collapsed.Add(1)
	}
	_ = b.Close()
}

// lockBatch takes the stripes of keys shared, in stripe order, and returns the function
// that releases them. It is called by Apply, after db.mu.
func (c *collapser) lockBatch(keys func(yield func([]byte) bool)) (unlock func()) {
	var small [8]uint8
	idx := small[:0]
	for k := range keys {
		idx = append(idx, stripeOf(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		c.stripes[i].RLock()
	}
	return func() {
		for _, i := range idx {
			c.stripes[i].RUnlock()
		}
	}
}

// lockAll takes every stripe shared, as lockBatch does a batch's, and returns the
// function that releases them: a range deletion may cover any key.
func (c *collapser) lockAll() (unlock func()) {
	for i := range c.stripes {
		c.stripes[i].RLock()
	}
	return func() {
		for i := range c.stripes {
			c.stripes[i].RUnlock()
		}
	}
}

// close stops the started collapser and waits for a collapse in flight. It must run
// before Close takes db.mu exclusively.
// Calling it again does nothing.
func (c *collapser) close() {
	c.closeOnce.Do(func() { close(c.stop) })
	<-c.done
}

// stripeOf hashes key to a stripe (FNV-1a).
func stripeOf(key []byte) uint8 {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return uint8(h % collapseStripes)
}
