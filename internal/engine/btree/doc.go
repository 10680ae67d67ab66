// Package btree is kura's read-optimized engine (ring.ReadOptimized): rows kept fully
// merged in one B+tree file (go.etcd.io/bbolt), so a read touches one stored version.
//
// # Layout
//
// One bbolt file, dir/kura.bolt, with two buckets. "rows" maps each key to its stored row:
//
//	crc32c  4 bytes, little-endian, Castagnoli CRC of key || encoding
//	row     row.AppendEncode of the fully merged row
//
// "meta" holds the value format version and the exact row count, written in the same
// transactions as the rows so a crash cannot make them disagree. Keys are opaque bytes.
// bbolt caps keys at 32 KiB, half of row.MaxKeySize, so the rare longer key lives in a
// nested bucket named after its first 32 KiB, which keeps the key order (see keys.go).
//
// # Corruption
//
// bbolt checksums only its two meta pages, which Open checks (a damaged or truncated file
// usually fails there, with ErrCorrupt). Data pages have no checksum, hence the CRC on every
// value: a flipped byte in a value or in the key it belongs to is reported as ErrCorrupt,
// never returned as data. bbolt may also panic, or fault on its memory map, when it follows
// a damaged page; every path that enters bbolt recovers that panic into ErrCorrupt.
//
// A damaged key can also make bbolt's lookup miss a key that is stored. When Get finds
// nothing it therefore checks the entries on either side of where the key would be (a
// damaged entry is one of them, and fails its checksum) and whether a cursor, which does
// not stop at a page's end as a lookup does, finds the key after all. A scan of the whole
// key space compares the rows it saw with the stored count. What remains possible is a
// damaged page header or branch page hiding keys from Get, which then reports them absent
// (about 1% of TestDamagedFileNeverReturnsWrongRows's trials); a full scan or Check
// reports the damage.
//
// # Writes: read-modify-write under group commit
//
// Apply enqueues its batch for a single committer goroutine (see commit.go), which applies
// every queued batch in one bbolt write transaction: for each mutation it reads the stored
// row, merges the mutation in (row.Merge), purges tombstones and expired cells older than
// the grace period (row.Purge; safe, since the stored row is the key's whole history) and
// writes the row back, or deletes the key when nothing is left. If a group's transaction
// fails, each of its requests is retried alone, so one bad request fails alone.
//
// With Options.WriteBufferBytes set, the committer journals each group instead and keeps
// its rows in memory, and a background flush merges them into the tree in key order, a
// buffer at a time (see buffer.go and journal.go). Reads and iterators merge the buffered
// rows with the tree's.
//
// # Range deletion
//
// DeleteRange (engine.RangeDeleter) flushes the write buffer, if on, into the tree, then
// deletes the range's keys in write transactions of up to 10,000 keys each, so that
// other writes take their turns and no transaction holds a whole range's dirty pages
// (see rangedel.go). The freed pages go to bbolt's freelist for later writes; the file
// keeps its size.
//
// # Durability
//
// In engine.Sync (the default) bbolt fsyncs every commit before Apply returns, and all the
// Apply calls of one group share that fsync. In engine.Periodic bbolt runs with NoSync: a
// commit only writes to the page cache, so it survives a crash of the process, and a
// background goroutine fsyncs every SyncInterval. A machine crash or power loss in Periodic
// mode may lose up to SyncInterval of acknowledged writes, and, because bbolt without fsync
// does not order its data pages before its meta page, it may also leave the file damaged
// (reported as ErrCorrupt at Open or on read). Use Sync where that matters.
//
// # Reads
//
// Get first looks in a row cache (package rowcache; Options.RowCacheBytes), which holds the
// rows read recently one by one: the OS caches the file a page at a time, and a page holds
// a hot row with its cold neighbours, so with data larger than memory the same memory
// holds up to three times more hot rows as a row cache. Once a group's transaction has
// committed, the committer gives each of its keys that is cached the row the tree now holds
// (rowcache.Cache.Update; with the write buffer, the cached row with the write merged in),
// so that a row read and written often stays cached. On a miss Get runs in its own read
// transaction and copies the value out of the memory map before decoding, so the row
// belongs to the caller. View (engine.Viewer) lends a cached row's encoding to a replica
// computing a digest. NewIterator holds a read transaction for its lifetime and does not
// use the cache; see its documentation for what that costs writers.
package btree
