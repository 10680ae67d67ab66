package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/redis/go-redis/v9"
)

// freeBasePort finds a base port whose four port ranges (see `kura dev`) are free for n
// nodes, all below the kernel's ephemeral range: a port in it can be taken by any
// outgoing connection while a node the test killed is down, and its restart then fails
// to bind (seen once, with several clusters on the machine).
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	ephemeral := 32768 // Linux's default lower bound
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil {
				ephemeral = lo
			}
		}
	}
	const lowest = 10000
	if ephemeral-3000-n <= lowest {
		t.Skipf("the ephemeral port range starts at %d: no room below it for a dev cluster", ephemeral)
	}
	for range 50 {
		base := lowest + rand.IntN(ephemeral-3000-n-lowest)
		free := true
		for _, off := range []int{0, 1000, 2000, 3000} {
			for k := range n {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off+k))
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

var devPid = regexp.MustCompile(`(host\d+-\w+)\s+redis-cli -p (\d+)\s+(?:--tls .*?)?admin (?:https://)?(\S+)\s+pid (\d+)`)

type devInfo struct {
	port, admin string
	pid         int
}

// logsOnFailure returns dataDir, after arranging for the tail of every node's log in it
// to be printed if the test fails.
func logsOnFailure(t *testing.T, dataDir string) string {
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("sh", "-c", "tail -n 15 "+dataDir+"/*.log").CombinedOutput()
			t.Logf("node logs:\n%s", logs)
		}
	})
	return dataDir
}

// devReady is how long the tests let `kura dev` take to bring its ring up. Nine race-built
// nodes join one after another, and under a loaded CI machine the first alone once took
// 30 s to open its engine: the limit is for a hung start, not a slow one.
const devReady = 150 * time.Second

// startDev runs `kura dev` and returns the nodes it printed once the ring is ready.
func startDev(t *testing.T, args ...string) (*exec.Cmd, map[string]devInfo) {
	t.Helper()
	args = append([]string{"dev", "--ready-timeout", devReady.String()}, args...)
	cmd := exec.Command(kuraBin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	nodes := map[string]devInfo{}
	sc := bufio.NewScanner(out)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			if m := devPid.FindStringSubmatch(sc.Text()); m != nil {
				pid, _ := strconv.Atoi(m[4])
				nodes[m[1]] = devInfo{port: m[2], admin: m[3], pid: pid}
			}
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops") {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(devReady + 30*time.Second):
		t.Fatalf("kura dev did not get ready in %v", devReady+30*time.Second)
	}
	go func() { _, _ = bufio.NewReader(out).WriteTo(new(bytes.Buffer)) }()
	return cmd, nodes
}

func TestDevClusterSurvivesSIGKILLOfANodeUnderQuorumWrites(t *testing.T) {
	base := freeBasePort(t, 3)
	dataDir := logsOnFailure(t, t.TempDir())
	_, nodes := startDev(t, "--hosts", "3", "--engines", "lsm", "--data-dir", dataDir, "--base-port", strconv.Itoa(base))
	if len(nodes) != 3 {
		t.Fatalf("kura dev printed %d nodes", len(nodes))
	}
	n1, n3 := nodes["host1-lsm"], nodes["host3-lsm"]
	ctx := context.Background()
	// Nodes that joined at the same moment picked different tokens: each owns a share,
	// once gossip has brought every member's tokens to n1.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := fetchStatus(ctx, n1.admin)
		if err != nil {
			t.Fatal(err)
		}
		var short []string
		for _, m := range st.Members {
			if m.Owns < 0.1 || m.OwnsRepl < 0.2 {
				short = append(short, fmt.Sprintf("%s owns %.3f of the ring (%.3f replicated)", m.Host, m.Owns, m.OwnsRepl))
			}
		}
		if len(short) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after start: %s", strings.Join(short, "; "))
		}
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + n1.port, MaxRetries: -1})
	defer client.Close()

	// Writers at QUORUM (the default) record every acknowledged write.
	log := startWriters(ctx, []*redis.Client{client}, 4)
	time.Sleep(500 * time.Millisecond)

	// SIGKILL host3's node while writes go on, then start it again with the same
	// command line.
	restart := sigkill(t, n3.pid)
	time.Sleep(2 * time.Second) // long enough for the failure detectors
	hinted := waitHints(t, n1.admin, func(n int64) bool { return n > 0 })
	restart()
	time.Sleep(time.Second)
	log.waitFor(t, 100)
	log.stop()
	waitHints(t, n1.admin, func(n int64) bool { return n == 0 })

	// Every acknowledged write reads back at ALL.
	acked := log.acked
	missing := missingAtAll(t, client, acked)
	t.Logf("%d acknowledged writes, %d hints held for the killed node while it was down, %d missing", len(acked), hinted, missing)
}

