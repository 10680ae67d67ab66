// Package space keeps a store from filling its disk.
//
// Pebble treats a failed write to its log or its manifest as fatal: on a full disk the
// process panics (we measured it: an lsm node on a 40 MB tmpfs died at the write that
// found no room). A store must therefore stop taking writes while its device still has
// room for what it has already taken: the memtable flushes and compactions that follow,
// which need room for their output before they free their input. A Guard tells it when:
// Admit fails with engine.ErrNoSpace once an estimate of the device's free space, less
// what the write will add, falls under a reserve. Reads go on, and writes are admitted
// again as soon as compactions, or an operator, free space. CockroachDB keeps an
// emergency ballast for the same reason; Cassandra 4 has min_free_space_per_drive.
//
// The estimate is the device's available bytes at the last statfs less the bytes admitted
// since. A Guard calls statfs again once a sixteenth of the reserve has been admitted
// since the last call, once RefreshInterval has passed (compactions and other processes
// change the free space too), and, while it refuses writes, at most every
// RefreshInterval/10, so that freed space is noticed quickly. What a write adds on disk
// is more than its bytes (the log, then the flushed table, then compactions): that is
// what the reserve is for.
package space

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kuradb/kura/internal/engine"
)

// Defaults of Options.
const (
	// DefaultReserveBytes is the free space kept on a store's device: room for a few
	// memtable flushes and a compaction's output.
	DefaultReserveBytes = 256 << 20
	// MaxReserveFraction caps the reserve at this share of the device's size, so that a
	// small device (a test's tmpfs, a 1 GB SSD) is not refused writes from the start.
	MaxReserveFraction = 0.1
	// DefaultRefreshInterval is how old a free-space figure may get.
	DefaultRefreshInterval = time.Second
)

// Usage is a device's size and the bytes available to unprivileged writers.
type Usage struct {
	AvailBytes, TotalBytes uint64
}

// StatFunc reports the usage of the device holding dir.
type StatFunc func(dir string) (Usage, error)

// Statfs is the real StatFunc: statfs(2).
func Statfs(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("space: statfs %s: %w", dir, err)
	}
	return Usage{AvailBytes: st.Bavail * uint64(st.Bsize), TotalBytes: st.Blocks * uint64(st.Bsize)}, nil
}

// Options configure a Guard.
type Options struct {
	// ReserveBytes is the free space to keep; 0 means DefaultReserveBytes, negative
	// disables the guard (Admit always succeeds). It is capped at MaxReserveFraction of
	// the device.
	ReserveBytes int64
	// Stat defaults to Statfs.
	Stat StatFunc
	// Now defaults to time.Now.
	Now func() time.Time
	// RefreshInterval defaults to DefaultRefreshInterval.
	RefreshInterval time.Duration
}

// Guard admits writes to one device while its free space stays above a reserve. Safe for
// concurrent use; a nil *Guard admits everything.
type Guard struct {
	dir  string
	opts Options

	mu       sync.Mutex
	reserve  int64 // after the cap; 0 until the first statfs
	avail    int64 // at the last statfs
	admitted int64 // bytes admitted since it
	statAt   time.Time
	low      bool // the last call found too little room
	statErr  error

	refused atomic.Int64
}

// New returns a Guard for the device holding dir. It calls statfs at once; while statfs
// fails (dir missing, a file system that cannot tell) the Guard admits every write, since
// it cannot tell, and Stats reports the error.
func New(dir string, opts Options) *Guard {
	if opts.ReserveBytes == 0 {
		opts.ReserveBytes = DefaultReserveBytes
	}
	if opts.Stat == nil {
		opts.Stat = Statfs
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	g := &Guard{dir: dir, opts: opts}
	if opts.ReserveBytes > 0 {
		g.mu.Lock()
		_ = g.refreshLocked()
		g.mu.Unlock()
	}
	return g
}

// refreshLocked calls statfs and restarts the estimate from its figure.
func (g *Guard) refreshLocked() error {
	u, err := g.opts.Stat(g.dir)
	g.statAt = g.opts.Now()
	g.statErr = err
	if err != nil {
		return err
	}
	g.reserve = min(g.opts.ReserveBytes, int64(float64(u.TotalBytes)*MaxReserveFraction))
	g.avail = int64(min(u.AvailBytes, 1<<62))
	g.admitted = 0
	return nil
}

// Admit accounts for a write of about n bytes, or refuses it with an error wrapping
// engine.ErrNoSpace if it would leave less than the reserve free. It does not block
// beyond one statfs.
func (g *Guard) Admit(n int64) error { return g.admit(n, 1) }

// AdmitFreeing is Admit for a write that frees space once compacted (deletes): it may
// use half of the reserve, so that a store refusing writes can still remove data.
func (g *Guard) AdmitFreeing(n int64) error { return g.admit(n, 2) }

// admit admits n bytes if they leave the reserve divided by share free.
func (g *Guard) admit(n, share int64) error {
	if g == nil || g.opts.ReserveBytes < 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shortLocked(n, share) {
		g.refused.Add(1)
		return fmt.Errorf("%w: %s has %d bytes free, and the store keeps %d free (the reserve) so that its flushes and compactions can finish",
			engine.ErrNoSpace, g.dir, max(g.avail-g.admitted, 0), g.reserve)
	}
	g.admitted += n
	return nil
}

// Low reports whether a write of n bytes would be refused now, calling statfs under the
// same rules as Admit (so that, while low, freed space shows within RefreshInterval/10),
// without admitting or counting anything.
func (g *Guard) Low(n int64) bool {
	if g == nil || g.opts.ReserveBytes < 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shortLocked(n, 1)
}

// shortLocked calls statfs if the estimate is too old for a write of n bytes, and reports
// whether the write would leave less than the reserve divided by share free; false when
// statfs fails (it cannot tell: better a write than a refusal on a guess). It records the
// answer in low, which makes the next calls look again sooner.
func (g *Guard) shortLocked(n, share int64) bool {
	since := g.opts.Now().Sub(g.statAt)
	if since >= g.opts.RefreshInterval || (g.low && since >= g.opts.RefreshInterval/10) ||
		g.admitted+n > max(g.reserve/16, 1<<20) {
		_ = g.refreshLocked()
	}
	g.low = g.statErr == nil && g.avail-g.admitted-n < g.reserve/share
	return g.low
}

// Stats describe a Guard.
type Stats struct {
	// AvailBytes is the estimate of the device's free space; ReserveBytes the reserve
	// after the cap (0 when disabled).
	AvailBytes, ReserveBytes int64
	// Low reports that the last write or Low call found too little room.
	Low bool
	// Refused counts the writes refused since New.
	Refused int64
	// Err is the last statfs error, if the last call failed.
	Err error
}

// Engine returns the figures as engine.Stats reports them.
func (s Stats) Engine() engine.Stats {
	return engine.Stats{DiskAvailBytes: s.AvailBytes, DiskReserveBytes: s.ReserveBytes, NoSpaceRefusals: s.Refused}
}

// Stats returns the guard's current figures without calling statfs.
func (g *Guard) Stats() Stats {
	if g == nil || g.opts.ReserveBytes < 0 {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{AvailBytes: g.avail - g.admitted, ReserveBytes: g.reserve, Low: g.low,
		Refused: g.refused.Load(), Err: g.statErr}
}
