package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/remote"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// SecondDirPolicy says which sstables go to Options.SecondDir. Both policies place whole
// files, the conventional ways to use two devices that tiered storage (package tiered)
// is measured against (docs/design/tiered.md).
type SecondDirPolicy string

// The policies.
const (
	// FreeSpace creates each new sstable in the data directory or the second directory
	// with probability proportional to the free space of each one's device: the rule
	// Cassandra applies over its data_file_directories (seed 001, section 2.4).
	FreeSpace SecondDirPolicy = "free-space"
	// LowerLevels puts the sstables of pebble's two lowest levels (L5 and L6) in the
	// second directory and keeps the rest, and the log, in the data directory: pebble's
	// own placement for a second, slower store (its shared storage, on a local directory).
	LowerLevels SecondDirPolicy = "lower-levels"
)

// secondDirLocator names the second directory among pebble's remote storages.
const secondDirLocator remote.Locator = "kura-second-dir"

// ParseSecondDirPolicy parses a policy name.
func ParseSecondDirPolicy(s string) (SecondDirPolicy, error) {
	switch p := SecondDirPolicy(s); p {
	case FreeSpace, LowerLevels:
		return p, nil
	}
	return "", fmt.Errorf("lsm: second directory policy %q (want %s or %s)", s, FreeSpace, LowerLevels)
}

// applySecondDir sets pebble's options for the second directory, if any.
func (db *DB) applySecondDir(o *pebble.Options) error {
	switch db.opts.SecondDirPolicy {
	case "":
		return nil
	case FreeSpace:
		o.FS = newSpreadFS(vfs.Default, db.opts.SecondDir)
	case LowerLevels:
		o.Experimental.RemoteStorage = remote.MakeSimpleFactory(map[remote.Locator]remote.Storage{
			secondDirLocator: remote.NewLocalFS(db.opts.SecondDir, vfs.Default)})
		o.Experimental.CreateOnShared = remote.CreateOnSharedLower
		o.Experimental.CreateOnSharedLocator = secondDirLocator
	default:
		return fmt.Errorf("lsm: second directory policy %q", db.opts.SecondDirPolicy)
	}
	return nil
}

// spreadFS is pebble's file system with new sstables spread over two directories in
// proportion to their devices' free space (FreeSpace). A table placed in the second
// directory is created there and linked into pebble's directory by a symbolic link, so
// pebble finds every table where it expects it; removing the link removes the table.
type spreadFS struct {
	vfs.FS
	second string

	mu  sync.Mutex
	rng *rand.Rand
}

func newSpreadFS(fs vfs.FS, second string) *spreadFS {
	return &spreadFS{FS: fs, second: second, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// Create places a new sstable by free space; other files stay where pebble asks.
func (f *spreadFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if !strings.HasSuffix(name, ".sst") || !f.pickSecond(filepath.Dir(name)) {
		return f.FS.Create(name, category)
	}
	target := filepath.Join(f.second, filepath.Base(name))
	file, err := f.FS.Create(target, category)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(name) // a link left by a crash before pebble knew the table
	if err := os.Symlink(target, name); err != nil {
		_ = file.Close()
		_ = os.Remove(target)
		return nil, err
	}
	return file, nil
}

// pickSecond draws the directory of a new table: the second with probability
// free(second) / (free(dir) + free(second)).
func (f *spreadFS) pickSecond(dir string) bool {
	a, errA := f.FS.GetDiskUsage(dir)
	b, errB := f.FS.GetDiskUsage(f.second)
	if errA != nil || errB != nil || a.AvailBytes+b.AvailBytes == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Uint64N(a.AvailBytes+b.AvailBytes) < b.AvailBytes
}

// Remove removes a table in the second directory along with its link.
func (f *spreadFS) Remove(name string) error {
	if target, err := os.Readlink(name); err == nil {
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return f.FS.Remove(name)
}

// Compact compacts every key into the bottom level and waits: for tests and tools that
// want the store in its settled form.
func (db *DB) Compact() error {
	if err := db.enter("compact"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return wrapErr("compact", db.pdb.Compact(context.Background(), []byte{0}, bytes.Repeat([]byte{0xff}, 1024), true))
}
