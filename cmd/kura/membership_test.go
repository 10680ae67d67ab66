package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
)

// ringNode is a `kura server --ring-source=log` process of a membership test, on ports
// from a block freeBasePort found free.
type ringNode struct {
	*proc
	id   string
	args []string
}

// startRingNode starts node k of a test cluster: gossip on base+k, internode on
// base+1000+k, RESP on base+2000+k, admin on base+3000+k; seeds is the gossip address to
// join through, empty for the first node.
func startRingNode(t *testing.T, dir string, base, k int, seeds string, extra ...string) *ringNode {
	t.Helper()
	return startRingNodeBin(t, kuraBin, dir, base, k, seeds, extra...)
}

// startRingNodeBin is startRingNode running the kura binary at bin (another version's).
func startRingNodeBin(t *testing.T, bin, dir string, base, k int, seeds string, extra ...string) *ringNode {
	t.Helper()
	port := func(off int) string { return "127.0.0.1:" + strconv.Itoa(base+off+k) }
	args := []string{"--engine", "lsm", "--data-dir", fmt.Sprintf("%s/n%d", dir, k), "--host", fmt.Sprintf("h%d", k),
		"--gossip-listen", port(0), "--internode-listen", port(1000), "--ring-source", "log",
		"--join-batch-window", "2s", "--num-tokens", "4", "--request-timeout", "5s"}
	if seeds != "" {
		args = append(args, "--seeds", seeds)
	}
	args = append(args, extra...)
	p := startKuraBinAt(t, bin, port(2000), port(3000), args...)
	n := &ringNode{proc: p, args: args}
	m := regexpID.FindStringSubmatch(p.logs())
	if m == nil {
		t.Fatalf("no node ID in the ready line:\n%s", p.logs())
	}
	n.id = m[1]
	return n
}

// regexpID finds a node's ID in its ready line.
var regexpID = regexp.MustCompile(`kura node ready"? id=(\S+)`)

// runKura runs the kura binary with args and returns its combined output.
func runKura(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(kuraBin, args...).CombinedOutput()
	return string(out), err
}

