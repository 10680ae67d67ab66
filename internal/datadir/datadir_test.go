package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
)

var t0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// A new directory gets an ID, kept across opens; a second open while it is locked fails,
// and so does an open with another engine.
func TestADirectoryKeepsItsIDAndItsEngine(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, "lsm", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	id := d.ID()
	if len(id) != 32 || d.EngineDir("lsm") != filepath.Join(dir, "lsm") {
		t.Fatalf("id %q, engine dir %q", id, d.EngineDir("lsm"))
	}
	if _, err := Open(dir, "lsm", nil, t0); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second open of a locked directory: %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, "btree", nil, t0); !errors.Is(err, ErrEngineMismatch) {
		t.Fatalf("open with another engine: %v, want ErrEngineMismatch", err)
	}
	d, err = Open(dir, "lsm", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.ID() != id {
		t.Fatalf("reopen changed the ID from %s to %s", id, d.ID())
	}
}

// A directory written before nodes had IDs gets one, once.
func TestDataDirWithoutIDGetsOneOnce(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"format": 1, "engine": "memory", "created": "2026-11-20T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, metaFile), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		d, err := Open(dir, "memory", nil, t0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID())
		d.Close()
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("IDs across opens of a legacy directory: %q", ids)
	}
}

// A directory that cannot be written is refused with the OS's reason.
func TestAnUnwritableDirectoryIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, "lsm", nil, t0); !errors.Is(err, ErrUnusable) {
		t.Fatalf("a file as the data directory: %v, want ErrUnusable", err)
	}
}
