package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DirLock is an exclusive advisory lock on a directory, held through a LOCK file inside it.
// It keeps two processes from opening one data directory: the second gets ErrLocked.
type DirLock struct{ f *os.File }

// LockDir creates dir if needed and takes its lock without blocking. The lock is released
// by Unlock or when the process exits, even by SIGKILL.
func LockDir(dir, name string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create data directory: %w", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("engine: lock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock. It is safe to call on a nil lock and more than once.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor drops the flock
	l.f = nil
	return err
}
