package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/engine"
)

func testConfig(t *testing.T, eng string) config.Config {
	c := config.Default()
	c.Engine = eng
	c.DataDir = t.TempDir()
	c.Listen = "127.0.0.1:0"
	c.AdminListen = "127.0.0.1:0"
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// keptLog returns a logger whose lines, tagged with name, are printed if t fails: what a
// node did is the first thing a flaky failure needs, and is noise otherwise.
func keptLog(t *testing.T, name string) *slog.Logger {
	var mu sync.Mutex
	var buf bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s's log:\n%s", name, buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestNodeServesClientsMetricsAndHealth(t *testing.T) {
	n, err := Start(testConfig(t, "btree"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	info := c.Info(ctx, "engine").Val()
	for _, want := range []string{"engine:btree", "engine_role:read-optimized", "durability:sync", "rows_estimate:1"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO engine lacks %q:\n%s", want, info)
		}
	}
	if code, body := get(t, "http://"+n.AdminAddr()+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	_, metrics := get(t, "http://"+n.AdminAddr()+"/metrics")
	for _, want := range []string{
		`kura_engine_rows_estimate{engine="btree",role="read-optimized"} 1`,
		`kura_resp_requests_total{command="set",result="ok"} 1`,
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("the node still serves after Shutdown")
	}
}

func TestRestartedNodeReopensItsDataAndSecondNodeIsLockedOut(t *testing.T) {
	cfg := testConfig(t, "lsm")
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(cfg, quiet()); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second node on one data dir: %v, want ErrLocked", err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	if err := c.HSet(context.Background(), "h", "f", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer n.Shutdown(context.Background())
	c = redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	if got := c.HGet(context.Background(), "h", "f").Val(); got != "1" {
		t.Fatalf("after restart HGET = %q", got)
	}
}

func TestFailedStartLeavesNothingRunning(t *testing.T) {
	cfg := testConfig(t, "memory")
	first, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Shutdown(context.Background())
	// Same client address: the engine opens, the listener fails, and everything
	// (engine, data directory lock) must be released again.
	cfg2 := testConfig(t, "lsm")
	cfg2.Listen = first.Addr()
	if _, err := Start(cfg2, quiet()); err == nil {
		t.Fatal("start on a busy address succeeded")
	}
	cfg2.Listen = "127.0.0.1:0"
	n, err := Start(cfg2, quiet())
	if err != nil {
		t.Fatalf("data dir still held after a failed start: %v", err)
	}
	n.Shutdown(context.Background())
}

func TestNodeIDIsGeneratedOnceAndKept(t *testing.T) {
	cfg := testConfig(t, "memory")
	cfg.Host, cfg.Rack = "h1", "r2"
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	id := n.ID()
	if len(id) != 32 || n.Host() != "h1" || n.Rack() != "r2" {
		t.Fatalf("identity %q %q %q", id, n.Host(), n.Rack())
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if n.ID() != id {
		t.Errorf("restart changed the node ID from %s to %s", id, n.ID())
	}
	_ = n.Shutdown(context.Background())

	other := testConfig(t, "memory")
	m, err := Start(other, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	if m.ID() == id {
		t.Error("two data directories share a node ID")
	}
	if h, _ := os.Hostname(); m.Host() != h {
		t.Errorf("default host %q, want the hostname %q", m.Host(), h)
	}
}

// --btree-dir puts the B+tree file in a directory of its own, where a restart finds it;
// a data directory that already holds a B+tree file refuses to move it silently.
func TestBTreeDirHoldsTheBTreeFile(t *testing.T) {
	cfg := testConfig(t, "btree")
	cfg.BTreeDir = filepath.Join(t.TempDir(), "btree")
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.BTreeDir, "kura.bolt")); err != nil {
		t.Fatalf("no B+tree file in --btree-dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "btree", "kura.bolt")); err == nil {
		t.Fatal("a B+tree file in the data directory too")
	}
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	c = redis.NewClient(&redis.Options{Addr: n.Addr()})
	got := c.Get(context.Background(), "k").Val()
	c.Close()
	n.Shutdown(context.Background())
	if got != "v" {
		t.Fatalf("after restart GET = %q", got)
	}

	// A node that kept its B+tree in its data directory, restarted with --btree-dir.
	moved := testConfig(t, "btree")
	if n, err = Start(moved, quiet()); err != nil {
		t.Fatal(err)
	}
	n.Shutdown(context.Background())
	moved.BTreeDir = filepath.Join(t.TempDir(), "elsewhere")
	if _, err := Start(moved, quiet()); !errors.Is(err, ErrDataDir) {
		t.Fatalf("--btree-dir away from an existing B+tree file: %v, want ErrDataDir", err)
	}
}

// Shutdown twice (a test's cleanup after the test stopped the node itself, a signal
// during a shutdown) returns the first call's result instead of hanging.
func TestShutdownTwiceReturns(t *testing.T) {
	n, err := Start(testConfig(t, "memory"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second Shutdown hangs")
	}
}
