// Package slowdisk emulates a hard disk's timing, for benchmarks on emulated disks: a file
// served over FUSE (Serve) whose every read and write waits as long as one disk head would
// take to do it, by the model in this file. scripts/emulate-disks.sh puts a loop device and ext4
// on that file when asked for a seek model (KURA_EMU_MODEL=seek), so that kura's engines
// meet a disk whose random reads cost a seek each even at a low rate. The kernel's block
// throttle, which the script uses otherwise, meters a rate in 100 ms slices and adds no
// per-request delay, so that a lone random read there takes 0.05 ms
// (docs/design/emulated-disks.md, "What is not emulated").
//
// The model is deterministic and reads no clock: Disk.Submit takes the request's arrival
// time and returns when it completes.
package slowdisk

import (
	"fmt"
	"time"
)

// Config describes one disk. The defaults are the papers' HDD, as the block throttle's
// limits are (200 random I/Os a second, 140 MB/s read, 76 MB/s written).
type Config struct {
	// Access is what a request that does not follow on from the last one costs before
	// its transfer: a seek and the rotation to the sector. Default 5 ms (200 small random
	// I/Os a second).
	Access time.Duration
	// ReadBytesPerSecond and WriteBytesPerSecond are the media's transfer rates.
	ReadBytesPerSecond, WriteBytesPerSecond float64
	// SequentialGapBytes: a request that starts this many bytes or fewer past where the
	// last one ended costs no access, only the time for the gap to pass under the head
	// (at the read rate). Default 128 KiB.
	SequentialGapBytes int64
}

// Defaults for Config.
const (
	DefaultAccess              = 5 * time.Millisecond
	DefaultReadBytesPerSecond  = 140e6
	DefaultWriteBytesPerSecond = 76e6
	DefaultSequentialGapBytes  = 128 << 10
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Access == 0 {
		c.Access = DefaultAccess
	}
	if c.ReadBytesPerSecond == 0 {
		c.ReadBytesPerSecond = DefaultReadBytesPerSecond
	}
	if c.WriteBytesPerSecond == 0 {
		c.WriteBytesPerSecond = DefaultWriteBytesPerSecond
	}
	if c.SequentialGapBytes == 0 {
		c.SequentialGapBytes = DefaultSequentialGapBytes
	}
	return c
}

// Validate reports a setting no disk has.
func (c Config) Validate() error {
	switch {
	case c.Access < 0:
		return fmt.Errorf("slowdisk: access time %v is negative", c.Access)
	case c.ReadBytesPerSecond <= 0 || c.WriteBytesPerSecond <= 0:
		return fmt.Errorf("slowdisk: transfer rates must be positive (read %g, write %g B/s)", c.ReadBytesPerSecond, c.WriteBytesPerSecond)
	case c.SequentialGapBytes < 0:
		return fmt.Errorf("slowdisk: sequential gap %d is negative", c.SequentialGapBytes)
	}
	return nil
}

// Disk is one head: requests are served one at a time, in the order they arrive, each
// after the one before it has finished (a disk without command queueing, behind the
// kernel's own I/O scheduler, which sorts what it sends). Not safe for concurrent use.
type Disk struct {
	cfg  Config
	free time.Time // when the head has finished every request submitted so far
	pos  int64     // the byte after the last request's end
	st   Stats
}

// Stats counts what a Disk did.
type Stats struct {
	Reads, Writes         int64
	ReadBytes, WriteBytes int64
	Accesses              int64         // requests that paid Access (seeks)
	Busy                  time.Duration // the head's time spent on requests
	Queued                time.Duration // requests' time waiting for the head
}

// New returns an idle Disk with its head at offset 0. cfg must be valid (Validate) once
// defaults are filled.
func New(cfg Config) *Disk {
	return &Disk{cfg: cfg.WithDefaults()}
}

// Submit queues a request of n bytes at offset off arriving at now, and returns when it
// completes.
func (d *Disk) Submit(now time.Time, off, n int64, write bool) time.Time {
	start := now
	if d.free.After(start) {
		d.st.Queued += d.free.Sub(start)
		start = d.free
	}
	rate := d.cfg.ReadBytesPerSecond
	if write {
		rate = d.cfg.WriteBytesPerSecond
		d.st.Writes++
		d.st.WriteBytes += n
	} else {
		d.st.Reads++
		d.st.ReadBytes += n
	}
	cost := seconds(float64(n) / rate)
	if gap := off - d.pos; gap >= 0 && gap <= d.cfg.SequentialGapBytes {
		cost += seconds(float64(gap) / d.cfg.ReadBytesPerSecond)
	} else {
		cost += d.cfg.Access
		d.st.Accesses++
	}
	d.st.Busy += cost
	d.free = start.Add(cost)
	d.pos = off + n
	return d.free
}

// Stats returns the counts so far.
func (d *Disk) Stats() Stats { return d.st }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
