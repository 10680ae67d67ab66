package btree

import (
	"math"
	"time"

	"github.com/kuradb/kura/internal/engine"
)

// FileName is the name of the bbolt file inside the data directory.
const FileName = "kura.bolt"

// Defaults for Options. Each is a named limit so that a queue or a transaction can never
// grow without bound.
const (
	// DefaultMaxQueuedRequests bounds the Apply calls waiting for the committer. When the
	// queue is full Apply blocks (back-pressure) rather than buffering without limit.
	DefaultMaxQueuedRequests = 1024
	// DefaultMaxGroupMutations stops a commit group from taking more requests once it holds
	// this many mutations, so one transaction (and its dirty pages in memory) stays small.
	DefaultMaxGroupMutations = 4096
	// DefaultMaxGroupBytes stops a commit group from taking more requests once their keys
	// and cells add up to this many bytes.
	DefaultMaxGroupBytes = 16 << 20
	// DefaultInitialMmapSize is 8 GiB of address space (etcd maps 10 GiB for the same
	// reason): until the file outgrows it, commits never remap, so open iterators never
	// stall writers.
	DefaultInitialMmapSize = int(min(8<<30, math.MaxInt))
	// DefaultRowCacheBytes is the row cache's default capacity: a fraction of what the
	// lsm engine's gets, because the page cache serves the B+tree's reads too, but enough
	// to hold a skewed workload's hottest rows a row at a time (see rowcache.Cache).
	DefaultRowCacheBytes = 64 << 20
	// DefaultLockTimeout is how long Open waits for bbolt's file lock before giving up
	// with ErrLocked. bbolt's own default (0) waits forever.
	DefaultLockTimeout = 100 * time.Millisecond
)

// Options configure the btree engine. The zero value is usable: Open fills defaults.
type Options struct {
	// Options are the settings shared by every engine. Durability Sync (the default)
	// fsyncs every commit; Periodic sets bbolt's NoSync and fsyncs every SyncInterval
	// from a background goroutine (see the package comment for what that risks).
	engine.Options

	// MaxQueuedRequests bounds the Apply calls queued for the committer; default
	// DefaultMaxQueuedRequests.
	MaxQueuedRequests int
	// MaxGroupMutations bounds the mutations one commit group takes from the queue;
	// default DefaultMaxGroupMutations. A single larger batch still commits alone.
	MaxGroupMutations int
	// MaxGroupBytes bounds the key and cell bytes one commit group takes from the queue;
	// default DefaultMaxGroupBytes. A single larger batch still commits alone.
	MaxGroupBytes int
	// RowCacheBytes is the capacity of the cache of rows read recently, in front of the
	// file (see rowcache.Cache); default DefaultRowCacheBytes, negative disables it. It
	// fills only as rows are read. The OS caches the file a page at a time, and a page
	// holds a hot row with its cold neighbours, so with data larger than memory the same
	// memory holds up to three times more hot rows as a row cache.
	RowCacheBytes int64
	// WriteBufferBytes, when positive, turns on the write buffer (see buffer.go): Apply
	// journals its batch and keeps it in memory, and a background flush merges up to this
	// many bytes of buffered rows into the tree at a time, in key order. Default 0: off,
	// each commit writes the tree.
	WriteBufferBytes int64
	// WriteBufferFlushInterval is the longest the write buffer takes writes before it is
	// flushed however little it holds; default DefaultWriteBufferFlushInterval.
	WriteBufferFlushInterval time.Duration
	// LockTimeout is how long Open waits for another process to release the file;
	// default DefaultLockTimeout.
	LockTimeout time.Duration

	// NoFreelistSync skips writing bbolt's freelist at every commit. Default false: the
	// freelist is written. Skipping it makes commits of a fragmented file cheaper, but
	// then every Open rebuilds the freelist by walking every page of the file (slow for a
	// large file) and does so in a goroutine of bbolt's own, where a corrupted page panics
	// the whole process instead of returning ErrCorrupt. We prefer a clean error.
	NoFreelistSync bool
	// InitialMmapSize is the size of bbolt's memory map in bytes; default
	// DefaultInitialMmapSize. A commit that grows the file past the map must remap it, and a
	// remap waits for every open read transaction, that is every open iterator (see
	// NewIterator). Mapping far more than the file (virtual address space only: the file
	// still grows as data is written) means that practically never happens.
	InitialMmapSize int

	// beforeCommit, set only by this package's tests, runs in the committer before each
	// group commits; it lets a test hold the committer while requests queue up.
	beforeCommit func(group []*request)
	// duringSync, set only by this package's tests, runs while a sync holds off commits.
	duringSync func()
	// beforeFlush, set only by this package's tests, runs in the flusher before each
	// flush of the write buffer; an error fails the flush.
	beforeFlush func() error
	// afterDeleteChunk, set only by this package's tests, runs after each chunk of
	// DeleteRange has committed, between chunks.
	afterDeleteChunk func()
}

func (o Options) withDefaults() Options {
	o.Options = o.Options.WithDefaults()
	if o.MaxQueuedRequests <= 0 {
		o.MaxQueuedRequests = DefaultMaxQueuedRequests
	}
	if o.MaxGroupMutations <= 0 {
		o.MaxGroupMutations = DefaultMaxGroupMutations
	}
	if o.MaxGroupBytes <= 0 {
		o.MaxGroupBytes = DefaultMaxGroupBytes
	}
	if o.InitialMmapSize <= 0 {
		o.InitialMmapSize = DefaultInitialMmapSize
	}
	if o.RowCacheBytes == 0 {
		o.RowCacheBytes = DefaultRowCacheBytes
	}
	if o.WriteBufferFlushInterval <= 0 {
		o.WriteBufferFlushInterval = DefaultWriteBufferFlushInterval
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	return o
}
