// Package engine defines the storage-engine contract that lets one kura node run any engine:
// the paper's Storage Engine Interface (connect, put, get) widened to what a real store
// needs: batched blind writes, merged reads, ordered snapshot scans, flush, stats and the
// engine's role in a heterogeneous cluster.
//
// Implementations live in sub-packages (lsm, btree, memory) and all pass the shared suite in
// enginetest. The contract, for every method of Engine:
//
//   - Concurrency: every method is safe for concurrent use by many goroutines. Close waits
//     for calls in flight; calls after Close return ErrClosed.
//   - Memory: the engine copies whatever it keeps of its arguments, so callers may reuse
//     their buffers once a call returns. Rows returned by Get belong to the caller. Keys and
//     rows returned by an Iterator are valid only until the next call to Next or Close.
//   - Durability: when Apply returns nil in Durability Sync, the batch survives a process
//     crash or power loss (it is fsynced; concurrent Apply calls share one fsync). In
//     Durability Periodic it survives a process crash once the next periodic sync has run
//     (at most Interval later); a crash may lose that interval's writes. The memory engine
//     is never durable (see its package).
//   - Time: engines read "now" from the injected Clock, both to hide expired cells and to
//     purge old tombstones when they rewrite data.
package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/kuradb/kura/internal/ring"

	"github.com/kuradb/kura/internal/row"
)

// Errors shared by all engines. Engines wrap them with %w and details.
var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("engine: closed")
	// ErrCorrupt means stored data failed a checksum or could not be decoded: the engine
	// returns this rather than wrong data.
	ErrCorrupt = errors.New("engine: corrupt data")
	// ErrLocked means another process holds the data directory.
	ErrLocked = errors.New("engine: data directory locked by another process")
	// ErrInvalid means the caller passed an invalid key, row or range.
	ErrInvalid = errors.New("engine: invalid argument")
	// ErrNoSpace means the store refused a write because its disk is (nearly) full; it
	// applied nothing, and reads go on. See package space.
	ErrNoSpace = errors.New("engine: not enough free disk space")
)

// Engine stores rows by key. See the package comment for the concurrency, memory and
// durability contract every method keeps.
type Engine interface {
	// Name is the engine's short name: "lsm", "btree" or "memory".
	Name() string
	// Role is the engine's role in a heterogeneous cluster.
	Role() ring.Role

	// Apply merges each mutation into the row stored under its key (see row.Merge) without
	// the caller reading first. The batch is atomic: after a crash either all of it or none
	// of it is visible. Mutations must be valid (row.Mutation.Validate); Apply returns
	// ErrInvalid for one that is not, and applies nothing. Several mutations of one key in
	// one batch merge as if applied in order (the merge is order-independent anyway).
	Apply(batch []row.Mutation) error

	// Get returns the merged row stored under key, and whether anything is stored. Expired
	// cells come back as tombstones (see ReadView). A row that holds only tombstones is
	// returned with found == true, so that replicas can compare and repair deletes; callers
	// that want what a client sees use row.Row.Visible.
	Get(key []byte) (r row.Row, found bool, err error)

	// NewIterator returns an iterator over the rows with lo <= key < hi, in key order, as
	// of one consistent snapshot taken when NewIterator returns: later writes are not seen.
	// A nil lo means from the first key and a nil hi means to the last. Rows are returned
	// as Get would return them. The caller must Close the iterator; engines may hold
	// resources (a read transaction, a snapshot) until then.
	NewIterator(lo, hi []byte) (Iterator, error)

	// Flush makes everything applied so far durable and moves in-memory write buffers to
	// their on-disk form (a memtable flush, a snapshot); it blocks until done.
	Flush() error

	// Stats returns current sizes. It does not block on I/O and figures may be estimates.
	Stats() Stats

	// Close flushes what the engine's durability mode promises and releases its resources.
	// It waits for calls in flight and is safe to call more than once.
	Close() error
}

// Iterator walks rows in key order. It is not safe for concurrent use.
type Iterator interface {
	// Next advances to the next row and reports whether there is one. It returns false at
	// the end and on error; check Err.
	Next() bool
	// Key is the current row's key, valid until the next Next or Close.
	Key() []byte
	// Row is the current row, valid until the next Next or Close.
	Row() row.Row
	// Err is the first error met, if any.
	Err() error
	// Close releases the iterator's snapshot. It is safe to call more than once.
	Close() error
}

