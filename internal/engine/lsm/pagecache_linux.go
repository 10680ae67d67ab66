//go:build linux

package lsm

import (
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = int64(os.Getpagesize())

// dropPages advises the kernel that the clean pages under [off, off+length) of the file
// (the rest of the file when length is 0) are not needed: they leave the page cache. The
// range is widened to whole pages: the kernel drops only the pages a range covers
// entirely, and a block read from an sstable seldom starts or ends on a page boundary.
func dropPages(fd uintptr, off, length int64) {
	if length > 0 {
		end := off + length
		off -= off % pageSize
		length = end - off
		length += (pageSize - length%pageSize) % pageSize
	}
	_ = unix.Fadvise(int(fd), off, length, unix.FADV_DONTNEED)
}
