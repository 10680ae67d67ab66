package lowprio

import "golang.org/x/sys/unix"

// lower sets the calling thread's nice value to lowestNice.
func lower() error { return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), lowestNice) }

// nice returns the calling thread's nice value.
func nice() (int, error) {
	// The raw syscall returns 20 - nice (so that it is never negative).
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	return 20 - p, err
}