// ackLog is writers at the connections' consistency level (QUORUM by default) and the
// writes acknowledged to them: each key written once, with its own value.
type ackLog struct {
	mu    sync.Mutex
	acked map[string]string
	keys  []string
	done  chan struct{}
	wg    sync.WaitGroup
}

// startWriters starts n writers over clients (in turn), each writing a key a millisecond.
func startWriters(ctx context.Context, clients []*redis.Client, n int) *ackLog {
	l := &ackLog{acked: map[string]string{}, done: make(chan struct{})}
	for w := range n {
		l.wg.Go(func() {
			c := clients[w%len(clients)]
			for i := 0; ; i++ {
				select {
				case <-l.done:
					return
				default:
				}
				k, v := fmt.Sprintf("w%d-k%d", w, i), fmt.Sprintf("v%d", i)
				if c.Set(ctx, k, v, 0).Err() == nil {
					l.mu.Lock()
					l.acked[k] = v
					l.keys = append(l.keys, k)
					l.mu.Unlock()
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	return l
}

// waitFor waits, up to a minute, until at least n writes were acknowledged: on a loaded
// machine a synced write may take a hundred milliseconds, and a test's fixed pauses then
// see few of them.
func (l *ackLog) waitFor(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		l.mu.Lock()
		got := len(l.acked)
		l.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged in a minute", got)
		}
	}
}

// stop stops the writers and waits for them.
func (l *ackLog) stop() {
	close(l.done)
	l.wg.Wait()
}

// sigkill kills node pid with SIGKILL and returns what starts it again with the same
// command line, its output appended to the log the killed process wrote to (stopped when
// the test ends).
func sigkill(t *testing.T, pid int) (restart func()) {
	t.Helper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	logPath, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		restarted := exec.Command(args[0], args[1:]...)
		if filepath.IsAbs(logPath) {
			logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close() // the child has its own descriptor
			restarted.Stdout, restarted.Stderr = logf, logf
		}
		if err := restarted.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = restarted.Process.Signal(syscall.SIGTERM); _ = restarted.Wait() })
	}
}

// missingAtAll reads every acknowledged write back at ALL through client and returns how
// many did not read back as written, reporting the first few.
func missingAtAll(t *testing.T, client *redis.Client, acked map[string]string) int {
	t.Helper()
	ctx := context.Background()
	conn := client.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	missing := 0
	// A node the failure detector suspects for a moment (a loaded machine, a node just
	// restarted) makes ALL unavailable, not the write lost: such reads are retried, for
	// up to 30 s in all.
	retryUntil := time.Now().Add(30 * time.Second)
	for k, v := range acked {
		got, err := conn.Get(ctx, k).Result()
		for err != nil && err != redis.Nil && strings.HasPrefix(err.Error(), "UNAVAILABLE") && time.Now().Before(retryUntil) {
			time.Sleep(100 * time.Millisecond)
			got, err = conn.Get(ctx, k).Result()
		}
		if err != nil || got != v {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged %s=%s reads back %q at ALL: %v", k, v, got, err)
			}
		}
	}
	return missing
}

