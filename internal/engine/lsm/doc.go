// Package lsm is kura's write-optimized engine: an engine.Engine on a pebble LSM tree
// (github.com/cockroachdb/pebble/v2) whose writes never read.
//
// # Writes are merge operands
//
// Apply turns every mutation into one pebble Merge of the mutation's row encoded with
// row.AppendEncode, all in one pebble batch, so a batch is atomic and a write costs a WAL
// append and a memtable insert whatever the row already holds. The merge operator
// (MergerName, "kura.row.v1", recorded by pebble in the store) decodes a key's operands,
// folds them with row.Merge and encodes the result once. row.Merge is commutative,
// associative and idempotent, so the operands of a key may be merged in any grouping and
// order that pebble's reads, flushes and compactions choose, and the result is the same.
//
// A corrupt operand (one that row.Decode rejects) fails the merge with an error wrapping
// engine.ErrCorrupt. Pebble returns it from Get and iterators, so a read returns the error,
// never a row without the operand. A flush or compaction that meets it fails, is logged
// through Options.Logger and is retried, forever: a flush stuck that way ends in a write
// stall, and Flush does not return. Apply never writes such an operand (it encodes valid
// rows) and pebble's block checksums catch damaged files before the merge operator sees
// them, so this guards against bugs; a replica that hits it must be rebuilt from its peers.
// Other corruption pebble detects (checksums) also comes back wrapping engine.ErrCorrupt.
//
// # Purging relies on includesBase
//
// Tombstones and expired cells older than GracePeriod are dropped (row.Purge with the
// injected Clock) only when pebble tells the merge operator that it saw the oldest version
// of the key (Finish's includesBase): in a compaction into the bottommost level holding
// the key, or when the merge met a base value. A partial compaction never purges, because
// a dropped tombstone could no longer shadow an older cell in a lower level and deleted
// data would come back. A row purged to nothing stays in the store as the few bytes of the
// empty row's encoding, which reads report as not found: pebble v2.1's DeletableValueMerger,
// which would drop it, corrupts compactions (cockroachdb/pebble#6168).
//
// Pebble's reads also merge with includesBase set, since a read sees every version. So
// reads purge too, and Get and iterators apply the same purge to rows that a compaction
// already merged into a plain value: a read returns the row as a full compaction at the
// read's time would leave it, whatever compactions have run. A row whose tombstones all
// passed the grace period reads as not found.
//
// # Durability
//
// Durability Sync (the default) commits each batch with pebble.Sync: Apply returns after
// the WAL fsync, and pebble's commit pipeline shares one fsync among all batches waiting
// for it (group commit).
//
// Durability Periodic commits with pebble.NoSync and a goroutine fsyncs the WAL every
// SyncInterval, like Cassandra's periodic commit log. Apply returns once the batch is in
// pebble's WAL buffer, which pebble's WAL flusher writes to the file at once (in the
// background, normally within microseconds). What a crash loses:
//
//   - a process crash (SIGKILL, panic) loses only batches still in that user-space buffer,
//     a window of microseconds: what reached the OS page cache survives, because the
//     kernel writes it out;
//   - a machine crash or power loss may lose up to SyncInterval of acknowledged writes,
//     everything since the last periodic fsync.
//
// Flush and Close make everything applied before them durable in both modes.
//
// # Hot keys
//
// Blind merges make a key's read cost grow with the operands written since the last
// flush or compaction that combined them. Under a zipfian workload the hottest keys get
// thousands of updates per memtable, and YCSB write-heavy throughput fell from 9.7k to 3.6k
// ops/s within a minute (22k steady with collapses; docs/bench/engines.md). So when a read merges CollapseOperands operands (default 16) or more,
// the key is queued for a collapse: a background goroutine rewrites it as one Set of the
// merged row, holding a lock that Apply shares for the keys of its batch, so that no
// operand can slip between the collapse's read and its write (see collapse.go). The Set is
// not fsynced: if a crash loses it, the operands it summarized are still in the WAL.
//
// # Range deletion
//
// DeleteRange (engine.RangeDeleter) commits one pebble range deletion as Apply commits a
// batch, so the range is deleted at one instant and durable as a write is; it forgets the
// range in the row cache and holds the collapser off meanwhile. Its space comes back
// without a manual compaction: pebble flushes a memtable holding a range deletion within
// 10 s (FlushDelayDeleteRange), then drops the tables the deletion wholly covers in
// delete-only compactions, which read nothing, and favours the partly covered ones in
// its compaction scores. Measured on 20,000 rows of 1 KB, 90% of them deleted: the disk
// went from 23.8 to 4.9 MB 0.6 s after the deletion with a 100 ms delay, and without a
// delay did not move in the 15 s that no write came to fill the memtable.
//
// # Timestamp ceiling
//
// The store keeps, in TIMESTAMP-CEILING in its directory, a bound on every timestamp it
// holds (engine.TimestampBounded): Apply rewrites the file, synced, before it writes a
// batch with a newer timestamp, raising the bound a minute past it so that writes
// stamped with the clock rewrite it about once a minute. A store that holds keys but no
// file (written before the file existed) reports the bound unknown. The tiered engine
// starts from it to know, without a read, that a write replacing a row shadows all its
// slow tier holds of the row.
//
// # Resources
//
// Open takes engine.LockDir's flock on KURA.LOCK inside the directory before opening
// pebble, so a second Open of one directory, from this process or another, fails with an
// error wrapping engine.ErrLocked. Pebble's own LOCK (fcntl, plus an in-process map keyed
// by the path string) stays as a second line of defence but its errors are not testable.
// Pebble's log lines go to Options.Logger, or nowhere. The block cache (CacheSizeBytes)
// and memtables (MemTableSizeBytes) bound the engine's memory; both fill only as data is
// read and written.
package lsm
