package lsm

import (
	"github.com/cockroachdb/pebble/v2/vfs"
)

// uncachedFS is pebble's file system with the store's file pages dropped from the
// operating system's page cache as soon as they are no longer needed there: the pages a
// read brought in once it has copied them out, and a file's written pages once they are
// synced (posix_fadvise POSIX_FADV_DONTNEED; see Options.DropPageCache for why a store
// would want that). Pebble's own block cache is not affected: it holds decoded blocks in
// the process, sized by Options.CacheSizeBytes.
//
// Dropping is advice, not a guarantee: the kernel keeps pages that are dirty or mapped,
// and on file systems whose pages are the storage (tmpfs) it drops nothing. Errors of the
// advice are ignored: a page left cached costs memory, never correctness.
type uncachedFS struct{ vfs.FS }

func newUncachedFS(fs vfs.FS) uncachedFS { return uncachedFS{FS: fs} }

func (f uncachedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return wrapUncached(f.FS.Create(name, category))
}

func (f uncachedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapUncached(f.FS.Open(name, opts...))
}

func (f uncachedFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapUncached(f.FS.OpenReadWrite(name, category, opts...))
}

func (f uncachedFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return wrapUncached(f.FS.ReuseForWrite(oldname, newname, category))
}

func wrapUncached(file vfs.File, err error) (vfs.File, error) {
	if err != nil || file.Fd() == vfs.InvalidFd {
		return file, err // nothing to advise (pebble's in-memory file system, for one)
	}
	return &uncachedFile{File: file}, nil
}

// uncachedFile drops the pages of each read and, after each sync, the whole file's
// (clean pages only: what a sync has written). Only os-backed files are wrapped.
type uncachedFile struct{ vfs.File }

func (u *uncachedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := u.File.ReadAt(p, off)
	if n > 0 {
		dropPages(u.File.Fd(), off, int64(n))
	}
	return n, err
}

func (u *uncachedFile) Read(p []byte) (int, error) {
	// Sequential reads (the write-ahead log at recovery, the manifest) are rare; the
	// whole file's clean pages go, as after a sync.
	n, err := u.File.Read(p)
	if n > 0 {
		dropPages(u.File.Fd(), 0, 0)
	}
	return n, err
}

func (u *uncachedFile) Sync() error { return u.dropAfter(u.File.Sync()) }

func (u *uncachedFile) SyncData() error { return u.dropAfter(u.File.SyncData()) }

func (u *uncachedFile) SyncTo(length int64) (bool, error) {
	full, err := u.File.SyncTo(length)
	if err == nil {
		// A partial SyncTo only queues the writeback (sync_file_range without waiting):
		// the pages still under writeback stay, and a later sync drops them.
		dropPages(u.File.Fd(), 0, length)
	}
	return full, err
}

func (u *uncachedFile) dropAfter(err error) error {
	if err == nil {
		dropPages(u.File.Fd(), 0, 0)
	}
	return err
}
