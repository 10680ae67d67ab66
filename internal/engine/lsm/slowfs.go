package lsm

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// slowWALOp is how long a write-ahead log's fsync, creation or reuse may take before it
// is logged.
const slowWALOp = 250 * time.Millisecond

// walFS is pebble's file system with the write-ahead log's slow fsyncs and creations
// logged (at most one line a second, with how many more were not). They stall writes in
// ways pebble's own events do not report: a commit that fills the memtable closes the
// old log, which fsyncs it, and creates the next one, and every other commit waits for
// both (pebble's DB.rotateWAL); a periodic sync that the disk holds up delays every
// synced commit behind it. Pebble's disk health checks report only operations slower
// than 5 s.
type walFS struct {
	vfs.FS
	log *slog.Logger

	mu       sync.Mutex
	lastLine time.Time
	skipped  int
}

func newWALFS(fs vfs.FS, log *slog.Logger) *walFS { return &walFS{FS: fs, log: log} }

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// timed runs op on file name and logs it if it was slow.
func (f *walFS) timed(op, name string, fn func() error) error {
	start := time.Now()
	err := fn()
	if took := time.Since(start); took >= slowWALOp {
		f.mu.Lock()
		now := time.Now()
		if now.Sub(f.lastLine) < time.Second {
			f.skipped++
			f.mu.Unlock()
			return err
		}
		skipped := f.skipped
		f.lastLine, f.skipped = now, 0
		f.mu.Unlock()
		f.log.Warn("lsm: slow write-ahead log operation", slog.String("op", op), slog.String("file", name),
			slog.Duration("took", took), slog.Int("slow_ops_not_logged", skipped))
	}
	return err
}

func (f *walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if !isWAL(name) {
		return f.FS.Create(name, category)
	}
	var file vfs.File
	err := f.timed("create", name, func() (err error) {
		file, err = f.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &walFile{File: file, fs: f, name: name}, nil
}

func (f *walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if !isWAL(newname) {
		return f.FS.ReuseForWrite(oldname, newname, category)
	}
	var file vfs.File
	err := f.timed("reuse", newname, func() (err error) {
		file, err = f.FS.ReuseForWrite(oldname, newname, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &walFile{File: file, fs: f, name: newname}, nil
}

// walFile times a write-ahead log's syncs and its close.
type walFile struct {
	vfs.File
	fs   *walFS
	name string
}

func (w *walFile) Sync() error { return w.fs.timed("sync", w.name, w.File.Sync) }

func (w *walFile) SyncData() error { return w.fs.timed("sync", w.name, w.File.SyncData) }

func (w *walFile) SyncTo(length int64) (full bool, err error) {
	err = w.fs.timed("sync", w.name, func() (err error) {
		full, err = w.File.SyncTo(length)
		return err
	})
	return full, err
}

func (w *walFile) Close() error { return w.fs.timed("close", w.name, w.File.Close) }
