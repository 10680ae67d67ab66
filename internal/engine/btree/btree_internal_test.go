package btree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

const startMicros int64 = 1_700_000_000_000_000

func testOptions() Options {
	return Options{Options: engine.Options{Clock: func() int64 { return startMicros }}}
}

func openTest(t *testing.T, dir string, o Options) *DB {
	t.Helper()
	d, err := Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func put(key, col, val string, ts int64) row.Mutation {
	return row.Mutation{Key: []byte(key), Row: row.Row{Cells: []row.Cell{
		{Name: []byte(col), Value: []byte(val), Timestamp: ts},
	}}}
}

func mustGet(t *testing.T, d *DB, key, col, want string) {
	t.Helper()
	r, found, err := d.Get([]byte(key))
	if err != nil || !found {
		t.Fatalf("get %q: found=%v err=%v", key, found, err)
	}
	if c := r.Find([]byte(col)); c == nil || string(c.Value) != want {
		t.Fatalf("get %q: column %q = %+v, want %q", key, col, c, want)
	}
}

// gate holds the committer at its first group until open is called, so that a test can
// queue requests behind it deterministically.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *gate) hook(group []*request) {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(group))
	g.mu.Unlock()
	g.once.Do(func() {
		g.entered <- struct{}{}
		<-g.release
	})
}

