//go:build !linux

package lsm

// dropPages does nothing where posix_fadvise is not available: the pages stay cached.
func dropPages(fd uintptr, off, length int64) {}