// waitHints polls `kura admin hints` on admin until the total held satisfies ok, and
// returns it.
func waitHints(t *testing.T, admin string, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := fetchStatus(context.Background(), admin)
		if err == nil {
			var n int64
			for _, h := range st.Hints {
				n += h.Hints
			}
			if ok(n) {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hints on %s never reached the expected count (%v): %+v", admin, err, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The heterogeneous cluster of the paper, as `kura dev --engines lsm,btree,memory` runs
// it: each role's node on host3 is SIGKILLed and restarted in turn under QUORUM writes and
// reads. No read during the churn returns less than an acknowledged write, the restarted
// in-memory node refills before serving reads, and afterwards every acknowledged write
// reads back at ALL. (Here the read-optimized replicas' asynchronous copies land within
// milliseconds, so reads would rarely meet a replica set where only the in-memory one had
// a write; internal/node's TestRestartedMemoryNodeRefillsBeforeServingReads builds that
// case.)
func TestDevHeterogeneousClusterSurvivesSIGKILLOfEachRole(t *testing.T) {
	survivesSIGKILLOfEachRole(t)
}

// The same with the B+tree nodes' write buffer on, a small one (64 KiB) so that flushes
// run all through the churn: a B+tree node SIGKILLed with writes in its journal and its
// memtables replays them.
func TestDevHeterogeneousClusterWithBTreeWriteBuffersSurvivesSIGKILLOfEachRole(t *testing.T) {
	survivesSIGKILLOfEachRole(t, "--server-flag=--btree-write-buffer-bytes=65536")
}

func survivesSIGKILLOfEachRole(t *testing.T, extra ...string) {
	base := freeBasePort(t, 9)
	dataDir := logsOnFailure(t, t.TempDir())
	_, nodes := startDev(t, append([]string{"--hosts", "3", "--engines", "lsm,btree,memory", "--data-dir", dataDir,
		"--base-port", strconv.Itoa(base)}, extra...)...)
	if len(nodes) != 9 {
		t.Fatalf("kura dev printed %d nodes", len(nodes))
	}
	ctx := context.Background()
	adminAddr := nodes["host1-lsm"].admin
	st, err := fetchStatus(ctx, adminAddr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Placement != "engine-diverse" || st.Routing != "engine-aware" {
		t.Fatalf("placement %q, routing %q", st.Placement, st.Routing)
	}
	var clients []*redis.Client
	for _, name := range []string{"host1-lsm", "host2-btree"} { // coordinators never killed
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + nodes[name].port, MaxRetries: -1})
		defer c.Close()
		clients = append(clients, c)
	}

	log := startWriters(ctx, clients, 4)
	var rmu sync.Mutex
	var wrong []string
	reads := 0
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 { // readers of acknowledged writes, at QUORUM
		readers.Go(func() {
			c := clients[r%len(clients)]
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				log.mu.Lock()
				if len(log.keys) == 0 {
					log.mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				k := log.keys[rng.IntN(len(log.keys))]
				v := log.acked[k]
				log.mu.Unlock()
				got, err := c.Get(ctx, k).Result()
				if err != nil && err != redis.Nil {
					continue // unavailable or timed out while a node is down: not a wrong answer
				}
				rmu.Lock()
				reads++
				if got != v {
					wrong = append(wrong, fmt.Sprintf("%s=%s read as %q", k, v, got))
				}
				rmu.Unlock()
			}
		})
	}
	time.Sleep(500 * time.Millisecond)

	for _, victim := range []string{"host3-memory", "host3-btree", "host3-lsm"} {
		restart := sigkill(t, nodes[victim].pid)
		time.Sleep(2 * time.Second) // long enough for the failure detectors
		restart()
		engine := strings.TrimPrefix(victim, "host3-")
		deadline := time.Now().Add(60 * time.Second)
		for {
			st, err := fetchStatus(ctx, adminAddr)
			if err == nil && slices.ContainsFunc(st.Members, func(m admin.MemberStatus) bool {
				return m.Host == "host3" && m.Engine == engine && m.Up && !m.Refilling
			}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not come back up (and refilled): %v", victim, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second) // writes and reads go on with the node back
	}
	log.waitFor(t, 100)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rmu.Lock()
		n := reads
		rmu.Unlock()
		if n >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d reads answered in a minute", n)
		}
	}
	close(stopReaders)
	readers.Wait()
	log.stop()
	for _, name := range []string{"host1-lsm", "host2-btree"} {
		waitHints(t, nodes[name].admin, func(n int64) bool { return n == 0 })
	}
	acked := log.acked
	missing := missingAtAll(t, clients[0], acked)
	t.Logf("%d acknowledged writes, %d reads during the churn, %d wrong, %d missing at ALL", len(acked), reads, len(wrong), missing)
	if len(wrong) > 0 {
		t.Errorf("reads during the churn returned less than acknowledged writes: %v", wrong[:min(5, len(wrong))])
	}
}

// --node-wrapper runs every node under a command (the emulated disks' `run`, in the
// papers' experiments): here env, which sets a variable and execs kura in its place.
// {host} in the wrapper, the data directory and server flags stands for the host's number, so that
// each host can have disks of its own; {engine} in server flags for the node's engine.
func TestDevRunsNodesUnderAWrapper(t *testing.T) {
	base := freeBasePort(t, 2)
	root := t.TempDir()
	_, nodes := startDev(t, "--hosts", "2", "--engines", "memory", "--data-dir", filepath.Join(root, "disk{host}"),
		"--base-port", strconv.Itoa(base), "--node-wrapper", "env KURA_DEV_WRAPPED=host{host}",
		"--server-flag=--rack=rack{host}", "--server-flag=--hints-dir="+filepath.Join(root, "log{host}", "hints-{engine}"))
	for h := 1; h <= 2; h++ {
		name := fmt.Sprintf("host%d-memory", h)
		n, ok := nodes[name]
		if !ok {
			t.Fatalf("kura dev printed %v", nodes)
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", n.pid))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("KURA_DEV_WRAPPED=host%d", h); !slices.Contains(strings.Split(string(environ), "\x00"), want) {
			t.Errorf("%s did not run under its host's wrapper (want %s in its environment)", name, want)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n.pid))
		if !strings.Contains(string(cmdline), "server") {
			t.Fatalf("the wrapped process is not a kura server: %q", cmdline)
		}
		if want := fmt.Sprintf("--rack=rack%d", h); !slices.Contains(strings.Split(string(cmdline), "\x00"), want) {
			t.Errorf("%s's command line lacks its host's %s: %q", name, want, cmdline)
		}
		disk := filepath.Join(root, fmt.Sprintf("disk%d", h))
		for _, f := range []string{name, name + ".log"} {
			if _, err := os.Stat(filepath.Join(disk, f)); err != nil {
				t.Errorf("%s's data and log are not on its host's directory: %v", name, err)
			}
		}
		if m, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("log%d", h), "hints-memory", "MANIFEST-*")); len(m) == 0 {
			t.Errorf("%s keeps no hint store in its --hints-dir", name)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("disk%d", 3-h), name)); err == nil {
			t.Errorf("%s has a data directory on the other host's disk", name)
		}
	}
}