// waitQueued waits until n requests sit in the committer's queue.
func waitQueued(t *testing.T, d *DB, n int) {
	t.Helper()
	for len(d.queue) < n {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// applyAsync starts Apply in a goroutine and returns the channel its error arrives on.
func applyAsync(d *DB, batch ...row.Mutation) chan error {
	ch := make(chan error, 1)
	go func() { ch <- d.Apply(batch) }()
	return ch
}

func TestGroupCommitSharesOneTransaction(t *testing.T) {
	g := newGate()
	o := testOptions()
	o.beforeCommit = g.hook
	d := openTest(t, t.TempDir(), o)

	first := applyAsync(d, put("k0", "c", "v", 1))
	<-g.entered
	const followers = 31
	var errs []chan error
	for i := 1; i <= followers; i++ {
		errs = append(errs, applyAsync(d, put(fmt.Sprintf("k%d", i), "c", "v", 1)))
	}
	waitQueued(t, d, followers)
	close(g.release)
	for i, ch := range append([]chan error{first}, errs...) {
		if err := <-ch; err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	if got := d.commits.Load(); got != 2 {
		t.Fatalf("%d Apply calls took %d transactions, want 2", followers+1, got)
	}
	if fmt.Sprint(g.sizes) != "[1 31]" {
		t.Fatalf("group sizes %v, want [1 31]", g.sizes)
	}
	if s := d.Stats(); s.RowsEstimate != followers+1 || !s.Exact {
		t.Fatalf("stats %+v, want %d exact rows", s, followers+1)
	}
}

func TestGroupCommitRespectsMutationLimit(t *testing.T) {
	g := newGate()
	o := testOptions()
	o.beforeCommit = g.hook
	o.MaxGroupMutations = 4
	d := openTest(t, t.TempDir(), o)

	first := applyAsync(d, put("k0", "c", "v", 1))
	<-g.entered
	var errs []chan error
	for i := 1; i <= 8; i++ {
		errs = append(errs, applyAsync(d, put(fmt.Sprintf("k%d", i), "c", "v", 1)))
	}
	waitQueued(t, d, 8)
	close(g.release)
	for _, ch := range append(errs, first) {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(g.sizes) != "[1 4 4]" {
		t.Fatalf("group sizes %v, want [1 4 4]", g.sizes)
	}
}

// corruptStored overwrites the stored value of key with bytes that fail the checksum.
func corruptStored(t *testing.T, d *DB, key string) {
	t.Helper()
	err := d.bolt.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(dataBucket).Put([]byte(key), []byte("not a framed row"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFailingRequestDoesNotFailItsGroup(t *testing.T) {
	g := newGate()
	o := testOptions()
	o.beforeCommit = g.hook
	d := openTest(t, t.TempDir(), o)
	corruptStored(t, d, "bad")

	first := applyAsync(d, put("k0", "c", "v", 1))
	<-g.entered
	good1 := applyAsync(d, put("k1", "c", "v", 1))
	waitQueued(t, d, 1)
	bad := applyAsync(d, put("k2", "c", "v", 1), put("bad", "c", "v", 1))
	waitQueued(t, d, 2)
	good2 := applyAsync(d, put("k3", "c", "v", 1))
	waitQueued(t, d, 3)
	close(g.release)

	for name, ch := range map[string]chan error{"first": first, "good1": good1, "good2": good2} {
		if err := <-ch; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := <-bad; !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("bad request: got %v, want ErrCorrupt", err)
	}
	mustGet(t, d, "k1", "c", "v")
	mustGet(t, d, "k3", "c", "v")
	if _, found, err := d.Get([]byte("k2")); found || err != nil {
		t.Fatalf("k2 of the failed batch: found=%v err=%v; the batch must be atomic", found, err)
	}
	// first, then the failed group of 3 retried one by one: 2 of them commit.
	if got := d.commits.Load(); got != 3 {
		t.Fatalf("commits = %d, want 3", got)
	}
}

func TestPeriodicSyncerStopsOnClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	o := testOptions()
	o.Durability = engine.Periodic
	o.SyncInterval = time.Millisecond
	d, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Apply([]row.Mutation{put("k", "c", "v", 1)}); err != nil {
		t.Fatal(err)
	}
	for d.syncs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.syncDone:
	default:
		t.Fatal("syncer still running after Close")
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions())
	if _, err := Open(dir, testOptions()); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second open: got %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := openTest(t, dir, testOptions())
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenUnusableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, testOptions()); err == nil {
		t.Fatal("open of a regular file as dir succeeded")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), bytes.Repeat([]byte("junk"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, testOptions()); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("open of a junk file: got %v, want ErrCorrupt", err)
	}
}

func TestFlippedValueByteIsErrCorrupt(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions())
	marker := "MARKER-0123456789-MARKER"
	if err := d.Apply([]row.Mutation{put("a", "c", "x", 1), put("k", "c", marker, 1), put("z", "c", "x", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		t.Fatal("marker not found in file")
	}
	data[i+5] ^= 0x01
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, testOptions())
	if _, _, err := d.Get([]byte("k")); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("get: got %v, want ErrCorrupt", err)
	}
	mustGet(t, d, "a", "c", "x")
	it, err := d.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.Next() {
		if string(it.Key()) == "k" {
			t.Fatal("iterator returned the corrupted row")
		}
	}
	if !errors.Is(it.Err(), engine.ErrCorrupt) {
		t.Fatalf("iterator: got %v, want ErrCorrupt", it.Err())
	}
	if err := d.Check(); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("check: got %v, want ErrCorrupt", err)
	}
	// A write to the corrupted row fails rather than merging into garbage.
	if err := d.Apply([]row.Mutation{put("k", "c", "new", 2)}); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("apply over corrupted row: got %v, want ErrCorrupt", err)
	}
}

// In Periodic durability a commit waits for a sync in progress, so that writes pay for
// the disk work they cause when they cause it (DB.sync).
func TestCommitWaitsForASyncInProgress(t *testing.T) {
	o := testOptions()
	o.Durability = engine.Periodic
	o.SyncInterval = time.Hour // only Flush syncs
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	o.duringSync = func() { once.Do(func() { close(entered); <-release }) }
	d := openTest(t, t.TempDir(), o)
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	<-entered
	applied := applyAsync(d, put("k", "c", "v", 1))
	select {
	case err := <-applied:
		close(release) // or Close waits for the held Flush
		t.Fatalf("a commit went ahead during a sync: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
}

// Applying what is stored already (a replayed hint, a repair, a refill) dirties no page.
func TestApplyingStoredCellsWritesNoPage(t *testing.T) {
	d := openTest(t, t.TempDir(), testOptions())
	for i := range 200 {
		if err := d.Apply([]row.Mutation{put(fmt.Sprintf("k%03d", i), "c", "v", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	pages := func(m row.Mutation) int64 {
		written := func() int64 { s := d.bolt.Stats(); return s.TxStats.GetWrite() }
		before := written()
		if err := d.Apply([]row.Mutation{m}); err != nil {
			t.Fatal(err)
		}
		return written() - before
	}
	same, changed := pages(put("k100", "c", "v", 1)), pages(put("k100", "c", "w", 2))
	t.Logf("page writes: %d re-applying a stored cell, %d for a new one", same, changed)
	if same >= changed {
		t.Fatalf("re-applying a stored cell wrote %d pages, a new cell %d", same, changed)
	}
	if r, _, err := d.Get([]byte("k100")); err != nil || string(r.Cells[0].Value) != "w" {
		t.Fatalf("k100 = %v, %v", r, err)
	}
}
