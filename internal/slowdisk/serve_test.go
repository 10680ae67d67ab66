package slowdisk

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serve mounts a fresh image of size bytes, or skips where FUSE cannot be mounted (no
// /dev/fuse, not root, a container without the mount capability).
func serve(t *testing.T, size int64, cfg Config) (*Server, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount FUSE")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := Serve(img, mnt, cfg)
	if err != nil {
		// With a valid config, only the mount can fail: a container without the
		// capability, or no fusermount to fall back on.
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return s, filepath.Join(mnt, FileName)
}

func TestServedFileReadsBackWhatWasWrittenAtTheModelsPace(t *testing.T) {
	const access = 20 * time.Millisecond
	s, path := serve(t, 8<<20, Config{Access: access})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != 8<<20 {
		t.Fatalf("size %v %v", fi, err)
	}
	want := bytes.Repeat([]byte("kura"), 1024)
	if _, err := f.WriteAt(want, 4<<20); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 4<<20); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !bytes.Equal(got, want) {
		t.Fatal("read back other bytes than written")
	}
	// The read went to the model (direct I/O: no page cache above it) and, the head being
	// past the written block, paid an access.
	if took < access {
		t.Fatalf("a read that seeks took %v, under the %v access", took, access)
	}
	st := s.Stats()
	if st.Reads < 1 || st.Writes < 1 || st.Accesses < 2 || st.ReadBytes < 4096 || st.WriteBytes < 4096 {
		t.Fatalf("stats %+v", st)
	}
	// Past the end of the image: no bytes, no error beyond EOF.
	if n, err := f.ReadAt(got, 8<<20); n != 0 || err == nil {
		t.Fatalf("read past the end: %d, %v", n, err)
	}
}
