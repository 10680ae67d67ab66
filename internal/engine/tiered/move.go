package tiered

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// moveChunk is how many keys one step of a move carries: one write to the destination,
// one sync and one removal from the source per chunk.
const moveChunk = 256

// Move moves keys to tier to (see the package comment), a chunk at a time, and returns
// once they are there. Keys already at home on to are skipped; a key that is not stored
// anywhere only changes home. Rows stay readable throughout; if Move fails, the keys it
// was moving stay readable from both tiers and the next Move of them (or the next Open)
// finishes the job.
func (db *DB) Move(keys [][]byte, to Tier) error { return db.move(keys, to, nil) }

// Captured is a slow key's stored row as a read saw it (see DB.Get), or as a write that
// replaced it left it (see DB.captureWrites): its encoding and the count of its write
// slot then (see writeSlot).
type Captured struct {
	Stored []byte
	Token  uint64
	// Written says a write captured the row (DB.captureWrites), not a read.
	Written bool
}

// moveCaptured promotes keys to the fast tier like Move, but copies the row captured by a
// read instead of reading the slow tier again, for each key whose stripe has seen no
// write since (its write count still equals the token).
func (db *DB) moveCaptured(keys [][]byte, captured map[string]Captured) error {
	return db.move(keys, Fast, captured)
}

