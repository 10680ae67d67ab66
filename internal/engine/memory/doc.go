// Package memory is kura's in-memory engine (ring.InMemory): every row lives in an ordered
// tree in RAM, so reads and writes are as fast as the engine can be.
//
// # Not durable
//
// The memory engine is not durable between snapshots. Apply returns once the row is in
// RAM, whatever engine.Options.Durability says (the option is ignored). A crash loses
// everything written since the last snapshot, and without SnapshotPath (the default)
// nothing survives even a clean restart: every Open starts empty. Run it where another
// replica, with a persistent engine, holds the data.
//
// # Layout
//
// A github.com/tidwall/btree BTreeG ordered by key. Each row is stored as one byte slice,
// key followed by row.AppendEncode of the fully merged row, rather than as a decoded
// row.Row: a decoded 10-column row carries a Cells array and twenty small slices, roughly
// doubling its size, while decoding one on Get costs about a microsecond. TestBytesPerRow
// measures the cost per row: a 1 KB row (10 columns of 100 bytes, 23-byte key) takes about
// 1,200 bytes of live heap, 1,127 of them its key and encoding.
//
// Go's collector lets the heap grow to twice the live heap between collections (GOGC=100),
// so RSS runs well above the live heap while rows are loaded: a million 1 KB rows peaked at
// 1.87 GB of RSS by default, and at 1.39 GB with GOMEMLIMIT=1400MiB. A node that runs this
// engine near its memory budget should set a memory limit (GOMEMLIMIT or
// debug.SetMemoryLimit); the engine does not, because the limit is the whole process's.
//
// Apply merges each mutation into the stored row (row.Merge), purges tombstones and
// expired cells past the grace period (row.Purge; safe, since the stored row is the key's
// whole history), and replaces the stored slice with a new one, or deletes the row when
// nothing is left. Stored slices are never modified, which is what lets readers share them.
// DeleteRange (engine.RangeDeleter) deletes the rows of a range from the tree, in chunks
// under the write lock.
//
// # Snapshots
//
// NewIterator, Flush, Close and the optional background loop all start from tree.Copy, an
// O(1) copy-on-write snapshot: iterators walk it and snapshot files are written from it
// without holding the lock, while writers go on (their first write to each shared node
// copies the node). With SnapshotPath set, Open loads the file, and Flush, Close and every
// SnapshotInterval write it again atomically (temporary file, fsync, rename, fsync of the
// directory). Records carry CRC32C checksums and the file ends with a record count, so a
// truncated or damaged snapshot fails Open with engine.ErrCorrupt instead of loading part of
// the data. The snapshot's directory is locked (engine.LockDir) so two processes cannot
// share one file. See snapshot.go for the format.
package memory
