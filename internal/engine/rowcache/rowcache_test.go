package rowcache

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

func cellRow(v string, ts int64) row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte(v), Timestamp: ts}}}
}

// A read that missed, then lost a race with a write of its key, must not cache what it
// read: the write's invalidation came first and nothing would remove the old row later.
func TestRowCacheDropsAReadThatRacedAnInvalidation(t *testing.T) {
	c := New(1 << 20)
	key := []byte("k")
	e, gen := c.Get(key)
	if e != nil {
		t.Fatal("empty cache hit")
	}
	c.Invalidate(key) // a write of key became visible after the read saw the old row
	old := cellRow("old", 1)
	c.Put(key, gen, &old, true)
	if e, _ := c.Get(key); e != nil {
		t.Fatal("the row read before the write was cached after the write's invalidation")
	}

	_, gen = c.Get(key)
	nw := cellRow("new", 2)
	c.Put(key, gen, &nw, true)
	e, _ = c.Get(key)
	if e == nil || !e.found || !bytes.Equal(e.enc, row.Encode(&nw)) {
		t.Fatalf("a read with no write in between was not cached: %+v", e)
	}
	c.Invalidate(key)
	if e, _ := c.Get(key); e != nil {
		t.Fatal("invalidate left the row cached")
	}
}

// InvalidateRange forgets the keys in [lo, hi) and no other, and a read of any key that
// missed before it, and would cache what the deletion removed, caches nothing.
func TestRowCacheInvalidateRangeForgetsExactlyTheRange(t *testing.T) {
	keys := []string{"a", "b", "b\x00", "c", "d", "e"}
	for _, tc := range []struct {
		lo, hi []byte
		gone   string
	}{
		{[]byte("b"), []byte("d"), "b b\x00 c"},
		{nil, []byte("b\x00"), "a b"},
		{[]byte("c\x00"), nil, "d e"},
		{nil, nil, "a b b\x00 c d e"},
		{[]byte("c"), []byte("c"), ""},
	} {
		c := New(1 << 20)
		for _, k := range keys {
			_, gen := c.Get([]byte(k))
			r := cellRow(k, 1)
			c.Put([]byte(k), gen, &r, true)
		}
		_, racing := c.Get([]byte("late")) // a read that missed before the deletion
		c.InvalidateRange(tc.lo, tc.hi)
		var gone []string
		for _, k := range keys {
			if e, _ := c.Get([]byte(k)); e == nil {
				gone = append(gone, k)
			}
		}
		if got := strings.Join(gone, " "); got != tc.gone {
			t.Errorf("[%q, %q): forgot %q, want %q", tc.lo, tc.hi, got, tc.gone)
		}
		r := cellRow("stale", 1)
		c.Put([]byte("late"), racing, &r, true)
		if e, _ := c.Get([]byte("late")); e != nil {
			t.Errorf("[%q, %q): a read that missed before the deletion cached its row", tc.lo, tc.hi)
		}
		if n, _ := c.Size(); n != len(keys)-len(gone) {
			t.Errorf("[%q, %q): %d entries, want %d", tc.lo, tc.hi, n, len(keys)-len(gone))
		}
	}
}