// Viewer is an optional Engine capability: lending a row's encoding instead of copying
// and decoding the row, for callers that only hash it (a replica computing a read's
// digest).
type Viewer interface {
	// View calls fn with row.AppendEncode of what Get would return for key (nil when Get
	// would find nothing). The bytes may be the engine's own: fn must not modify them, nor
	// keep them after returning.
	View(key []byte, fn func(enc []byte, found bool)) error
}

// Tierable is the optional Engine capability a tiered engine (package tiered) needs from
// each of its tiers to move rows between them: rows read and iterated as stored, physical
// removal, and an explicit sync.
type Tierable interface {
	Engine
	// GetStored is Get without the read-time view: the row as stored, merged, with its
	// tombstones and expired cells as they are, however old. A row moved with it keeps
	// exactly what it had.
	GetStored(key []byte) (r row.Row, found bool, err error)
	// NewStoredIterator is NewIterator returning rows as GetStored does.
	NewStoredIterator(lo, hi []byte) (Iterator, error)
	// Remove deletes everything stored under keys, leaving no tombstone behind: the keys
	// read as never written. It is atomic like Apply, and durable once the engine next
	// syncs (Sync, its periodic sync, Close), whatever the durability mode: until then a
	// crash may bring the keys back as they were. The tiered engine, its one user, removes
	// rows it has copied, synced, to the other tier, and finds a row in both tiers after a
	// crash (tiered.DB.reconcile); waiting for a sync of the slow device's log on every
	// move cost a promotion of a few rows 100 ms or more.
	Remove(keys [][]byte) error
	// Sync makes every Apply that has returned durable, whatever the durability mode.
	Sync() error
}

// RangeDeleter is the optional Engine capability of deleting a range of keys physically:
// what a node runs to drop the rows of the token ranges it no longer replicates once a
// membership change has moved them away (Cassandra's nodetool cleanup). lsm, btree,
// memory and tiered have it; an engine that wraps another forwards it when the wrapped
// engine has it.
type RangeDeleter interface {
	// DeleteRange deletes every row with lo <= key < hi (a nil lo: from the first key; a
	// nil hi: to the last) physically: not with tombstones. The rows read as never
	// written (Get does not find them, iterators opened after it returns skip them), and
	// the space they took is reclaimed in time: each engine says when (an LSM's by its
	// compactions). Since nothing is left to shadow other replicas' copies, read repair
	// would bring the rows back from a replica that still holds them: delete so only rows
	// the node no longer replicates. lo and hi are the caller's again once it returns.
	//
	// Durability is Apply's: when it returns nil in Durability Sync the deletion survives
	// a crash; in Periodic, once the next periodic sync has run (the memory engine, never
	// durable, at its next snapshot). An error, or a crash before it returns, may leave
	// part of the range deleted: calling it again completes it. It returns an error
	// wrapping ErrInvalid for lo > hi and ErrClosed after Close.
	//
	// It blocks until done, which takes time in proportion to the rows deleted on engines
	// that delete row by row (btree, memory), and is safe to call concurrently with every
	// other method. Rows written inside the range while it runs may or may not survive:
	// each row ends as if deleted at one instant between the call and the return, the
	// writes to it applied before that instant gone and those after it kept; rows written
	// after it returns stay. The instant may differ from row to row, so a Get or an
	// iterator opened while it runs may see part of the range deleted (lsm deletes all of
	// it at once). An iterator opened before it keeps seeing its snapshot, deleted rows
	// included, until it is closed.
	DeleteRange(lo, hi []byte) error
}

// TimestampBounded is the optional Engine capability of bounding the timestamps it holds:
// no cell timestamp or row tombstone stored, durable or not, exceeds TimestampCeiling, and
// the bound survives a crash. math.MaxInt64 means the engine cannot tell. The tiered
// engine uses it to know, without reading a row, that a write replacing the whole row
// shadows everything its slow tier holds of it. lsm has it.
type TimestampBounded interface {
	TimestampCeiling() int64
}

