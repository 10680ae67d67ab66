package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// kuraBin is the kura binary built once for the tests that run it as a real process.
var kuraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kura-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kuraBin = filepath.Join(dir, "kura")
	build := exec.Command("go", "build", "-race", "-o", kuraBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build kura:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a kura server process under test.
type proc struct {
	cmd       *exec.Cmd
	addr      string
	adminAddr string
	done      chan error
	logMu     sync.Mutex
	log       strings.Builder
}

var readyLine = regexp.MustCompile(`kura node ready.*listen=(\S+) admin=(\S+)`)

// startKura runs `kura server` on ephemeral ports and waits until it is ready.
func startKura(t *testing.T, args ...string) *proc {
	t.Helper()
	return startKuraAt(t, "127.0.0.1:0", "127.0.0.1:0", args...)
}

// startKuraAt runs `kura server` with its RESP and admin listeners on listen and admin,
// and waits until it is ready.
func startKuraAt(t *testing.T, listen, adminAddr string, args ...string) *proc {
	t.Helper()
	return startKuraBinAt(t, kuraBin, listen, adminAddr, args...)
}

// startKuraBinAt is startKuraAt running the kura binary at bin.
func startKuraBinAt(t *testing.T, bin, listen, adminAddr string, args ...string) *proc {
	t.Helper()
	args = append([]string{"server", "--listen", listen, "--admin-listen", adminAddr}, args...)
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logMu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.logMu.Unlock()
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- [2]string{m[1], m[2]}
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- p.cmd.Wait()
	}()
	select {
	case a := <-ready:
		p.addr, p.adminAddr = a[0], a[1]
	case err := <-p.done:
		t.Fatalf("kura exited before it was ready: %v\n%s", err, p.logs())
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("kura not ready after 30s\n%s", p.logs())
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// kill sends sig and waits for the process to exit.
func (p *proc) kill(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("kura did not exit after %v\n%s", sig, p.logs())
	}
	return nil
}

func (p *proc) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.addr, PoolSize: 16, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// ack is one acknowledged write and how to check it after a restart.
type ack struct {
	kind  string // "set", "hset", "setex"
	key   string
	field string
	value string
}

// writeUntilKilled runs writers that each record an ack only after the server replied OK,
// and SIGKILLs the server once enough acks are in, while the writers are still writing.
func writeUntilKilled(t *testing.T, p *proc, c *redis.Client, round, minAcks int) []ack {
	ctx := context.Background()
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("r%d-w%d-%d", round, w, i)
				val := fmt.Sprintf("v-%s-%x", key, i*7919)
				var a ack
				var err error
				switch i % 3 {
				case 0:
					err = c.Set(ctx, key, val, 0).Err()
					a = ack{kind: "set", key: key, value: val}
				case 1:
					err = c.HSet(ctx, key, "f", val, "g", "x").Err()
					a = ack{kind: "hset", key: key, field: "f", value: val}
				default:
					err = c.Set(ctx, key, val, time.Hour).Err()
					a = ack{kind: "setex", key: key, value: val}
				}
				if err != nil {
					return // the server is gone: this write is not acknowledged
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		}(w)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= minAcks || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.kill(t, syscall.SIGKILL)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acks) < minAcks {
		t.Fatalf("only %d writes acknowledged before the deadline\n%s", len(acks), p.logs())
	}
	return acks
}

func checkAcks(t *testing.T, c *redis.Client, acks []ack) {
	t.Helper()
	ctx := context.Background()
	for _, a := range acks {
		switch a.kind {
		case "set", "setex":
			got, err := c.Get(ctx, a.key).Result()
			if err != nil || got != a.value {
				t.Fatalf("acknowledged SET %s=%s lost after SIGKILL: got %q, %v", a.key, a.value, got, err)
			}
			if a.kind == "setex" {
				if ttl := c.TTL(ctx, a.key).Val(); ttl <= 0 || ttl > time.Hour {
					t.Fatalf("TTL of %s after restart: %v", a.key, ttl)
				}
			}
		case "hset":
			got, err := c.HGet(ctx, a.key, a.field).Result()
			if err != nil || got != a.value {
				t.Fatalf("acknowledged HSET %s.%s=%s lost after SIGKILL: got %q, %v", a.key, a.field, a.value, got, err)
			}
		}
	}
}