func TestRowCacheStaysWithinCapacityAndKeepsRowsInUse(t *testing.T) {
	const capacity = shardCount * 4096
	c := New(capacity)
	hot := []byte("hot")
	_, gen := c.Get(hot)
	h := cellRow("h", 1)
	c.Put(hot, gen, &h, true)
	for i := range 20000 {
		key := []byte("cold" + strconv.Itoa(i))
		_, gen := c.Get(key)
		r := cellRow(fmt.Sprint(i), 1)
		c.Put(key, gen, &r, true)
		if e, _ := c.Get(hot); e == nil {
			t.Fatalf("the key read after every insert was evicted after %d inserts", i)
		}
	}
	entries, bytes := c.Size()
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
	c := New(shardCount * (64 << 10))
	read := func(key []byte) {
		if e, gen := c.Get(key); e == nil {
			r := cellRow("v", 1)
			c.Put(key, gen, &r, true)
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
		if e, _ := c.Get([]byte("hot" + strconv.Itoa(i))); e != nil {
			kept++
		}
	}
	entries, bytes := c.Size()
	t.Logf("%d of %d often-read rows kept; %d entries, %d bytes cached", kept, hot, entries, bytes)
	if kept < hot*9/10 {
		t.Fatalf("a scan of rows read once pushed out %d of %d rows read four times each", hot-kept, hot)
	}
}

// A row larger than its victim evicts more rows to fit, never itself, and the shard stays
// within its limit with its clock and map in step.
func TestRowCacheLargeRowEvictsOthersToFit(t *testing.T) {
	c := New(shardCount * 4096)
	big := []byte("big")
	s, _ := c.shardOf(big)
	var small [][]byte
	for i := 0; len(small) < 40; i++ {
		if k := []byte("small" + strconv.Itoa(i)); func() bool { sh, _ := c.shardOf(k); return sh == s }() {
			small = append(small, k)
		}
	}
	for _, k := range small {
		_, gen := c.Get(k)
		r := cellRow("v", 1)
		c.Put(k, gen, &r, true)
	}
	// Every small row but the last in the clock is marked read, so that the last is the
	// victim the big row replaces; the hand then wraps and moves the big row itself into
	// its path as rows are removed to make room.
	last := s.clock[len(s.clock)-1].key
	for _, k := range small {
		if string(k) != last {
			c.Get(k)
		}
	}
	for range 10 {
		c.Get(big) // read often enough to be admitted over any small row
	}
	_, gen := c.Get(big)
	r := cellRow(string(bytes.Repeat([]byte("x"), 700)), 1)
	c.Put(big, gen, &r, true)
	if e, _ := c.Get(big); e == nil {
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

// Load reads the store only on a miss, caches what it read, and caches nothing when the
// read fails.
func TestLoadReadsOnlyOnAMissAndNeverCachesAFailure(t *testing.T) {
	c := New(1 << 20)
	reads := 0
	fail := errors.New("disk")
	if _, err := c.Load([]byte("k"), func() (row.Row, bool, error) { reads++; return row.Row{}, false, fail }); !errors.Is(err, fail) {
		t.Fatalf("a failed read: %v, want %v", err, fail)
	}
	want := cellRow("v", 1)
	for range 3 {
		e, err := c.Load([]byte("k"), func() (row.Row, bool, error) { reads++; return want, true, nil })
		if err != nil || !e.Found() || !bytes.Equal(e.enc, row.Encode(&want)) {
			t.Fatalf("load: %+v %v", e, err)
		}
	}
	if reads != 2 {
		t.Fatalf("%d reads of the store for a failure and three loads, want 2", reads)
	}
}

// Update keeps a cached key cached with the row it is given, leaves a key not cached
// uncached, and, like Invalidate, keeps a load that began before it from caching what it
// read.
func TestRowCacheUpdateKeepsWrittenRowsCachedAndDropsRacingLoads(t *testing.T) {
	c := New(1 << 20)
	key, other := []byte("k"), []byte("other")
	_, gen := c.Get(key)
	old := cellRow("old", 1)
	c.Put(key, gen, &old, true)
	merge := func(w row.Row) func(row.Row, bool) (row.Row, bool, error) {
		return func(r row.Row, _ bool) (row.Row, bool, error) { return row.Merge(r, w), true, nil }
	}
	c.Update(key, merge(cellRow("new", 2)))
	e, _ := c.Get(key)
	if want := cellRow("new", 2); e == nil || !e.found || !bytes.Equal(e.enc, row.Encode(&want)) {
		t.Fatalf("after an update: %+v, want the merged row", e)
	}
	c.Update(other, merge(cellRow("v", 1)))
	if e, _ := c.Get(other); e != nil {
		t.Fatal("an update cached a key that was not cached")
	}
	_, gen = c.Get(other) // a load of other began...
	c.Update(other, merge(cellRow("v", 2)))
	stale := cellRow("v", 1)
	c.Put(other, gen, &stale, true) // ...and ended after the write
	if e, _ := c.Get(other); e != nil {
		t.Fatal("a load that raced an update cached what it read")
	}
	c.Update(key, func(row.Row, bool) (row.Row, bool, error) { return row.Row{}, false, nil }) // deleted
	if e, _ := c.Get(key); e == nil || e.found {
		t.Fatalf("after an update to nothing stored: %+v, want a cached miss", e)
	}
	if n, b := c.Size(); n != 1 || b <= 0 {
		t.Fatalf("size %d entries, %d bytes; want 1", n, b)
	}
	c.Update(key, func(row.Row, bool) (row.Row, bool, error) { return row.Row{}, false, errors.New("bug") })
	if e, _ := c.Get(key); e != nil {
		t.Fatal("an update that failed left the entry cached")
	}
}