// DiskWatcher is the optional Engine capability of telling whether the engine's disk is
// nearly full (see ErrNoSpace): the tiered engine promotes no rows to a fast tier that
// is. lsm and btree have it.
type DiskWatcher interface {
	// DiskLow reports whether the engine would refuse a write of n bytes for lack of disk
	// space now. It may call statfs, and does not block otherwise.
	DiskLow(n int64) bool
}

// Reporter is the optional Engine capability of describing the store's internals in
// text for an operator (`kura admin store`, the admin address's /debug/store): lsm prints
// pebble's metrics (each level's size, bytes in and read, write amplification, and its
// compactions by kind), tiered each tier's. It does no I/O.
type Reporter interface {
	Report() string
}

// Stats are an engine's current sizes.
type Stats struct {
	// DiskBytes is the space the engine's files take on disk.
	DiskBytes int64
	// MemoryBytes is the memory the engine holds for data (memtables, caches, the tree).
	MemoryBytes int64
	// RowsEstimate is an estimate of the number of stored rows, tombstoned rows included.
	RowsEstimate int64
	// Exact reports whether RowsEstimate is exact.
	Exact bool
	// RowCacheHits and RowCacheMisses count the reads a row cache in front of the engine's
	// store answered and did not; zero for engines without one.
	RowCacheHits, RowCacheMisses int64
	// BlockCacheHits and BlockCacheMisses count the lookups of the store's own block cache
	// (lsm: pebble's); a miss reads the file, from the page cache or the device.
	BlockCacheHits, BlockCacheMisses int64
	// CompactionReadBytes is what the store's compactions have read from its files.
	CompactionReadBytes int64
	// CompactionDebtBytes estimates what the store's compactions must still rewrite to
	// bring every level within its target size (lsm: pebble's estimate), and ReadAmp is
	// how many files or levels a point read may have to look into (lsm: L0's sublevels
	// plus the other non-empty levels). A store that has just taken a bulk load is behind
	// on both, and its reads cost more until compactions catch up.
	CompactionDebtBytes, ReadAmp int64
	// WriteStallNanos is how long writes have waited for the engine's flushes to free
	// memory (btree with its write buffer); Flushes counts those flushes.
	WriteStallNanos, Flushes int64
	// DiskAvailBytes estimates the free space of the device the engine writes to (the
	// fullest, when it writes to several) and DiskReserveBytes is what the engine keeps
	// free there (Options.DiskReserveBytes); both zero when it does not watch its disk.
	// NoSpaceRefusals counts the writes it refused with ErrNoSpace.
	DiskAvailBytes, DiskReserveBytes, NoSpaceRefusals int64
}

// AddDisk folds the disk figures of another store of the same engine into s: the
// fullest device's free space and reserve, refusals summed.
func (s *Stats) AddDisk(o Stats) {
	if o.DiskReserveBytes > 0 && (s.DiskReserveBytes == 0 || o.DiskAvailBytes-o.DiskReserveBytes < s.DiskAvailBytes-s.DiskReserveBytes) {
		s.DiskAvailBytes, s.DiskReserveBytes = o.DiskAvailBytes, o.DiskReserveBytes
	}
	s.NoSpaceRefusals += o.NoSpaceRefusals
}

// Durability says when an applied write is safe from a crash.
type Durability uint8

const (
	// Sync acknowledges a write once it is fsynced; concurrent writers share one fsync
	// (group commit). The default.
	Sync Durability = iota
	// Periodic acknowledges a write once it is in the log or the OS's page cache and
	// fsyncs every Interval: a crash of the machine may lose up to Interval of
	// acknowledged writes, exactly like Cassandra's periodic commit log.
	Periodic
)

// String returns the mode's name as used in configs.
func (d Durability) String() string {
	if d == Periodic {
		return "periodic"
	}
	return "sync"
}

// ParseDurability parses "sync" or "periodic".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "sync", "":
		return Sync, nil
	case "periodic":
		return Periodic, nil
	}
	return 0, fmt.Errorf("%w: durability %q (want sync or periodic)", ErrInvalid, s)
}

// Clock returns the current time in microseconds. Engines take one so that tests can
// control expiry and purging; WallClock is the real one.
type Clock func() int64

// WallClock reads the system clock.
func WallClock() int64 { return time.Now().UnixMicro() }