// A wrapper that runs the node as its child, and exits on SIGTERM without passing it on,
// must not leave the node running when kura dev stops: kura dev signals each node's
// process group, not only the process it started. A wrapper that starts the node in a
// group of its own (set -m, as emulate-disks.sh does) escapes that; kura dev then kills
// the node's whole process tree once --stop-timeout has passed.
func TestDevStopsANodeItsWrapperDoesNotExec(t *testing.T) {
	for _, c := range []struct{ name, jobControl string }{{"same group", ""}, {"group of its own", "set -m\n"}} {
		t.Run(c.name, func(t *testing.T) {
			base := freeBasePort(t, 1)
			root := t.TempDir()
			wrapper := filepath.Join(root, "wrap.sh")
			script := "#!/bin/bash\n" + c.jobControl + "trap 'exit 0' TERM\n\"$@\" &\nwait\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd, nodes := startDev(t, "--hosts", "1", "--engines", "memory", "--data-dir", filepath.Join(root, "data"),
				"--base-port", strconv.Itoa(base), "--node-wrapper", wrapper, "--stop-timeout", "3s")
			n, ok := nodes["host1-memory"]
			if !ok {
				t.Fatalf("kura dev printed %v", nodes)
			}
			children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", n.pid, n.pid))
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(children))
			if len(f) != 1 {
				t.Fatalf("the wrapper (pid %d) has children %q, want the node alone", n.pid, children)
			}
			node, _ := strconv.Atoi(f[0])
			if c.jobControl != "" {
				// Then no signal to the wrapper's group reaches the node: only killing it
				// by its pid stops it.
				if st := procStat(node); len(st) < 3 || st[2] == strconv.Itoa(n.pid) {
					t.Fatalf("the node (pid %d) is in its wrapper's process group: %v", node, st)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("kura dev: %v", err)
			}
			if st := procStat(node); len(st) > 0 && st[0] != "Z" {
				t.Fatalf("the node (pid %d) is still running (state %s) after kura dev stopped", node, st[0])
			}
		})
	}
}

