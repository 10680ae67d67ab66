package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of sizeMiB on a temporary directory for the test, or skips
// the test when it cannot (mounting needs root). The tmpfs is a real file system that
// runs out of space, where the tests' own disk does not.
func smallDisk(t *testing.T, sizeMiB int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", sizeMiB)); err != nil {
		t.Skipf("cannot mount a %d MiB tmpfs to fill (needs root): %v", sizeMiB, err)
	}
	t.Cleanup(func() { // registered before the servers' cleanups, so it runs after them
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFullDiskRefusesWritesAndKeepsServing fills a real, small file system under a real
// server: past its reserve the server refuses writes with NOSPACE instead of dying
// (pebble panics when it cannot write its log), serves every acknowledged write, takes
// writes again once space is freed, and keeps them all through a SIGKILL.
func TestFullDiskRefusesWritesAndKeepsServing(t *testing.T) {
	for _, eng := range []string{"lsm", "btree"} {
		t.Run("engine="+eng, func(t *testing.T) {
			disk := smallDisk(t, 64)
			filler := filepath.Join(disk, "filler")
			if err := os.WriteFile(filler, make([]byte, 16<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(disk, "data")
			args := []string{"--engine", eng, "--data-dir", dir, "--durability", "sync", "--lsm-memtable-size-bytes", "4194304"}
			p := startKura(t, args...)
			c := p.client(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2)) // incompressible values: pebble compresses tables
			value := func() string {
				b := make([]byte, 60_000)
				for i := range b {
					b[i] = 'a' + byte(rng.IntN(26))
				}
				return string(b)
			}
			acked := map[string]string{}
			refused := 0
			for i := 0; i < 5000 && refused < 20; i++ {
				key, v := fmt.Sprintf("k%05d", i), value()
				err := c.Set(ctx, key, v, 0).Err()
				switch {
				case err == nil:
					acked[key] = v
				case strings.HasPrefix(err.Error(), "NOSPACE "):
					refused++
				default:
					t.Fatalf("SET %s after %d acknowledged: %v, want OK or a NOSPACE error\n%s", key, len(acked), err, p.logs())
				}
			}
			if refused == 0 || len(acked) == 0 {
				t.Fatalf("%d writes acknowledged and %d refused on a 64 MiB disk, want both", len(acked), refused)
			}
			t.Logf("%d writes of 60 KB acknowledged, then refused", len(acked))
			select {
			case err := <-p.done:
				t.Fatalf("the server exited on a full disk: %v\n%s", err, p.logs())
			default:
			}
			checkValues(t, p, acked)

			// Space freed: writes resume without a restart.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			after := value()
			for {
				err := c.Set(ctx, "after", after, 0).Err()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("writes still refused 10 s after 16 MiB were freed: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			acked["after"] = after

			p.kill(t, syscall.SIGKILL)
			p = startKura(t, args...)
			checkValues(t, p, acked)
		})
	}
}

// checkValues reads every key back from p and fails unless each holds its value.
func checkValues(t *testing.T, p *proc, want map[string]string) {
	t.Helper()
	c := p.client(t)
	for k, v := range want {
		got, err := c.Get(context.Background(), k).Result()
		if err != nil || got != v {
			t.Fatalf("acknowledged SET %s: read %d bytes, %v\n%s", k, len(got), err, p.logs())
		}
	}
}