func (db *DB) move(keys [][]byte, to Tier, captured map[string]Captured) error {
	if err := db.enter("move"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	db.moveMu.Lock()
	defer db.moveMu.Unlock()
	for _, k := range keys {
		if len(k) == 0 {
			return fmt.Errorf("tiered: move: %w: empty key", engine.ErrInvalid)
		}
	}
	for len(keys) > 0 {
		n := min(moveChunk, len(keys))
		marked := make([][]byte, 0, n)
		known := make(map[string]row.Row)
		var err error
		db.eachLocked(keys[:n], func(s *stripe, k []byte) {
			c, ok := captured[string(k)]
			ok = ok && c.Stored != nil
			moved, unchanged := db.mark(s, k, to, c.Token)
			if !moved {
				return
			}
			marked = append(marked, bytes.Clone(k))
			if ok && unchanged {
				r, derr := row.Decode(c.Stored)
				if derr != nil { // we encoded it: only a bug gets here
					err = errors.Join(err, fmt.Errorf("tiered: move %q: captured row: %w", k, derr))
					return
				}
				known[string(k)] = r
			}
		})
		if err != nil {
			return err // the marks stay: reads merge both tiers, and the next move finishes them
		}
		if err := db.finishMoves(to.other(), to, marked, known); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// Waiting for a stripe's exclusive lock: see eachLocked.
const (
	lockRetryFirst = 100 * time.Microsecond
	lockRetryMax   = 10 * time.Millisecond
	lockPatience   = 2 * time.Second
)

// eachLocked calls fn for every key of keys, in no set order, under the key's stripe's
// exclusive lock. A read holds its stripe shared for as long as its tier takes, which on
// a busy slow device is hundreds of milliseconds; taking the stripes' locks one after the
// other would add up those waits over a chunk's keys (a promotion of 256 rows took
// seconds), and a writer waiting on a lock holds up every new read of its stripe. So it
// tries each lock without waiting, handles the keys whose stripes are free, and comes back
// for the others, waiting only as long as the last read in flight; after lockPatience it
// waits on each remaining lock in turn, so that a stripe never free still gets its turn.
func (db *DB) eachLocked(keys [][]byte, fn func(s *stripe, k []byte)) {
	pending := keys
	retry := lockRetryFirst
	deadline := time.Now().Add(lockPatience)
	for len(pending) > 0 {
		var busy [][]byte
		for _, k := range pending {
			s := &db.stripes[stripeOf(k)]
			if !s.mu.TryLock() {
				busy = append(busy, k)
				continue
			}
			fn(s, k)
			s.mu.Unlock()
		}
		pending = busy
		if len(pending) > 0 && time.Now().After(deadline) {
			for _, k := range pending {
				s := &db.stripes[stripeOf(k)]
				s.mu.Lock()
				fn(s, k)
				s.mu.Unlock()
			}
			return
		}
		if len(pending) > 0 {
			time.Sleep(retry)
			retry = min(2*retry, lockRetryMax)
		}
	}
}

// mark makes to the home of k and marks k in both tiers, unless k is already at home on to
// and in one tier only. It reports whether k is marked, and whether its write slot's
// count still equals token (no write since a read captured the row). The caller holds s,
// k's stripe, exclusively.
//
// Marking does not count as a write: it changes where k lives, not what is stored, and it
// holds the stripe's lock, which every read holds shared, so no read of the stripe is in
// flight. Counting it would make every capture in the stripe look raced: promotions mark
// thousands of keys a second over 1,024 stripes, and the rows they spoil would be read
// from the slow device again, one after another.
func (db *DB) mark(s *stripe, k []byte, to Tier, token uint64) (marked, unchanged bool) {
	home, inBoth := s.home(k)
	if home == to && !inBoth {
		return false, false
	}
	unchanged = !inBoth && db.slots[slotOf(k)].started.Load() == token
	s.both[string(k)] = to
	size, wasFast := s.fast.Get(k)
	switch {
	case to == Fast && !wasFast:
		s.fast.Set(k, 0) // sized when the move finishes
		db.fastKeys.Add(1)
	case to == Slow && wasFast:
		s.fast.Delete(k)
		db.fastKeys.Add(-1)
		db.fastBytes.Add(-size)
	}
	return true, unchanged
}

// finishMoves carries out steps 2 to 4 of a move for keys, which are marked in both tiers
// with dst as their home: copy their stored rows from src to dst, make dst durable, remove
// them from src, clear the marks. known holds rows already known to be what src stores
// (captured by a read with no write since), which are not read again. The caller holds
// moveMu and db.mu shared. On error the marks stay, so reads keep merging both tiers.
func (db *DB) finishMoves(src, dst Tier, keys [][]byte, known map[string]row.Row) error {
	if len(keys) == 0 {
		return nil
	}
	muts := make([]row.Mutation, 0, len(keys))
	found := make([][]byte, 0, len(keys))
	sizes := make(map[string]int64, len(keys))
	var bytesMoved int64
	for _, k := range keys {
		r, ok := known[string(k)]
		if !ok {
			var err error
			if r, ok, err = db.tiers[src].GetStored(k); err != nil {
				return fmt.Errorf("tiered: move %q from the %s tier: %w", k, src, err)
			}
		}
		if !ok {
			continue
		}
		size := int64(row.EncodedSize(&r))
		sizes[string(k)] = size
		bytesMoved += size
		muts = append(muts, row.Mutation{Key: k, Row: r})
		found = append(found, k)
	}
	if len(muts) > 0 {
		db.view.RLock()
		err := db.tiers[dst].Apply(muts)
		if err == nil && db.opts.Durability != engine.Sync {
			err = db.tiers[dst].Sync()
		}
		if dst == Slow { // failed too: part of it may be there; before the marks go (writeSlot)
			for i := range muts {
				db.slots[slotOf(muts[i].Key)].raise(muts[i].Row.Newest())
			}
		}
		if err == nil {
			err = db.tiers[src].Remove(found)
		}
		db.view.RUnlock()
		if err != nil {
			return fmt.Errorf("tiered: move %d rows from the %s to the %s tier: %w", len(muts), src, dst, err)
		}
	}
	db.eachLocked(keys, func(s *stripe, k []byte) {
		if s.both[string(k)] == dst {
			delete(s.both, string(k))
		}
		if old, ok := s.fast.Get(k); ok && dst == Fast {
			s.fast.Set(k, sizes[string(k)])
			db.fastBytes.Add(sizes[string(k)] - old)
		}
	})
	db.moved[dst].Add(int64(len(muts)))
	db.movedBytes[dst].Add(bytesMoved)
	return nil
}

// InBoth reports how many keys are stored in both tiers right now: moves under way, or
// left unfinished by an error.
func (db *DB) InBoth() int {
	n := 0
	for i := range db.stripes {
		s := &db.stripes[i]
		s.mu.RLock()
		n += len(s.both)
		s.mu.RUnlock()
	}
	return n
}

// HomeOf returns key's home tier.
func (db *DB) HomeOf(key []byte) Tier {
	s := &db.stripes[stripeOf(key)]
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, _ := s.home(key)
	return h
}

// lowestFast lists the n keys at home on the fast tier with the lowest scores, lowest
// first, with their sizes, reads and scores (reads reports both for a key; ties go by
// key, as lowestFirst orders). It keeps n candidates at a time, not one per fast row: a
// decision demotes only the lowest-scored rows, and a list of every fast row (300,000
// on the emulated SSD) made each decision allocate tens of megabytes, which the Go heap
// then kept, and which a node with a memory limit takes from the page cache that holds
// the slow tier's pages (docs/benchmarks.md at 77be0fa).
func (db *DB) lowestFast(n int, reads func(key []byte) (int, float64)) []Candidate {
	if n <= 0 {
		return nil
	}
	h := make(highest, 0, min(n, int(db.fastKeys.Load())+1))
	for i := range db.stripes {
		s := &db.stripes[i]
		s.mu.RLock()
		for k, size := range s.fast.All() {
			c := Candidate{Bytes: size}
			c.Reads, c.Score = reads(k)
			h.offer(c, k, n)
		}
		s.mu.RUnlock()
	}
	slices.SortFunc(h, lowestFirst)
	return h
}

// highest is a max-heap by lowestFirst: the candidate on top is the one that would
// leave first if a lower one came.
type highest []Candidate

// offer keeps c, with key as its Key, if the heap holds fewer than n candidates or c
// comes before its top in lowestFirst's order. It copies key only to keep it: most rows
// offered are not kept.
func (h *highest) offer(c Candidate, key []byte, n int) {
	switch {
	case len(*h) < n:
		c.Key = string(key)
		*h = append(*h, c)
		h.up(len(*h) - 1)
	case comesBefore(c.Score, key, (*h)[0]):
		c.Key = string(key)
		(*h)[0] = c
		h.down(0)
	}
}

// comesBefore reports whether a candidate with score and key comes before c in
// lowestFirst's order.
func comesBefore(score float64, key []byte, c Candidate) bool {
	if o := cmp.Compare(score, c.Score); o != 0 {
		return o < 0
	}
	return string(key) < c.Key // compared in place: no copy of key
}

func (h highest) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if lowestFirst(h[p], h[i]) >= 0 {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (h highest) down(i int) {
	for {
		top, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && lowestFirst(h[l], h[top]) > 0 {
			top = l
		}
		if r < len(h) && lowestFirst(h[r], h[top]) > 0 {
			top = r
		}
		if top == i {
			return
		}
		h[i], h[top] = h[top], h[i]
		i = top
	}
}

// FastRowBytes is the row data at home on the fast tier, as sized when it moved there.
func (db *DB) FastRowBytes() int64 { return db.fastBytes.Load() }

// Check counts the keys at home on the fast tier and their bytes afresh and reports an
// error if the running counts (FastRowBytes, TierStats) disagree. Tests call it after
// moves; moves under way may make it fail, so call it between them.
func (db *DB) Check() error {
	var n, keys int64
	for i := range db.stripes {
		s := &db.stripes[i]
		s.mu.RLock()
		for _, size := range s.fast.All() {
			n += size
		}
		keys += int64(s.fast.Len())
		s.mu.RUnlock()
	}
	if b, k := db.fastBytes.Load(), db.fastKeys.Load(); b != n || k != keys {
		return fmt.Errorf("tiered: check: the fast tier counts %d keys and %d bytes, its stripes hold %d and %d", k, b, keys, n)
	}
	return nil
}

// slowRowBytes estimates the size of a row on the slow tier: the average of the rows on
// the fast tier (measured when they moved; rows tend to be alike), else the slow tier's
// disk bytes per row, which counts its logs and metadata too.
func (db *DB) slowRowBytes() int64 {
	if n := db.fastKeys.Load(); n > 0 {
		if b := db.FastRowBytes(); b > 0 {
			return max(1, b/n)
		}
	}
	st := db.tiers[Slow].Stats()
	if st.RowsEstimate <= 0 || st.DiskBytes <= 0 {
		return defaultRowBytes
	}
	return max(1, st.DiskBytes/st.RowsEstimate)
}

// movedTotal is the bytes moved either way since Open.
func (db *DB) movedTotal() int64 { return db.movedBytes[Fast].Load() + db.movedBytes[Slow].Load() }