func TestWrapperForPicksTheEnginesOwnThenThePlainOne(t *testing.T) {
	ws := []string{"env A=1", "memory=env B=2", "lsm=nice"}
	for engine, want := range map[string]string{"memory": "env B=2", "lsm": "nice", "btree": "env A=1"} {
		if got := wrapperFor(ws, engine); got != want {
			t.Errorf("%s: %q, want %q", engine, got, want)
		}
	}
	if got := wrapperFor([]string{"memory=x"}, "lsm"); got != "" {
		t.Errorf("an engine's own wrapper applied to another engine: %q", got)
	}
}

// `kura dev add` grows a running dev cluster and `kura dev remove` shrinks it, through the
// metadata log: the new node streams its ranges before it serves them, the removed one
// hands its ranges over before it stops; every write acknowledged before reads back at
// ALL through a node that stayed.
func TestDevAddAndRemove(t *testing.T) {
	base := freeBasePort(t, 4)
	dataDir := logsOnFailure(t, t.TempDir())
	_, nodes := startDev(t, "--hosts", "3", "--engines", "lsm", "--data-dir", dataDir, "--base-port", strconv.Itoa(base))
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + nodes["host1-lsm"].port, MaxRetries: -1})
	defer client.Close()
	ctx := context.Background()
	acked := map[string]string{}
	for i := range 500 {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		if err := client.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		acked[k] = v
	}
	out, err := exec.Command(kuraBin, "dev", "add", "1", "--data-dir", dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "host4-lsm") {
		t.Fatalf("kura dev add: %v\n%s", err, out)
	}
	st, err := fetchStatus(ctx, nodes["host1-lsm"].admin)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Members); n != 4 || st.Topology == nil || st.Topology.Change != nil {
		t.Fatalf("after kura dev add: %d members, topology %+v", n, st.Topology)
	}
	out, err = exec.Command(kuraBin, "dev", "remove", "host2-lsm", "--data-dir", dataDir).CombinedOutput()
	if err != nil || strings.Contains(string(out), "host2-lsm") {
		t.Fatalf("kura dev remove: %v\n%s", err, out)
	}
	if err := syscall.Kill(nodes["host2-lsm"].pid, 0); err == nil {
		t.Errorf("host2-lsm still runs after kura dev remove")
	}
	if missing := missingAtAll(t, client, acked); missing > 0 {
		t.Errorf("%d of %d acknowledged writes missing at ALL after growing and shrinking", missing, len(acked))
	}
}
