package btree

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
)

// Limits of one write transaction of DeleteRange. bbolt runs one write transaction at a
// time and keeps every page it dirties in memory until it commits: a range of millions of
// rows deleted at once would hold up every other write for the whole range and take
// memory in proportion to it. A chunk is about as many keys as two of the committer's
// largest groups (DefaultMaxGroupMutations).
const (
	deleteRangeChunk      = 10_000
	deleteRangeChunkBytes = 16 << 20 // of keys, for ranges of long keys
)

var _ engine.RangeDeleter = (*DB)(nil)

// errNothingDeleted rolls back a chunk's transaction that found no key to delete, which
// would otherwise commit (and fsync) for nothing.
var errNothingDeleted = errors.New("btree: delete range: nothing to delete")

// DeleteRange implements engine.RangeDeleter. With the write buffer on it first flushes
// into the tree what the buffer holds (as Flush does), so that the journal can no longer
// bring back rows written before the call. Then it deletes the range's keys from the tree,
// deleteRangeChunk keys per write transaction, committed like the committer's (fsynced
// in Durability Sync) and with the stored row count in the same transaction; writers and
// the buffer's flushes take their turns between chunks. Each chunk's keys leave the row
// cache once it has committed. Rows written after the buffer's flush stay in the buffer
// and in the journal, and survive unless a flush merges them into the tree before their
// chunk deletes them.
//
// The row count (Stats) drops with each chunk. The file does not shrink: bbolt puts the
// freed pages on its freelist, and later writes reuse them (once no read transaction, such
// as an open iterator's, still reads them); to give the space back to the file system an
// operator compacts the file offline (bbolt's compact command). Like the lsm engine's
// deletions, a chunk may use half of the disk's reserve (Options.DiskReserveBytes); one
// refused, or failing with ENOSPC, returns an error wrapping engine.ErrNoSpace.
func (d *DB) DeleteRange(lo, hi []byte) error {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return fmt.Errorf("btree: delete range: %w", err)
	}
	d.mu.RLock() // keeps Close from closing the file meanwhile
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("btree: delete range: %w", engine.ErrClosed)
	}
	if d.buf != nil {
		if err := d.drainBuffer(); err != nil {
			return fmt.Errorf("btree: delete range: %w", err)
		}
	}
	from := bytes.Clone(lo) // the rest of the range starts here
	for {
		deleted, more, err := d.deleteChunk(&from, hi)
		if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, engine.ErrNoSpace) {
			err = fmt.Errorf("%w: %w", engine.ErrNoSpace, err) // as Apply reports it
		}
		if deleted > 0 && d.opts.afterDeleteChunk != nil {
			d.opts.afterDeleteChunk()
		}
		if err != nil || !more {
			return err
		}
	}
}

// deleteChunk deletes, in one write transaction, the first keys of [*from, hi) up to the
// chunk's limits, moves *from past them and returns how many it deleted and whether the
// range may hold more.
func (d *DB) deleteChunk(from *[]byte, hi []byte) (deleted int, more bool, err error) {
	if err := d.space.AdmitFreeing(0); err != nil {
		return 0, false, fmt.Errorf("btree: delete range: %w", err)
	}
	d.syncMu.Lock() // the tree's writers take turns under it: see update and mergeRows
	defer d.syncMu.Unlock()
	var keys [][]byte
	var count int64
	if d.cache != nil {
		defer func() { // once the transaction has committed or rolled back (see rowcache.Cache)
			for _, k := range keys {
				d.cache.Invalidate(k)
			}
		}()
	}
	err = func() (err error) {
		defer guard(&err, panicOnFault())
		return d.bolt.Update(func(tx *bbolt.Tx) error {
			b, err := buckets(tx)
			if err != nil {
				return err
			}
			if keys, more, err = chunkKeys(b, *from, hi); err != nil {
				return err
			}
			if len(keys) == 0 {
				return errNothingDeleted
			}
			for _, k := range keys {
				if err := deleteKey(b, k); err != nil {
					return fmt.Errorf("key %.64q: %w", k, err)
				}
			}
			count = d.rows.Load() - int64(len(keys)) // only writers holding syncMu change it
			return putCount(tx, count)
		})
	}()
	switch {
	case errors.Is(err, errNothingDeleted):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("btree: delete range: %w", err)
	}
	d.rows.Store(count)
	d.commits.Add(1)
	if more {
		*from = append(bytes.Clone(keys[len(keys)-1]), 0) // the next key there can be
	}
	return len(keys), more, nil
}

// chunkKeys returns copies of the first keys of [from, hi) stored under b, up to the
// chunk's limits, and whether it stopped at a limit.
func chunkKeys(b *bbolt.Bucket, from, hi []byte) (keys [][]byte, full bool, err error) {
	var w walker
	size := 0
	k, _, err := w.seek(b, from)
	for ; k != nil && err == nil; k, _, err = w.next() {
		if hi != nil && bytes.Compare(k, hi) >= 0 {
			return keys, false, nil
		}
		keys = append(keys, bytes.Clone(k)) // the walker reuses its key
		if size += len(k); len(keys) == deleteRangeChunk || size >= deleteRangeChunkBytes {
			return keys, true, nil
		}
	}
	return keys, false, err
}
