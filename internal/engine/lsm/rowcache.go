package lsm

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/row"
)

// DefaultRowCacheBytes is the row cache's default capacity.
const DefaultRowCacheBytes = 64 << 20

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
// Eviction is CLOCK per shard, by an estimate of each entry's memory.
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
		c.shards[i].entries = make(map[string]*rowCacheEntry)
		c.shards[i].limit = capacity / rowCacheShards
	}
	return c
}

func (c *rowCache) shard(key []byte) *rowCacheShard {
	return &c.shards[maphash.Bytes(c.seed, key)%rowCacheShards]
}

// get returns key's cached row (which the caller must not modify) and whether it was
// cached; on a miss it returns the generation to give put.
func (c *rowCache) get(key []byte) (e *rowCacheEntry, gen uint64) {
	s := c.shard(key)
	s.mu.Lock()
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
// was invalidated since or the row is too large to be worth a slot. It returns the entry
// for r whether or not it was cached. An empty row is cached as not found, which is what
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
	s := c.shard(key)
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
	for s.bytes+e.size > s.limit && len(s.clock) > 0 {
		s.evictOne()
	}
	e.idx = len(s.clock)
	s.entries[e.key] = e
	s.clock = append(s.clock, e)
	s.bytes += e.size
	return e
}

// invalidate forgets key and bumps its shard's generation, so that a read that started
// before cannot cache what it read.
func (c *rowCache) invalidate(key []byte) {
	s := c.shard(key)
	s.mu.Lock()
	s.gen++
	if e, ok := s.entries[string(key)]; ok {
		s.remove(e)
	}
	s.mu.Unlock()
}

// evictOne advances the hand to the first entry not read since its last pass and removes
// it. s.mu is held; s.clock is not empty.
func (s *rowCacheShard) evictOne() {
	for {
		if s.hand >= len(s.clock) {
			s.hand = 0
		}
		e := s.clock[s.hand]
		if e.ref {
			e.ref = false
			s.hand++
			continue
		}
		s.remove(e) // moves the last entry into s.hand, which the next pass looks at
		return
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
