package lsm

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

func cellRow(v string, ts int64) row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte(v), Timestamp: ts}}}
}

// A read that missed, then lost a race with a write of its key, must not cache what it
// read: the write's invalidation came first and nothing would remove the old row later.
func TestRowCacheDropsAReadThatRacedAnInvalidation(t *testing.T) {
	c := newRowCache(1 << 20)
	key := []byte("k")
	e, gen := c.get(key)
	if e != nil {
		t.Fatal("empty cache hit")
	}
	c.invalidate(key) // a write of key became visible after the read saw the old row
	old := cellRow("old", 1)
	c.put(key, gen, &old, true)
	if e, _ := c.get(key); e != nil {
		t.Fatal("the row read before the write was cached after the write's invalidation")
	}

	_, gen = c.get(key)
	nw := cellRow("new", 2)
	c.put(key, gen, &nw, true)
	e, _ = c.get(key)
	if e == nil || !e.found || !bytes.Equal(e.enc, row.Encode(&nw)) {
		t.Fatalf("a read with no write in between was not cached: %+v", e)
	}
	c.invalidate(key)
	if e, _ := c.get(key); e != nil {
		t.Fatal("invalidate left the row cached")
	}
}

func TestRowCacheStaysWithinCapacityAndKeepsRowsInUse(t *testing.T) {
	const capacity = rowCacheShards * 4096
	c := newRowCache(capacity)
	hot := []byte("hot")
	_, gen := c.get(hot)
	h := cellRow("h", 1)
	c.put(hot, gen, &h, true)
	for i := range 20000 {
		key := []byte("cold" + strconv.Itoa(i))
		_, gen := c.get(key)
		r := cellRow(fmt.Sprint(i), 1)
		c.put(key, gen, &r, true)
		if e, _ := c.get(hot); e == nil {
			t.Fatalf("the key read after every insert was evicted after %d inserts", i)
		}
	}
	entries, bytes := c.size()
	if bytes > capacity || entries == 0 {
		t.Fatalf("%d entries of %d bytes; capacity %d", entries, bytes, capacity)
	}
	for i := range c.shards {
		s := &c.shards[i]
		if len(s.clock) != len(s.entries) {
			t.Fatalf("shard %d: %d clock slots for %d entries", i, len(s.clock), len(s.entries))
		}
		for j, e := range s.clock {
			if e.idx != j || s.entries[e.key] != e {
				t.Fatalf("shard %d: clock slot %d out of step with the map", i, j)
			}
		}
	}
	t.Logf("%d entries, %d bytes", entries, bytes)
}

// TinyLFU admission: rows read often survive a scan of many rows read once, which plain
// CLOCK would let push all of them out.
func TestRowCacheKeepsOftenReadRowsThroughAScan(t *testing.T) {
	c := newRowCache(rowCacheShards * (64 << 10))
	read := func(key []byte) {
		if e, gen := c.get(key); e == nil {
			r := cellRow("v", 1)
			c.put(key, gen, &r, true)
		}
	}
	const hot = 5000
	for range 4 {
		for i := range hot {
			read([]byte("hot" + strconv.Itoa(i)))
		}
	}
	for i := range 100_000 {
		read([]byte("scan" + strconv.Itoa(i)))
	}
	kept := 0
	for i := range hot {
		if e, _ := c.get([]byte("hot" + strconv.Itoa(i))); e != nil {
			kept++
		}
	}
	entries, bytes := c.size()
	t.Logf("%d of %d often-read rows kept; %d entries, %d bytes cached", kept, hot, entries, bytes)
	if kept < hot*9/10 {
		t.Fatalf("a scan of rows read once pushed out %d of %d rows read four times each", hot-kept, hot)
	}
}

// Readers must never see a key go back in time: a Get that starts after a write was
// acknowledged returns that write or a later one, with the row cache racing every write.
func TestRowCacheNeverServesARowOlderThanAnAcknowledgedWrite(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Options: engine.Options{Durability: engine.Periodic}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const keys = 4
	var acked [keys]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			key := []byte{byte('a' + k)}
			for i := int64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Apply([]row.Mutation{{Key: key, Row: cellRow(strconv.FormatInt(i, 10), i)}}); err != nil {
					t.Error(err)
					return
				}
				acked[k].Store(i)
			}
		})
	}
	var stale, reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := n % keys
				floor := acked[k].Load()
				r, found, err := db.Get([]byte{byte('a' + k)})
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				if floor == 0 {
					continue
				}
				if !found || r.Cells[0].Timestamp < floor {
					stale.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	hits, misses := db.rows.hits.Load(), db.rows.misses.Load()
	t.Logf("%d reads, %d cache hits, %d misses", reads.Load(), hits, misses)
	if stale.Load() > 0 {
		t.Fatalf("%d reads returned a row older than a write acknowledged before they started", stale.Load())
	}
	if hits == 0 {
		t.Fatal("no read was served from the cache")
	}
}