// waitTopology polls a node's admin status until ok accepts it, for up to limit.
func waitTopology(t *testing.T, adminAddr, what string, limit time.Duration, ok func(*admin.ClusterStatus) bool) *admin.ClusterStatus {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last *admin.ClusterStatus
	for {
		st, err := fetchStatus(context.Background(), adminAddr)
		if err == nil && st.Topology != nil {
			last = st
			if ok(st) {
				return st
			}
		}
		if time.Now().After(deadline) {
			var sb strings.Builder
			if last != nil {
				printStatus(&sb, last)
			}
			t.Fatalf("%s: not reached in %v (last error %v)\n%s", what, limit, err, sb.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killAndRemove SIGKILLs dead, waits until via holds it down, and removes it with kura
// admin removenode through via (asked again while the leader's failure detector still
// holds it live). It returns once the removal is accepted, not finished.
func killAndRemove(t *testing.T, via, dead *ringNode) {
	t.Helper()
	if err := dead.kill(t, syscall.SIGKILL); err == nil {
		t.Fatalf("node %s exited cleanly after SIGKILL", dead.id)
	}
	waitTopology(t, via.adminAddr, "node "+dead.id+" down", time.Minute, func(st *admin.ClusterStatus) bool {
		for _, m := range st.Members {
			if m.ID == dead.id {
				return !m.Up
			}
		}
		return false
	})
	for {
		out, err := runKura(t, "admin", "removenode", "--admin", via.adminAddr, dead.id)
		if err == nil {
			return
		}
		if !strings.Contains(out, "live") {
			t.Fatalf("removenode %s: %v\n%s", dead.id, err, out)
		}
		time.Sleep(500 * time.Millisecond) // the leader's failure detector may lag ours
	}
}

// settled says the ring has the given number of normal members and no change in flight.
func settled(normal int) func(*admin.ClusterStatus) bool {
	return func(st *admin.ClusterStatus) bool {
		n := 0
		for _, m := range st.Members {
			if m.Status == "normal" {
				n++
			}
		}
		return n == normal && st.Topology.Change == nil
	}
}

// loadStatic writes s-i = v-i for i below n through the node at addr, in pipelines of a
// hundred, with a read timeout for a loaded machine (each write is fsynced at QUORUM).
func loadStatic(t *testing.T, addr string, n int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 30 * time.Second, MaxRetries: -1})
	defer c.Close()
	for lo := 0; lo < n; lo += 100 {
		pipe := c.Pipeline()
		for i := lo; i < min(lo+100, n); i++ {
			pipe.Set(context.Background(), fmt.Sprintf("s-%d", i), fmt.Sprintf("v-%d", i), 0)
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatalf("loading %d keys: %v", n, err)
		}
	}
}

// monotonic is a real Redis client's workload: writers that each own some keys and write
// them with increasing counters at the connection's level (QUORUM), and read them back,
// checking that no read returns a counter older than one already acknowledged to them.
type monotonic struct {
	mu         sync.Mutex
	acked      map[string]int // key -> highest counter acknowledged
	writes     int
	reads      int
	failures   int
	errs       map[string]int // failures by message (at most 10 messages)
	violations []string
	static     int // keys s-0 .. s-(static-1) hold v-i, written before the workload
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startMonotonic(clients []*redis.Client, writers, keysPer, static int, seed uint64) *monotonic {
	w := &monotonic{acked: map[string]int{}, errs: map[string]int{}, static: static, stop: make(chan struct{})}
	for c := range writers {
		w.wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			client := clients[c%len(clients)]
			ctx := context.Background()
			next := map[string]int{}
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				if w.static > 0 && rng.IntN(4) == 0 {
					// A key written once before the changes: never rewritten, so only the
					// streams can have brought it to a range's new replicas.
					i := rng.IntN(w.static)
					got, err := client.Get(ctx, fmt.Sprintf("s-%d", i)).Result()
					w.mu.Lock()
					switch {
					case err == redis.Nil || err == nil && got != fmt.Sprintf("v-%d", i):
						w.violations = append(w.violations, fmt.Sprintf("s-%d: read %q (%v), v-%d acknowledged before the changes", i, got, err, i))
					case err != nil:
						w.failed(err)
					}
					w.reads++
					w.mu.Unlock()
					continue
				}
				key := fmt.Sprintf("m%d-%d", c, rng.IntN(keysPer))
				if rng.IntN(2) == 0 {
					next[key]++
					n := next[key]
					err := client.Set(ctx, key, strconv.Itoa(n), 0).Err()
					w.mu.Lock()
					if err == nil {
						w.acked[key] = max(w.acked[key], n)
						w.writes++
					} else {
						w.failed(err)
					}
					w.mu.Unlock()
				} else {
					w.mu.Lock()
					want := w.acked[key]
					w.mu.Unlock()
					got, err := client.Get(ctx, key).Result()
					w.mu.Lock()
					switch {
					case err == redis.Nil && want > 0:
						w.violations = append(w.violations, fmt.Sprintf("%s: not found, %d acknowledged", key, want))
					case err != nil && err != redis.Nil:
						w.failed(err)
					case err == nil:
						if v, _ := strconv.Atoi(got); v < want {
							w.violations = append(w.violations, fmt.Sprintf("%s: read %d, %d acknowledged", key, v, want))
						}
					}
					w.reads++
					w.mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	return w
}

// failed counts a failed operation; under w.mu.
func (w *monotonic) failed(err error) {
	w.failures++
	if _, ok := w.errs[err.Error()]; ok || len(w.errs) < 10 {
		w.errs[err.Error()]++
	}
}

// check logs the workload's counts and fails t if a read returned less than was
// acknowledged, or if fewer than 100 writes were acknowledged (it did not run through
// what the test did). It returns every acknowledged key with the value it must read
// back (at least that counter for the workload's keys; exactly v-i for the static s-i).
func (w *monotonic) check(t *testing.T) map[string]string {
	t.Helper()
	writes, reads, failures := w.counts()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("the workload: %d writes and %d reads acknowledged, %d failed %v", writes, reads, failures, w.errs)
	if len(w.violations) > 0 {
		t.Errorf("%d reads returned less than was acknowledged, e.g. %v", len(w.violations), w.violations[:min(5, len(w.violations))])
	}
	if writes < 100 {
		t.Errorf("only %d writes acknowledged: the workload did not run through the changes", writes)
	}
	acked := map[string]string{}
	for k, v := range w.acked {
		acked[k] = strconv.Itoa(v)
	}
	for i := range w.static {
		acked[fmt.Sprintf("s-%d", i)] = fmt.Sprintf("v-%d", i)
	}
	return acked
}

func (w *monotonic) stopAndWait() {
	close(w.stop)
	w.wg.Wait()
}

func (w *monotonic) counts() (writes, reads, failures int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.reads, w.failures
}

// TestMembershipChangesUnderQuorumClients is issue 32's must-show: while real Redis
// clients write and read at QUORUM without pause, two nodes join at once, one is
// decommissioned, and one is killed (SIGKILL) and removed; afterwards every acknowledged
// write reads back at QUORUM through every node and at ALL, and no read during the
// changes returned a value older than one already acknowledged to its client. Seeded
// (KURA_MEMBERSHIP_SEED repeats the clients' choices).
func TestMembershipChangesUnderQuorumClients(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("KURA_MEMBERSHIP_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_MEMBERSHIP_SEED=%d to repeat)", seed, seed)
	base := freeBasePort(t, 6)
	dir := t.TempDir()
	seeds := "127.0.0.1:" + strconv.Itoa(base+1)
	nodes := map[int]*ringNode{1: startRingNode(t, dir, base, 1, "")}
	for k := 2; k <= 3; k++ {
		nodes[k] = startRingNode(t, dir, base, k, seeds)
	}
	waitTopology(t, nodes[1].adminAddr, "3 normal members", time.Minute, settled(3))

	c1 := redis.NewClient(&redis.Options{Addr: nodes[1].addr, PoolSize: 8, MaxRetries: -1})
	defer c1.Close()
	static := envInt(t, "KURA_MEMBERSHIP_KEYS", 2000) // scripts/membership-long.sh raises it
	loadStatic(t, nodes[1].addr, static)
	work := startMonotonic([]*redis.Client{c1}, envInt(t, "KURA_MEMBERSHIP_WRITERS", 4), 250, static, seed)
	defer func() {
		select {
		case <-work.stop:
		default:
			work.stopAndWait()
		}
	}()
	pause := func(what string) {
		time.Sleep(time.Second)
		w, r, f := work.counts()
		t.Logf("%s: %d writes and %d reads acknowledged so far, %d failed", what, w, r, f)
	}
	pause("3 nodes")

	// Two nodes join at once: one change.
	var wg sync.WaitGroup
	joined := make([]*ringNode, 6)
	for k := 4; k <= 5; k++ {
		wg.Go(func() { joined[k] = startRingNode(t, dir, base, k, seeds) })
	}
	wg.Wait()
	nodes[4], nodes[5] = joined[4], joined[5]
	st := waitTopology(t, nodes[1].adminAddr, "5 normal members", 2*time.Minute, settled(5))
	t.Logf("joined at epoch %d", st.Topology.Epoch)
	pause("2 joined")

	// Decommission node 3 through its own admin address.
	out, err := runKura(t, "admin", "decommission", "--admin", nodes[3].adminAddr)
	if err != nil {
		t.Fatalf("decommission: %v\n%s", err, out)
	}
	st = waitTopology(t, nodes[1].adminAddr, "node 3 decommissioned", 2*time.Minute, settled(4))
	t.Logf("decommissioned at epoch %d", st.Topology.Epoch)
	pause("1 decommissioned")

	// Kill node 2 and remove it.
	killAndRemove(t, nodes[1], nodes[2])
	st = waitTopology(t, nodes[1].adminAddr, "node 2 removed", 2*time.Minute, settled(3))
	t.Logf("removed at epoch %d", st.Topology.Epoch)
	pause("1 removed")

	// Node 2 comes back with its old data: it learns from the log that it was removed,
	// and stops with an error that says to wipe it. It serves nothing meanwhile (it is
	// in no replica set), so the workload above is unaffected.
	back := exec.Command(kuraBin, append([]string{"server", "--listen", fmt.Sprintf("127.0.0.1:%d", base+2000+2),
		"--admin-listen", fmt.Sprintf("127.0.0.1:%d", base+3000+2)}, nodes[2].args...)...)
	backDone := make(chan error, 1)
	var backOut bytes.Buffer
	back.Stdout, back.Stderr = &backOut, &backOut
	if err := back.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { backDone <- back.Wait() }()
	select {
	case err := <-backDone:
		if err == nil || !strings.Contains(backOut.String(), "was removed from the cluster") || !strings.Contains(backOut.String(), "wipe its data directory") {
			t.Errorf("node 2 back after its removal: exit %v, want an error saying it was removed and to wipe it:\n%s", err, backOut.String())
		}
	case <-time.After(time.Minute):
		back.Process.Kill()
		<-backDone
		t.Errorf("node 2 back after its removal still runs after a minute:\n%s", backOut.String())
	}
	work.stopAndWait()
	acked := work.check(t)
	// Every acknowledged write reads back at QUORUM through every node left, and at ALL.
	for _, k := range []int{1, 4, 5} {
		c := redis.NewClient(&redis.Options{Addr: nodes[k].addr, MaxRetries: -1})
		ctx := context.Background()
		missing := 0
		for key, v := range acked {
			got, err := c.Get(ctx, key).Result()
			n, _ := strconv.Atoi(got)
			if err != nil || strings.HasPrefix(key, "s-") && got != v || !strings.HasPrefix(key, "s-") && n < work.acked[key] {
				missing++
				if missing < 5 {
					t.Errorf("through node %d: %s=%s acknowledged, reads %q (%v) at QUORUM", k, key, v, got, err)
				}
			}
		}
		if missing > 0 {
			t.Errorf("through node %d: %d of %d acknowledged keys read back older or not at all", k, missing, len(acked))
		}
		c.Close()
	}
	// At ALL, every replica answers: each holds the newest acknowledged value or newer
	// (the newest read may be a write acknowledged to no one).
	if missing := missingAtAll(t, c1, readAll(t, c1, acked)); missing > 0 {
		t.Errorf("%d keys read differently at ALL", missing)
	}
}

// TestStagedJoinAndReplace: a node started with --join=staged registers and waits, shown
// by kura admin plan, until kura admin commit starts its join; a node started with
// --replace takes the tokens of a dead one, streaming its ranges from the survivors.
// Real Redis clients write and read at QUORUM throughout; afterwards every acknowledged
// write reads back through every node and at ALL.
func TestStagedJoinAndReplace(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	base := freeBasePort(t, 6)
	dir := t.TempDir()
	seeds := "127.0.0.1:" + strconv.Itoa(base+1)
	nodes := map[int]*ringNode{1: startRingNode(t, dir, base, 1, "")}
	for k := 2; k <= 3; k++ {
		nodes[k] = startRingNode(t, dir, base, k, seeds)
	}
	waitTopology(t, nodes[1].adminAddr, "3 normal members", time.Minute, settled(3))
	const static = 1000
	loadStatic(t, nodes[1].addr, static)
	c1 := redis.NewClient(&redis.Options{Addr: nodes[1].addr, PoolSize: 8, MaxRetries: -1})
	defer c1.Close()
	work := startMonotonic([]*redis.Client{c1}, 4, 250, static, seed)

	// Staged: registered, and still joining after more than the batching window.
	nodes[4] = startRingNode(t, dir, base, 4, seeds, "--join", "staged")
	time.Sleep(4 * time.Second)
	st := waitTopology(t, nodes[1].adminAddr, "node 4 registered", time.Minute, func(st *admin.ClusterStatus) bool {
		for _, m := range st.Members {
			if m.ID == nodes[4].id {
				return m.Status == "joining"
			}
		}
		return false
	})
	if st.Topology.Change != nil {
		t.Fatalf("a change started for a staged joiner without a commit: %+v", st.Topology.Change)
	}
	out, err := runKura(t, "admin", "plan", "--admin", nodes[2].adminAddr)
	if err != nil || !strings.Contains(out, "join "+nodes[4].id) || !strings.Contains(out, "not started") {
		t.Fatalf("kura admin plan: %v\n%s", err, out)
	}
	if out, err = runKura(t, "admin", "commit", "--admin", nodes[2].adminAddr); err != nil || !strings.Contains(out, "started at epoch") {
		t.Fatalf("kura admin commit: %v\n%s", err, out)
	}
	waitTopology(t, nodes[1].adminAddr, "the staged node joined", 2*time.Minute, settled(4))

	// Replace: node 3 dies; node 5 takes its tokens.
	st, _ = fetchStatus(context.Background(), nodes[1].adminAddr)
	tokensOf := func(st *admin.ClusterStatus, id string) int {
		for _, m := range st.Members {
			if m.ID == id {
				return m.Tokens
			}
		}
		return -1
	}
	deadTokens := tokensOf(st, nodes[3].id)
	if err := nodes[3].kill(t, syscall.SIGKILL); err == nil {
		t.Fatal("node 3 exited cleanly after SIGKILL")
	}
	waitTopology(t, nodes[1].adminAddr, "node 3 down", time.Minute, func(st *admin.ClusterStatus) bool {
		for _, m := range st.Members {
			if m.ID == nodes[3].id {
				return !m.Up
			}
		}
		return false
	})
	nodes[5] = startRingNode(t, dir, base, 5, seeds, "--replace", nodes[3].id)
	st = waitTopology(t, nodes[1].adminAddr, "node 3 replaced", 2*time.Minute, func(st *admin.ClusterStatus) bool {
		for _, m := range st.Members {
			if m.ID == nodes[3].id && m.Status != "removed" {
				return false
			}
		}
		return settled(4)(st)
	})
	if got := tokensOf(st, nodes[5].id); got != deadTokens {
		t.Errorf("the replacement holds %d tokens, the dead node held %d", got, deadTokens)
	}
	time.Sleep(time.Second)
	work.stopAndWait()
	acked := work.check(t)
	for _, k := range []int{1, 2, 4, 5} {
		c := redis.NewClient(&redis.Options{Addr: nodes[k].addr, MaxRetries: -1})
		missing := 0
		for key, v := range acked {
			if got, err := c.Get(context.Background(), key).Result(); err != nil || got != v && strings.HasPrefix(key, "s-") {
				missing++
			} else if n, _ := strconv.Atoi(got); !strings.HasPrefix(key, "s-") && n < work.acked[key] {
				missing++
			}
		}
		c.Close()
		if missing > 0 {
			t.Errorf("through node %d: %d of %d acknowledged keys read back older or not at all", k, missing, len(acked))
		}
	}
	if missing := missingAtAll(t, c1, readAll(t, c1, acked)); missing > 0 {
		t.Errorf("%d keys read differently at ALL", missing)
	}
}

// envInt returns the integer in environment variable name, or def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// readAll returns what c reads now for every key of acked: the newest values, which ALL
// must then agree on.
func readAll(t *testing.T, c *redis.Client, acked map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for key := range acked {
		got, _ := c.Get(context.Background(), key).Result()
		out[key] = got
	}
	return out
}
