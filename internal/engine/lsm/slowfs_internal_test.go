package lsm

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// slowSyncFS is an in-memory file system whose files take delay to sync.
type slowSyncFS struct {
	vfs.FS
	delay time.Duration
}

func (f slowSyncFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return slowSyncFile{file, f.delay}, err
}

type slowSyncFile struct {
	vfs.File
	delay time.Duration
}

func (f slowSyncFile) Sync() error { time.Sleep(f.delay); return f.File.Sync() }

// A write-ahead log's fsync that takes longer than slowWALOp is logged with its file and
// time, at most once a second; other files' are not watched.
func TestSlowWriteAheadLogSyncsAreLogged(t *testing.T) {
	var buf bytes.Buffer
	fs := newWALFS(slowSyncFS{FS: vfs.NewMem(), delay: slowWALOp + 50*time.Millisecond}, slog.New(slog.NewTextHandler(&buf, nil)))
	wal, err := fs.Create("000004.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	table, err := fs.Create("000005.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := table.Sync(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("an sstable's sync was logged: %s", buf.String())
	}
	for range 2 { // the second within the same second is counted, not logged
		if err := wal.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "slow write-ahead log operation") ||
		!strings.Contains(lines[0], "op=sync") || !strings.Contains(lines[0], "file=000004.log") {
		t.Fatalf("log: %q, want one slow sync of 000004.log", lines)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.skipped != 1 {
		t.Errorf("%d slow operations counted as not logged, want 1", fs.skipped)
	}
}