// View lends cached encodings; it must show exactly what Get returns, for rows the read-time
// purge leaves alone and for rows it changes (tombstones, expired and expiring cells),
// from the cache and from pebble.
func TestViewShowsWhatGetReturns(t *testing.T) {
	now := int64(1_000_000_000)
	db, err := Open(t.TempDir(), Options{Options: engine.Options{Durability: engine.Periodic, Clock: func() int64 { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := map[string]row.Row{
		"plain":    cellRow("v", 10),
		"tomb":     {Cells: []row.Cell{{Name: []byte("a"), Timestamp: 10, Tombstone: true}, {Name: []byte("b"), Value: []byte("x"), Timestamp: 10}}},
		"expired":  {Cells: []row.Cell{{Name: []byte("a"), Value: []byte("x"), Timestamp: 10, ExpiresAt: now - 1}}},
		"expiring": {Cells: []row.Cell{{Name: []byte("a"), Value: []byte("x"), Timestamp: 10, ExpiresAt: now + 1e9}}},
		"deleted":  {Deleted: 20, Cells: []row.Cell{{Name: []byte("a"), Value: []byte("x"), Timestamp: 30}}},
	}
	for k, r := range rows {
		if err := db.Apply([]row.Mutation{{Key: []byte(k), Row: r}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pass := range []string{"miss", "hit"} {
		for _, k := range []string{"plain", "tomb", "expired", "expiring", "deleted", "absent"} {
			var viewed []byte
			var viewedFound bool
			if err := db.View([]byte(k), func(enc []byte, found bool) { viewed, viewedFound = bytes.Clone(enc), found }); err != nil {
				t.Fatal(err)
			}
			got, found, err := db.Get([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if found != viewedFound || (found && !bytes.Equal(viewed, row.Encode(&got))) || (!found && viewed != nil) {
				t.Errorf("%s (%s): View gave %v %x, Get %v %v", k, pass, viewedFound, viewed, found, got)
			}
		}
	}
	if db.rows.hits.Load() == 0 {
		t.Fatal("the second pass was not served by the cache")
	}
}

// A row larger than its victim evicts more rows to fit, never itself, and the shard stays
// within its limit with its clock and map in step.
func TestRowCacheLargeRowEvictsOthersToFit(t *testing.T) {
	c := newRowCache(rowCacheShards * 4096)
	big := []byte("big")
	s, _ := c.shard(big)
	var small [][]byte
	for i := 0; len(small) < 40; i++ {
		if k := []byte("small" + strconv.Itoa(i)); func() bool { sh, _ := c.shard(k); return sh == s }() {
			small = append(small, k)
		}
	}
	for _, k := range small {
		_, gen := c.get(k)
		r := cellRow("v", 1)
		c.put(k, gen, &r, true)
	}
	// Every small row but the last in the clock is marked read, so that the last is the
	// victim the big row replaces; the hand then wraps and moves the big row itself into
	// its path as rows are removed to make room.
	last := s.clock[len(s.clock)-1].key
	for _, k := range small {
		if string(k) != last {
			c.get(k)
		}
	}
	for range 10 {
		c.get(big) // read often enough to be admitted over any small row
	}
	_, gen := c.get(big)
	r := cellRow(string(bytes.Repeat([]byte("x"), 700)), 1)
	c.put(big, gen, &r, true)
	if e, _ := c.get(big); e == nil {
		t.Fatal("the large row, read more often than any other, was not cached")
	}
	if s.bytes > s.limit {
		t.Fatalf("shard holds %d bytes, limit %d", s.bytes, s.limit)
	}
	if len(s.clock) != len(s.entries) {
		t.Fatalf("%d clock slots for %d entries", len(s.clock), len(s.entries))
	}
	for j, e := range s.clock {
		if e.idx != j || s.entries[e.key] != e {
			t.Fatalf("clock slot %d out of step with the map", j)
		}
	}
	t.Logf("%d entries, %d bytes of %d", len(s.entries), s.bytes, s.limit)
}
