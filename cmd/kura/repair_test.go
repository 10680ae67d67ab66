package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/machine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// cutInternode resets every TCP connection to a node's internode port (iptables REJECT
// with a reset, which a plain DROP is not: TCP would only wait and deliver the writes on
// heal) and returns what heals it. The node's gossip is left alone, so its peers hold it
// up and keep sending it writes, which fail. It skips the test without root or iptables,
// except under CI=true, where it fails it (.ci/run installs iptables).
func cutInternode(t *testing.T, port int) (heal func()) {
	t.Helper()
	rule := []string{"INPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", strconv.Itoa(port), "-j", "REJECT", "--reject-with", "tcp-reset"}
	out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("cannot cut the internode port with iptables (root and iptables needed): %v: %s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			if out, err := exec.Command("iptables", append([]string{"-D"}, rule...)...).CombinedOutput(); err != nil {
				t.Errorf("healing the cut: %v: %s", err, out)
			}
		})
	}
	t.Cleanup(heal)
	return heal
}

// storeRows opens a stopped node's engine and returns every row it holds, by engine key,
// encoded.
func storeRows(t *testing.T, name, dir string) map[string][]byte {
	t.Helper()
	e, err := catalog.Open(name, dir, catalog.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer e.Close()
	rows := map[string][]byte{}
	err = engine.Scanner{Engine: e}.Scan(nil, nil, func(k []byte, r row.Row) error {
		rows[string(k)] = row.AppendEncode(nil, &r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

var repairLineRE = regexp.MustCompile(`repair done: (\d+)/(\d+) ranges, (\d+) sessions \((\d+) equal, (\d+) failed, \d+ retried\), (\d+) rows differing`)

// Issue 36's must-show: a 3-host cluster (an lsm, a btree and an lsm node) where node 3's
// internode connections are reset while a real Redis client writes and deletes at QUORUM
// through nodes 1 and 2, its hints all dropped (--hint-max-bytes 1). After the cut heals,
// `kura admin repair --cluster` makes every replica identical: the three stores, opened
// once the nodes have stopped, hold the same rows; every acknowledged write is in each,
// nothing deleted is visible in any; a second repair finds every range equal; the repair
// reports its bytes on the wire against the bytes that differed; and node 1's repair
// marks for node 3 (its dropped hints) are cleared.
func TestRepairAfterAPartitionMakesEveryReplicaIdentical(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	base := freeBasePort(t, 4)
	dir := t.TempDir()
	seeds := "127.0.0.1:" + strconv.Itoa(base+1)
	engines := map[int]string{1: "lsm", 2: "btree", 3: "lsm"}
	extra := func(k int) []string { return []string{"--engine", engines[k], "--hint-max-bytes", "1"} }
	nodes := map[int]*ringNode{1: startRingNode(t, dir, base, 1, "", extra(1)...)}
	for k := 2; k <= 3; k++ {
		nodes[k] = startRingNode(t, dir, base, k, seeds, extra(k)...)
	}
	waitTopology(t, nodes[1].adminAddr, "3 normal members", time.Minute, settled(3))
	const deletes = 200
	loadStatic(t, nodes[1].addr, 300)
	c1 := redis.NewClient(&redis.Options{Addr: nodes[1].addr, PoolSize: 8, MaxRetries: -1})
	defer c1.Close()
	c2 := redis.NewClient(&redis.Options{Addr: nodes[2].addr, PoolSize: 8, MaxRetries: -1})
	defer c2.Close()
	ctx := context.Background()
	for i := range deletes {
		if err := c1.Set(ctx, fmt.Sprintf("d-%d", i), strings.Repeat("x", 500), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	work := startMonotonic([]*redis.Client{c1, c2}, 4, 200, 300, seed)
	time.Sleep(time.Second)
	heal := cutInternode(t, base+1000+3)
	var deleted []string
	rng := rand.New(rand.NewPCG(seed, 36))
	for _, i := range rng.Perm(deletes)[:deletes/2] {
		k := fmt.Sprintf("d-%d", i)
		if err := c2.Del(ctx, k).Err(); err == nil {
			deleted = append(deleted, k)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	w, _, _ := work.counts()
	t.Logf("cut for the deletes and %d writes acknowledged so far; %d deletes acknowledged", w, len(deleted))
	heal()
	work.stopAndWait()
	acked := work.check(t)
	if len(deleted) < deletes/4 {
		t.Fatalf("only %d deletes acknowledged", len(deleted))
	}
	st := waitTopology(t, nodes[1].adminAddr, "node 1 holds repair marks for node 3", 30*time.Second, func(st *admin.ClusterStatus) bool {
		return len(st.Repairs) > 0
	})
	if st.Repairs[0].Replica != nodes[3].id {
		t.Fatalf("node 1 marks %s for repair, not node 3 (%s)", st.Repairs[0].Replica, nodes[3].id)
	}

	// A repair covers the marks of writes lost more than machine.RefillSkew before it
	// started (the margin for the nodes' clocks): the test waits that out, so that the
	// marks of the last writes lost in the cut go too.
	time.Sleep(machine.RefillSkew + time.Second)
	out, err := runKura(t, "admin", "repair", "--cluster", "--admin", nodes[1].adminAddr)
	t.Logf("kura admin repair --cluster:\n%s", out)
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	var differing int
	for _, m := range repairLineRE.FindAllStringSubmatch(out, -1) {
		if m[1] != m[2] || m[5] != "0" {
			t.Fatalf("a node's repair did not cover its ranges: %s", m[0])
		}
		n, _ := strconv.Atoi(m[6])
		differing += n
	}
	if n := len(repairLineRE.FindAllString(out, -1)); n != 3 {
		t.Fatalf("%d nodes reported a repair, want 3", n)
	}
	if differing < len(deleted) {
		t.Fatalf("the repair found %d rows differing; node 3 missed %d deletes alone", differing, len(deleted))
	}
	if !strings.Contains(out, "× the bytes differing") {
		t.Fatal("the repair did not report its bytes against the bytes that differed")
	}
	if !strings.Contains(out, "every node holds every write acknowledged before") {
		t.Fatal("the cluster repair did not announce what it covered")
	}
	waitTopology(t, nodes[1].adminAddr, "node 1 clears its repair marks for node 3", 30*time.Second, func(st *admin.ClusterStatus) bool {
		return len(st.Repairs) == 0
	})
	out, err = runKura(t, "admin", "repair", "--cluster", "--admin", nodes[2].adminAddr)
	if err != nil {
		t.Fatalf("second repair: %v\n%s", err, out)
	}
	for _, m := range repairLineRE.FindAllStringSubmatch(out, -1) {
		if m[3] != m[4] || m[6] != "0" {
			t.Fatalf("a second repair found differences: %s", m[0])
		}
	}

	for k := 1; k <= 3; k++ {
		if err := nodes[k].kill(t, syscall.SIGTERM); err != nil {
			t.Logf("node %d exited: %v", k, err)
		}
	}
	var stores [4]map[string][]byte
	for k := 1; k <= 3; k++ {
		stores[k] = storeRows(t, engines[k], filepath.Join(dir, fmt.Sprintf("n%d", k), engines[k]))
	}
	for k := 2; k <= 3; k++ {
		if len(stores[k]) != len(stores[1]) {
			t.Errorf("node %d holds %d rows, node 1 %d", k, len(stores[k]), len(stores[1]))
		}
		for key, enc := range stores[1] {
			if !bytes.Equal(stores[k][key], enc) {
				_, ck, _ := ring.SplitEngineKey([]byte(key))
				t.Fatalf("node %d's row of %q differs from node 1's", k, ck)
			}
		}
	}
	now := time.Now().UnixMicro()
	for k := 1; k <= 3; k++ {
		visible := func(key string) (string, bool) {
			enc, ok := stores[k][string(ring.EngineKey([]byte(key)))]
			if !ok {
				return "", false
			}
			r, err := row.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			cells := r.Visible(now)
			if len(cells) == 0 {
				return "", false
			}
			return string(cells[0].Value), true
		}
		for key, want := range acked {
			got, ok := visible(key)
			if !ok {
				t.Fatalf("node %d lacks acknowledged %s=%s", k, key, want)
			}
			if strings.HasPrefix(key, "m") {
				g, _ := strconv.Atoi(got)
				w, _ := strconv.Atoi(want)
				if g < w {
					t.Fatalf("node %d holds %s=%s, %s acknowledged", k, key, got, want)
				}
			} else if got != want {
				t.Fatalf("node %d holds %s=%s, %s acknowledged", k, key, got, want)
			}
		}
		for _, key := range deleted {
			if v, ok := visible(key); ok {
				t.Fatalf("node %d: deleted %s came back as %q", k, key, v)
			}
		}
	}
	t.Logf("three identical stores of %d rows; %d acknowledged writes and %d deletes in each", len(stores[1]), len(acked), len(deleted))
}
