package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
)

// beforeEntryV2 is the last commit before the metadata log's entry version 2
// (meta.StartChange.Handoffs, f04c3f9): a binary built from it reads version 1 entries
// only, and gossips no MetaVersion.
const beforeEntryV2 = "b174286272a6c77f19837c0615231cc27dfea09d"

// buildKuraAt builds the kura binary of commit from this repository's history (git
// archive, then go build, without -race) and returns its path. A checkout without the
// commit (a shallow clone, an export) skips the test, saying so: it cannot build the old
// version there. A clone of the repository has it.
func buildKuraAt(t *testing.T, commit string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("SKIPPED, no mixed-version run: not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("SKIPPED, no mixed-version run: commit %s is not in this checkout's history (a shallow clone?): %v", commit, err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	if err := extract.Start(); err != nil {
		t.Fatal(err)
	}
	var archiveErr strings.Builder
	archive.Stderr = &archiveErr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, archiveErr.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("extracting %s: %v", commit, err)
	}
	bin := filepath.Join(t.TempDir(), "kura-"+commit[:7])
	build := exec.Command("go", "build", "-o", bin, "./cmd/kura")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kura at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// tokensByOwner counts the ring's tokens of each member in st.
func tokensByOwner(st *admin.ClusterStatus) map[string]int {
	out := map[string]int{}
	for _, tk := range st.Tokens {
		out[tk.ID]++
	}
	return out
}

// TestRemovalsAcrossAnUpgradeFromBeforeHandoffs upgrades a cluster node by node across
// the metadata log's entry version 2. Five nodes, one of them the binary from before it;
// a real Redis client writes and reads at QUORUM throughout. A node is killed and removed
// while the old binary is a member: the change must be one it reads (version 1, no token
// handoffs: every survivor keeps exactly its own tokens; with five nodes move.HandOff
// mostly keeps the ring successors anyway, so TestHandOffOnlyWhenEveryLiveMemberReadsIt
// tests the planner's rule itself), and the old binary follows the change to the end.
// The old node is then restarted on the new binary over the same data directory (its log
// holds version 1 entries), and a second node is killed and removed. Afterwards every
// acknowledged write reads back at QUORUM through the upgraded node and at ALL.
func TestRemovalsAcrossAnUpgradeFromBeforeHandoffs(t *testing.T) {
	oldBin := buildKuraAt(t, beforeEntryV2)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	base := freeBasePort(t, 5)
	dir := t.TempDir()
	seeds := "127.0.0.1:" + strconv.Itoa(base+1)
	nodes := map[int]*ringNode{1: startRingNode(t, dir, base, 1, "")}
	for k := 2; k <= 5; k++ {
		if k == 4 {
			nodes[k] = startRingNodeBin(t, oldBin, dir, base, k, seeds)
		} else {
			nodes[k] = startRingNode(t, dir, base, k, seeds)
		}
	}
	waitTopology(t, nodes[1].adminAddr, "5 normal members", 2*time.Minute, settled(5))

	c1 := redis.NewClient(&redis.Options{Addr: nodes[1].addr, PoolSize: 8, MaxRetries: -1})
	defer c1.Close()
	const static = 1000
	loadStatic(t, nodes[1].addr, static)
	work := startMonotonic([]*redis.Client{c1}, 4, 250, static, seed)
	defer func() {
		select {
		case <-work.stop:
		default:
			work.stopAndWait()
		}
	}()

	remove := func(k, left int) *admin.ClusterStatus {
		t.Helper()
		killAndRemove(t, nodes[1], nodes[k])
		delete(nodes, k)
		return waitTopology(t, nodes[1].adminAddr, fmt.Sprintf("node %d removed", k), 2*time.Minute, settled(left))
	}

	// Users cannot change cluster-wide while a live member's build does not read them:
	// the change is refused and nothing is proposed.
	setUser := func(c *redis.Client) error {
		return c.Do(context.Background(), "ACL", "SETUSER", "upgraded", "on", ">pw", "~*", "+@all").Err()
	}
	if err := setUser(c1); err == nil || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("ACL SETUSER with an old binary a member: %v, want a refusal that says to upgrade", err)
	}

	before, err := fetchStatus(context.Background(), nodes[1].adminAddr)
	if err != nil {
		t.Fatal(err)
	}
	owned := tokensByOwner(before)
	st := remove(3, 4)
	t.Logf("node 3 removed at epoch %d with the old binary a member", st.Topology.Epoch)
	after := tokensByOwner(st)
	for _, k := range []int{1, 2, 4, 5} {
		if id := nodes[k].id; after[id] != owned[id] {
			t.Errorf("node %d owns %d tokens after the removal, %d before: a token was handed off while a member reads only entry version 1", k, after[id], owned[id])
		}
	}
	// The old binary applied the change: it too sees four normal members and no change.
	waitTopology(t, nodes[4].adminAddr, "the old binary follows the removal", time.Minute, settled(4))

	// Upgrade node 4: the new binary over the old one's data directory and log.
	if err := nodes[4].kill(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the old binary did not stop cleanly: %v\n%s", err, nodes[4].logs())
	}
	nodes[4] = startRingNode(t, dir, base, 4, seeds)
	waitTopology(t, nodes[1].adminAddr, "node 4 back on the new binary", time.Minute, settled(4))
	// Every member reads users now: a change made on node 1 lets the user in on node 4.
	var userErr error
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if userErr = setUser(c1); userErr == nil {
			break // gossip may take a moment to bring node 4's new meta version
		}
	}
	if userErr != nil {
		for k, n := range nodes {
			t.Logf("node %d is %s", k, n.id)
		}
		if st, err := fetchStatus(context.Background(), nodes[1].adminAddr); err == nil {
			for _, m := range st.Members {
				t.Logf("node 1 sees %s %s up=%v meta_version=%d", m.ID, m.Status, m.Up, m.MetaVersion)
			}
		}
		t.Fatalf("ACL SETUSER once every member is upgraded: %v", userErr)
	}
	u4 := redis.NewClient(&redis.Options{Addr: nodes[4].addr, Username: "upgraded", Password: "pw", MaxRetries: -1})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := u4.Ping(context.Background()).Err(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the user made on node 1 on the upgraded node 4: %v", err)
		}
	}
	u4.Close()

	st = remove(2, 3)
	t.Logf("node 2 removed at epoch %d, every member on the new binary", st.Topology.Epoch)
	waitTopology(t, nodes[4].adminAddr, "the upgraded node follows the second removal", time.Minute, settled(3))
	work.stopAndWait()

	acked := work.check(t)
	c4 := redis.NewClient(&redis.Options{Addr: nodes[4].addr, MaxRetries: -1})
	defer c4.Close()
	missing := 0
	for key, v := range acked {
		got, err := c4.Get(context.Background(), key).Result()
		n, _ := strconv.Atoi(got)
		if err != nil || strings.HasPrefix(key, "s-") && got != v || !strings.HasPrefix(key, "s-") && n < work.acked[key] {
			if missing++; missing < 5 {
				t.Errorf("through the upgraded node: %s=%s acknowledged, reads %q (%v) at QUORUM", key, v, got, err)
			}
		}
	}
	if missing > 0 {
		t.Errorf("through the upgraded node: %d of %d acknowledged keys read back older or not at all", missing, len(acked))
	}
	if missing := missingAtAll(t, c1, readAll(t, c1, acked)); missing > 0 {
		t.Errorf("%d keys read differently at ALL", missing)
	}
}
