package lsm

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// A store with a WAL failover directory opens with pebble's failover configured there,
// keeps every synced write across a reopen, and holds the directory against a second
// store, as it holds its data directory.
func TestWALFailoverDirIsUsedAndLocked(t *testing.T) {
	dir, failover := t.TempDir(), filepath.Join(t.TempDir(), "failover")
	clk := newTestClock()
	db := openTest(t, dir, clk, func(o *Options) { o.WALFailoverDir = failover })
	if po := db.pebbleOptions(nil); po.WALFailover == nil || po.WALFailover.Secondary.Dirname != failover {
		t.Fatalf("pebble's WAL failover is %+v, want its secondary in %s", po.WALFailover, failover)
	}
	for i := range 100 {
		mustApply(t, db, row.Mutation{Key: []byte(fmt.Sprintf("k%03d", i)), Row: row.Row{Cells: []row.Cell{live("v", "x", 1)}}})
	}
	other := t.TempDir()
	if _, err := Open(other, Options{WALFailoverDir: failover}); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("a second store on the same failover directory: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk, func(o *Options) { o.WALFailoverDir = failover })
	for i := range 100 {
		if _, found, err := db.Get([]byte(fmt.Sprintf("k%03d", i))); err != nil || !found {
			t.Fatalf("after a reopen k%03d: found %v, %v", i, found, err)
		}
	}
}

// hangingFS is the operating system's file system with the syncs of every file created
// in dir held while the gate is closed: a log disk that something else keeps busy, at
// its worst.
type hangingFS struct {
	vfs.FS
	dir  string
	mu   sync.Mutex
	gate chan struct{} // nil: open
}

// hold closes the gate; the returned function opens it again.
func (f *hangingFS) hold() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.gate = gate
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.gate == gate {
			close(gate)
			f.gate = nil
		}
	}
}

func (f *hangingFS) wait() {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (f *hangingFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || filepath.Dir(name) != f.dir {
		return file, err
	}
	return hangingFile{File: file, fs: f}, nil
}

func (f *hangingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(name, file, err)
}

func (f *hangingFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(old, name, c)
	return f.wrap(name, file, err)
}

type hangingFile struct {
	vfs.File
	fs *hangingFS
}

func (h hangingFile) Sync() error     { h.fs.wait(); return h.File.Sync() }
func (h hangingFile) SyncData() error { h.fs.wait(); return h.File.SyncData() }
func (h hangingFile) SyncTo(n int64) (bool, error) {
	h.fs.wait()
	return h.File.SyncTo(n)
}

// While every sync in the log's own directory hangs, synced writes still commit: the log
// fails over to the failover directory, and after the disk recovers and the store is
// reopened every acknowledged write reads back. Without a failover directory the same
// hang holds a write until it ends (the control: the hang is real).
func TestWALFailoverCommitsWhileTheLogDiskHangs(t *testing.T) {
	write := func(db *DB, from, n int) <-chan error {
		done := make(chan error, 1)
		go func() {
			for i := from; i < from+n; i++ {
				m := row.Mutation{Key: []byte(fmt.Sprintf("k%04d", i)), Row: row.Row{Cells: []row.Cell{live("v", "x", 1)}}}
				if err := db.Apply([]row.Mutation{m}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		return done
	}
	clk := newTestClock()

	t.Run("control", func(t *testing.T) {
		dir := t.TempDir()
		fs := &hangingFS{FS: vfs.Default, dir: dir}
		db := openTest(t, dir, clk, func(o *Options) { o.fs = fs })
		release := fs.hold()
		done := write(db, 0, 1)
		select {
		case err := <-done:
			release()
			t.Fatalf("a synced write returned (%v) while its log's sync hung", err)
		case <-time.After(500 * time.Millisecond):
		}
		release()
		if err := <-done; err != nil {
			t.Fatalf("the write once the sync returned: %v", err)
		}
	})

	t.Run("failover", func(t *testing.T) {
		dir, failover := t.TempDir(), filepath.Join(t.TempDir(), "failover")
		fs := &hangingFS{FS: vfs.Default, dir: dir}
		db := openTest(t, dir, clk, func(o *Options) { o.fs, o.WALFailoverDir = fs, failover })
		mustApply(t, db, row.Mutation{Key: []byte("before"), Row: row.Row{Cells: []row.Cell{live("v", "x", 1)}}})
		release := fs.hold()
		defer release()
		const n = 200
		select {
		case err := <-write(db, 0, n):
			if err != nil {
				t.Fatalf("writes while the log disk hung: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("writes hung with the log disk: the log did not fail over")
		}
		logs, err := filepath.Glob(filepath.Join(failover, "*.log"))
		if err != nil || len(logs) == 0 {
			t.Fatalf("no log in the failover directory %s (%v)", failover, err)
		}
		release()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openTest(t, dir, clk, func(o *Options) { o.WALFailoverDir = failover })
		for _, k := range append([]string{"before"}, func() (ks []string) {
			for i := range n {
				ks = append(ks, fmt.Sprintf("k%04d", i))
			}
			return ks
		}()...) {
			if _, found, err := db.Get([]byte(k)); err != nil || !found {
				t.Fatalf("after the reopen %s: found %v, %v", k, found, err)
			}
		}
	})
}