// DefaultGracePeriod is how long tombstones and expired cells are kept before a rewrite may
// drop them (Cassandra's gc_grace_seconds default).
const DefaultGracePeriod = 10 * 24 * time.Hour

// Options are shared by every engine; each engine has its own Options embedding these.
type Options struct {
	// Clock gives "now"; defaults to WallClock.
	Clock Clock
	// GracePeriod is how long tombstones are kept; defaults to DefaultGracePeriod.
	GracePeriod time.Duration
	// Durability is Sync (default) or Periodic.
	Durability Durability
	// SyncInterval is the fsync period in Periodic mode; defaults to 1s (Cassandra's
	// commitlog_sync_period is 10s; we choose a smaller window).
	SyncInterval time.Duration
	// PurgeHorizon, when set, bounds purging further: tombstones and expired cells of a
	// key are dropped (by rewrites, and hidden by reads) only when older than both now -
	// GracePeriod and PurgeHorizon(key), the time before which every replica of the
	// key's range is known to hold every delete (its last complete repair; see
	// internal/node/purge.go). Nil: the grace period alone, Cassandra's gc_grace rule. It
	// must be safe for concurrent use and cheap: engines call it for every row they
	// might purge, in rewrites and reads.
	PurgeHorizon func(key []byte) int64
	// DiskReserveBytes is the free space a disk-backed engine keeps on the devices it
	// writes to: a write that would leave less fails with ErrNoSpace and applies nothing,
	// so that a full disk costs writes, not the process or acknowledged data (see package
	// space). 0 means 256 MiB, capped at a tenth of the device; negative disables.
	DiskReserveBytes int64
}

// WithDefaults returns o with zero fields replaced by their defaults.
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = WallClock
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = time.Second
	}
	return o
}

// Horizon returns the timestamp below which key's tombstones and expired cells may be
// purged at now: now - GracePeriod, or PurgeHorizon(key) when that is earlier. Engines
// pass it to row.Purge as its now, with a grace of 0.
func (o *Options) Horizon(key []byte, now int64) int64 {
	h := now - o.GracePeriod.Microseconds()
	if o.PurgeHorizon != nil {
		h = min(h, o.PurgeHorizon(key))
	}
	return h
}

// ValidateBatch checks every mutation of a batch; engines call it before applying anything.
func ValidateBatch(batch []row.Mutation) error {
	for i := range batch {
		if err := batch[i].Validate(); err != nil {
			return fmt.Errorf("%w: mutation %d: %w", ErrInvalid, i, err)
		}
	}
	return nil
}

// ValidateRange checks an iterator's bounds.
func ValidateRange(lo, hi []byte) error {
	if lo != nil && hi != nil && string(lo) > string(hi) {
		return fmt.Errorf("%w: range lo %q > hi %q", ErrInvalid, lo, hi)
	}
	return nil
}

// ReadView returns what Get must return for a stored row at now: expired cells turn into
// tombstones with the same timestamp. They read as absent (row.Row.Visible skips them), yet a
// replica that compares rows still sees them and does not "repair" an older live value back
// from another replica. The result shares memory with r except for the Cells array.
func ReadView(r row.Row, now int64) row.Row {
	expired := false
	for i := range r.Cells {
		if e := r.Cells[i].ExpiresAt; e != 0 && now >= e {
			expired = true
			break
		}
	}
	if !expired {
		return r
	}
	cells := make([]row.Cell, len(r.Cells))
	for i, c := range r.Cells {
		if c.ExpiresAt != 0 && now >= c.ExpiresAt {
			c = row.Cell{Name: c.Name, Timestamp: c.Timestamp, Tombstone: true}
		}
		cells[i] = c
	}
	r.Cells = cells
	return r
}

// Scanner is an Engine with Scan, a callback form of NewIterator: what package repair
// reads a replica's rows with (repair.Store).
type Scanner struct{ Engine }

// Scan calls fn for every row with lo <= key < hi, in key order, from one iterator (one
// snapshot); fn must not keep key or r past its return. It stops at fn's first error and
// returns it.
func (s Scanner) Scan(lo, hi []byte, fn func(key []byte, r row.Row) error) error {
	it, err := s.NewIterator(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		if err := fn(it.Key(), it.Row()); err != nil {
			return err
		}
	}
	return it.Err()
}
