package lsm

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// ceilingFileName is the file in the data directory that holds the store's timestamp
// ceiling (see ceiling), in decimal microseconds.
const ceilingFileName = "TIMESTAMP-CEILING"

// ceilingMargin is how far above the newest timestamp written a raised ceiling goes, so
// that the file is rewritten about once a minute under writes stamped with the clock,
// not on every write.
const ceilingMargin = int64(time.Minute / time.Microsecond)

// ceiling keeps a bound on every timestamp the store holds (cell timestamps and row
// tombstones), on disk, for engine.TimestampBounded: Apply raises it, and writes the file,
// before the first write it would not bound reaches pebble, so the bound on disk covers
// everything pebble may have logged, whatever the durability mode and wherever a crash
// comes. A store opened without the file holds nothing it could bound unless it is empty,
// so its ceiling is unknown (math.MaxInt64) for good.
type ceiling struct {
	path  string
	mu    sync.Mutex   // held while the file is rewritten
	bound atomic.Int64 // what the file says
}

// openCeiling reads the ceiling of the store in dir; empty says whether the store holds
// no key.
func openCeiling(dir string, empty func() (bool, error)) (*ceiling, error) {
	c := &ceiling{path: filepath.Join(dir, ceilingFileName)}
	b, err := os.ReadFile(c.path)
	switch {
	case err == nil:
		v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("lsm: %s: %w", c.path, perr)
		}
		c.bound.Store(v)
	case errors.Is(err, fs.ErrNotExist):
		e, eerr := empty()
		if eerr != nil {
			return nil, eerr
		}
		if !e {
			c.bound.Store(math.MaxInt64) // written before ceilings: anything may be there
		}
	default:
		return nil, fmt.Errorf("lsm: read the timestamp ceiling: %w", err)
	}
	return c, nil
}

// cover makes the ceiling bound ts, rewriting the file first if it does not yet.
func (c *ceiling) cover(ts int64) error {
	if ts <= c.bound.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts <= c.bound.Load() {
		return nil
	}
	v := ts + min(ceilingMargin, math.MaxInt64-ts)
	if err := engine.WriteFileAtomic(c.path, []byte(strconv.FormatInt(v, 10)+"\n")); err != nil {
		return fmt.Errorf("lsm: raise the timestamp ceiling: %w", err)
	}
	c.bound.Store(v)
	return nil
}

// newestTimestamp is the largest timestamp in batch (row.Row.Newest).
func newestTimestamp(batch []row.Mutation) int64 {
	var ts int64
	for i := range batch {
		ts = max(ts, batch[i].Row.Newest())
	}
	return ts
}

// storeEmpty reports whether pdb holds no key.
func storeEmpty(pdb *pebble.DB) (bool, error) {
	it, err := pdb.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	return !found, errors.Join(it.Error(), it.Close())
}

// TimestampCeiling implements engine.TimestampBounded: no cell timestamp or row
// tombstone the store holds exceeds it; math.MaxInt64 for a store written before kura
// kept the bound.
func (db *DB) TimestampCeiling() int64 { return db.ceiling.bound.Load() }
