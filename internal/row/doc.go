// Package row is kura's data model: a row of named columns whose cells carry write
// timestamps, tombstones and TTLs, the last-write-wins merge that lets every replica converge
// on the same row whatever order it saw the writes in, and the row's binary encoding.
//
// The package is pure: it never reads the clock (callers pass "now" in microseconds), starts
// no goroutine and does no I/O, so engines, the coordinator and the simulator can share it.
//
// # Merge rules
//
// A row holds at most one cell per column and an optional row tombstone (Row.Deleted). Merging
// two versions of a row:
//
//   - keeps the larger row tombstone;
//   - per column keeps the winning cell under Compare: larger timestamp wins; on equal
//     timestamps a tombstone beats a live cell, then the larger value (bytewise), then the
//     later expiry (no expiry counts as latest);
//   - drops every cell whose timestamp is at or below the row tombstone (a row delete at T
//     shadows writes at T, as Cassandra's does).
//
// Merge is commutative, associative and idempotent (the tests check all three), which is
// what lets an LSM merge operands in any grouping and lets replicas apply writes in any order.
//
// # Expiry and purging
//
// A cell with ExpiresAt != 0 reads as absent from ExpiresAt on, but it stays in the merge
// as a tombstone would: it still shadows older versions of the column held elsewhere. Only
// Purge, run when data is rewritten and only when the rewrite sees every older version of
// the row, drops tombstones and expired cells older than the grace period.
package row