// TestKilledServerKeepsEveryAcknowledgedSyncWrite is the node's durability promise, checked
// on the real binary: SIGKILL in the middle of sync writes, restart, read everything back.
func TestKilledServerKeepsEveryAcknowledgedSyncWrite(t *testing.T) {
	for _, eng := range []string{"lsm", "btree"} {
		t.Run("engine="+eng, func(t *testing.T) {
			dir := t.TempDir()
			var all []ack
			for round := 0; round < 3; round++ {
				p := startKura(t, "--engine", eng, "--data-dir", dir, "--durability", "sync")
				c := p.client(t)
				checkAcks(t, c, all) // what earlier rounds acknowledged is still there
				all = append(all, writeUntilKilled(t, p, c, round, 300)...)
				c.Close()
			}
			p := startKura(t, "--engine", eng, "--data-dir", dir)
			checkAcks(t, p.client(t), all)
			t.Logf("%d acknowledged writes survived 3 SIGKILLs", len(all))
		})
	}
}

// TestServerSpeaksRedisToAClientLibrary runs strings, hashes and TTLs through go-redis
// against the real binary, on each engine.
func TestServerSpeaksRedisToAClientLibrary(t *testing.T) {
	for _, eng := range []string{"lsm", "btree", "memory"} {
		t.Run("engine="+eng, func(t *testing.T) {
			p := startKura(t, "--engine", eng, "--data-dir", t.TempDir())
			c := p.client(t)
			ctx := context.Background()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(c.Set(ctx, "s", "v1", 0).Err())
			if got := c.Get(ctx, "s").Val(); got != "v1" {
				t.Fatalf("GET s = %q", got)
			}
			must(c.HSet(ctx, "h", "a", "1", "b", "2").Err())
			if got := c.HGetAll(ctx, "h").Val(); len(got) != 2 || got["a"] != "1" || got["b"] != "2" {
				t.Fatalf("HGETALL h = %v", got)
			}
			if err := c.Get(ctx, "h").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Fatalf("GET on a hash: %v", err)
			}
			must(c.Expire(ctx, "h", time.Hour).Err())
			if ttl := c.TTL(ctx, "h").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
				t.Fatalf("TTL h = %v", ttl)
			}
			must(c.Persist(ctx, "h").Err())
			if ttl := c.TTL(ctx, "h").Val(); ttl != -1 {
				t.Fatalf("TTL after PERSIST = %v", ttl)
			}
			must(c.Set(ctx, "gone", "x", 50*time.Millisecond).Err())
			time.Sleep(120 * time.Millisecond)
			if err := c.Get(ctx, "gone").Err(); err != redis.Nil {
				t.Fatalf("expired key: %v", err)
			}
			if n := c.Del(ctx, "s", "h", "missing").Val(); n != 2 {
				t.Fatalf("DEL count = %d", n)
			}
			if n := c.Exists(ctx, "s", "h").Val(); n != 0 {
				t.Fatalf("EXISTS after DEL = %d", n)
			}
		})
	}
}

// TestSIGTERMShutsDownGracefullyAndKeepsTheMemorySnapshot checks the graceful path: exit
// status 0, and the memory engine's snapshot written at shutdown is loaded at the next start.
func TestSIGTERMShutsDownGracefullyAndKeepsTheMemorySnapshot(t *testing.T) {
	dir := t.TempDir()
	p := startKura(t, "--engine", "memory", "--memory-snapshot", "--data-dir", dir)
	c := p.client(t)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if err := c.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.kill(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.logs())
	}
	p = startKura(t, "--engine", "memory", "--memory-snapshot", "--data-dir", dir)
	c = p.client(t)
	for i := 0; i < 100; i++ {
		if got := c.Get(ctx, fmt.Sprint("k", i)).Val(); got != fmt.Sprint("v", i) {
			t.Fatalf("k%d after restart = %q", i, got)
		}
	}
}

// TestUnusableDataDirectoryExitsWithAClearMessage covers the start-up failures an operator
// meets: a data directory locked by another node, one that is a file, another engine's.
func TestUnusableDataDirectoryExitsWithAClearMessage(t *testing.T) {
	dir := t.TempDir()
	startKura(t, "--data-dir", dir)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	other := t.TempDir()
	p := startKura(t, "--engine", "btree", "--data-dir", other)
	p.kill(t, syscall.SIGTERM)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--data-dir", dir}, "locked by another process"},
		{[]string{"--data-dir", file}, "data directory unusable"},
		{[]string{"--data-dir", other, "--engine", "lsm"}, "holds btree data"},
		{[]string{"--engine", "rocks"}, "engine \"rocks\""},
	}
	for _, tc := range cases {
		args := append([]string{"server", "--listen", "127.0.0.1:0", "--admin-listen", ""}, tc.args...)
		out, err := exec.Command(kuraBin, args...).CombinedOutput()
		if err == nil {
			t.Fatalf("%v: exit status 0, want failure\n%s", tc.args, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Fatalf("%v: output %q does not say %q", tc.args, out, tc.want)
		}
	}
}
