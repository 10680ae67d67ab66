package lsm

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/sketch"
)

// DefaultRowCacheBytes is the row cache's default capacity.
const DefaultRowCacheBytes = 256 << 20

const (
	rowCacheShards = 64
	// rowCacheEntryOverhead approximates an entry's memory beyond its key and encoding:
	// the entry, its map slot and its clock slot.
	rowCacheEntryOverhead = 160
)

// rowCache keeps the decoded, merged rows of keys read recently, in front of pebble.
//
// Why an lsm engine wants one: a write is a blind merge operand, so a key's newest entry
// is usually an operand and pebble's Get cannot stop at it. It must visit every memtable
// and every level whose files might hold older versions of the key, then merge. That
// made Get the largest single cost of a cluster read (a quarter of a node's CPU under
// the papers' read-only workload). Under a skewed workload most reads go to a few keys,
// and a cache of their merged rows answers them without pebble. RocksDB's row_cache and
// Cassandra's row cache do the same.
//
// Coherence: Apply invalidates every key of its batch once the batch is visible (after
// pebble's commit). A Get that misses notes its shard's generation before reading pebble
// and inserts what it read only if the generation has not moved since: any invalidation
// in the shard in between (which could be of this key, applied after the read) makes it
// drop the insert. So the cache never holds a row older than what pebble would return.
// Rows are cached as stored, before the read-time purge; Get purges a copy at the time of
// the read, so a cached row's cells still expire on time.
//
// Entries hold the row's encoding (row.AppendEncode), not the decoded row: a byte slice
// the garbage collector need not scan (a cache of decoded rows is a heap of small
// pointers that every collection walks), and a replica computing a digest hashes it as
// it is. Get decodes a private copy, which costs what copying a decoded row would.
//
// Eviction is CLOCK per shard, by an estimate of each entry's memory, with TinyLFU
// admission: every lookup (hit or miss) is counted in a small per-shard frequency sketch,
// and when a full shard would have to evict to take a row, the row is taken only if its
// key was read more often of late than the key CLOCK would evict. Plain CLOCK, like LRU,
// lets a stream of keys read once (a scan, the cold tail of a zipfian workload) push out
// keys read often. A new entry takes its victim's slot behind the hand, so that it gets a
// whole turn of the clock before it can be evicted. In the 3-node read-only benchmark
// with a 64 MiB cache (about half the rows) the hit rate went from 0.80 to 0.84.
type rowCache struct {
	seed   maphash.Seed
	shards [rowCacheShards]rowCacheShard

	hits, misses atomic.Int64
}

type rowCacheShard struct {
	mu      sync.Mutex
	gen     uint64 // bumped by every invalidation
	entries map[string]*rowCacheEntry
	clock   []*rowCacheEntry // CLOCK ring; an entry knows its index
	hand    int
	bytes   int64
	limit   int64
	freq    *sketch.Frequency // recent lookups per key hash, for admission
}

type rowCacheEntry struct {
	key   string
	enc   []byte // the row's encoding; never modified once cached; nil when not found
	found bool   // a row with something in it is stored
	plain bool   // no tombstones and no expiring cells: the read-time purge leaves it as is
	size  int64
	ref   bool // read since the hand last passed
	idx   int  // position in clock
}

func newRowCache(capacity int64) *rowCache {
	c := &rowCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		s := &c.shards[i]
		s.entries = make(map[string]*rowCacheEntry)
		s.limit = capacity / rowCacheShards
		// Eight counters per entry of 256-byte rows (more for larger rows), in 1/64 of the
		// capacity. The window between halvings follows the number of entries (see put).
		s.freq = sketch.New(int(s.limit/rowCacheBytesPerCounter), rowCacheMinSample)
	}
	return c
}

const (
	// rowCacheBytesPerCounter sizes each shard's frequency sketch from its capacity.
	rowCacheBytesPerCounter = 32
	// Lookups between halvings of the sketch: TinyLFU's ten per entry, at least 640.
	rowCacheSamplePerEntry = 10
	rowCacheMinSample      = 640
)

// shard returns key's shard and hash (for the shard's sketch).
func (c *rowCache) shard(key []byte) (*rowCacheShard, uint64) {
	h := maphash.Bytes(c.seed, key)
	return &c.shards[h%rowCacheShards], h
}

// get returns key's cached row (which the caller must not modify) and whether it was
// cached; on a miss it returns the generation to give put.
func (c *rowCache) get(key []byte) (e *rowCacheEntry, gen uint64) {
	s, h := c.shard(key)
	s.mu.Lock()
	s.freq.Add(h)
	e, ok := s.entries[string(key)]
	if !ok {
		gen = s.gen
		s.mu.Unlock()
		c.misses.Add(1)
		return nil, gen
	}
	e.ref = true
	s.mu.Unlock()
	c.hits.Add(1)
	return e, 0
}

// put caches r as key's row, read from pebble after get returned gen, unless the shard
// was invalidated since, the row is too large to be worth a slot, or the shard is full
// and the key CLOCK would evict was read at least as often of late (TinyLFU admission).
// It returns the entry for r whether or not it was cached. An empty row is cached as not found, which is what
// Get makes of it.
func (c *rowCache) put(key []byte, gen uint64, r *row.Row, found bool) *rowCacheEntry {
	e := &rowCacheEntry{key: string(key), found: found && !r.IsEmpty(), plain: r.Deleted == 0}
	if e.found {
		e.enc = row.AppendEncode(make([]byte, 0, row.EncodedSize(r)), r)
		for i := range r.Cells {
			e.plain = e.plain && !r.Cells[i].Tombstone && r.Cells[i].ExpiresAt == 0
		}
	}
	e.size = int64(rowCacheEntryOverhead + len(key) + len(e.enc))
	s, h := c.shard(key)
	if e.size > s.limit/4 {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return e
	}
	if old, ok := s.entries[e.key]; ok { // another reader of the same generation
		s.remove(old)
	}
	if s.bytes+e.size <= s.limit || len(s.clock) == 0 {
		e.idx = len(s.clock)
		s.clock = append(s.clock, e)
	} else {
		v := s.victim()
		if s.freq.Estimate(h) <= s.freq.Estimate(maphash.String(c.seed, v.key)) {
			return e
		}
		// e takes the victim's slot and the hand moves past it, so that e is looked at
		// last, after a whole turn of the clock.
		delete(s.entries, v.key)
		s.bytes -= v.size
		e.idx = s.hand
		s.clock[s.hand] = e
		s.hand++
	}
	s.entries[e.key] = e
	s.bytes += e.size
	s.freq.SetSample(max(rowCacheSamplePerEntry*len(s.entries), rowCacheMinSample))
	for s.bytes > s.limit && len(s.clock) > 1 { // e is larger than the row it replaced
		s.evictOther(e)
	}
	return e
}

// invalidate forgets key and bumps its shard's generation, so that a read that started
// before cannot cache what it read.
func (c *rowCache) invalidate(key []byte) {
	s, _ := c.shard(key)
	s.mu.Lock()
	s.gen++
	if e, ok := s.entries[string(key)]; ok {
		s.remove(e)
	}
	s.mu.Unlock()
}

// victim advances the hand to the first entry not read since its last pass (clearing the
// read marks it passes) and returns it: the entry to evict next. s.mu is held;
// s.clock is not empty.
func (s *rowCacheShard) victim() *rowCacheEntry {
	for {
		if s.hand >= len(s.clock) {
			s.hand = 0
		}
		e := s.clock[s.hand]
		if !e.ref {
			return e
		}
		e.ref = false
		s.hand++
	}
}

// evictOther removes the first victim that is not keep. s.mu is held; s.clock holds keep
// and another entry, so that the hand, passing keep each time it lands on it, finds one
// within two turns.
func (s *rowCacheShard) evictOther(keep *rowCacheEntry) {
	for {
		v := s.victim()
		if v != keep {
			s.remove(v) // moves the last entry into s.hand, which the next pass looks at
			return
		}
		s.hand++
	}
}

// remove drops e from the map and the clock (the last entry takes its slot). s.mu is held.
func (s *rowCacheShard) remove(e *rowCacheEntry) {
	delete(s.entries, e.key)
	last := len(s.clock) - 1
	moved := s.clock[last]
	s.clock[e.idx] = moved
	moved.idx = e.idx
	s.clock[last] = nil
	s.clock = s.clock[:last]
	s.bytes -= e.size
}

// size returns the entries and bytes cached.
func (c *rowCache) size() (entries int, bytes int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		entries += len(s.entries)
		bytes += s.bytes
		s.mu.Unlock()
	}
	return entries, bytes
}
