package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
)

// Helpers of the membership fault tests (membership_faults_test.go): a cluster of real
// `kura server --ring-source=log` processes, its data, and what its streams and progress
// files say.

// Sizes of the data loaded before a change: faultStatic keys the workload reads
// throughout (s-i = v-i, as in TestMembershipChangesUnderQuorumClients), and faultBulk
// keys of about 1 KiB that make each node's share a few MiB, so that a stream at a
// limit of a few hundred KiB/s lasts seconds.
const (
	faultStatic = 1000
	faultBulk   = 3000
)

// faultBulkValue is bulk key b-i's value, about 1 KiB.
func faultBulkValue(i int) string {
	return fmt.Sprintf("b-%d-", i) + strings.Repeat(string(rune('a'+i%26)), 1000)
}

// faultSeed returns a test's seed, from the environment variable env when set, and logs it.
func faultSeed(t *testing.T, env string) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv(env); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", env, err)
		}
	}
	t.Logf("seed %d (%s=%d to repeat)", seed, env, seed)
	return seed
}

// faultCluster is a test's ring nodes by number, in one directory and one block of ports.
type faultCluster struct {
	t     *testing.T
	dir   string
	base  int
	seeds string // node 1's gossip address
	nodes map[int]*ringNode
	// earlier holds the logs of the runs of each node before its last restart.
	earlier map[int]string
}

// newFaultCluster starts nodes 1 to size, each with the flags extra, on a port block for
// block nodes, and waits until they are all normal members.
func newFaultCluster(t *testing.T, size, block int, extra ...string) *faultCluster {
	t.Helper()
	base := freeBasePort(t, block+1)
	fc := &faultCluster{t: t, dir: t.TempDir(), base: base, seeds: "127.0.0.1:" + strconv.Itoa(base+1), nodes: map[int]*ringNode{}, earlier: map[int]string{}}
	if dir := os.Getenv("KURA_FAULT_LOGS"); dir != "" {
		// Keep every node's log (each run of it) for a look after the test.
		t.Cleanup(func() {
			for k, n := range fc.nodes {
				path := filepath.Join(dir, fmt.Sprintf("%s-n%d.log", t.Name(), k))
				_ = os.WriteFile(path, []byte(fc.earlier[k]+n.logs()), 0o644)
			}
		})
	}
	fc.nodes[1] = startRingNode(t, fc.dir, base, 1, "", extra...)
	for k := 2; k <= size; k++ {
		fc.nodes[k] = startRingNode(t, fc.dir, base, k, fc.seeds, extra...)
	}
	waitTopology(t, fc.nodes[1].adminAddr, fmt.Sprintf("%d normal members", size), time.Minute, settled(size))
	return fc
}

// start starts node k, joining through node 1.
func (fc *faultCluster) start(k int, extra ...string) *ringNode {
	fc.t.Helper()
	fc.nodes[k] = startRingNode(fc.t, fc.dir, fc.base, k, fc.seeds, extra...)
	return fc.nodes[k]
}

// restart starts node k again, after it was killed, with the same command line: the same
// data directory, ports and flags.
func (fc *faultCluster) restart(k int) *ringNode {
	fc.t.Helper()
	old := fc.nodes[k]
	if old.cmd.ProcessState == nil {
		fc.t.Fatalf("node %d is still running", k)
	}
	p := startKuraAt(fc.t, old.addr, old.adminAddr, old.args...)
	n := &ringNode{proc: p, id: old.id, args: old.args}
	if m := regexpID.FindStringSubmatch(p.logs()); m == nil || m[1] != old.id {
		fc.t.Fatalf("node %d restarted with another ID (%v, was %s):\n%s", k, m, old.id, p.logs())
	}
	fc.earlier[k] += old.logs()
	fc.nodes[k] = n
	return n
}

// waitMember waits until node via's status shows node k as ok accepts it.
func (fc *faultCluster) waitMember(via, k int, what string, ok func(admin.MemberStatus) bool) {
	fc.t.Helper()
	waitTopology(fc.t, fc.nodes[via].adminAddr, fmt.Sprintf("node %d %s", k, what), time.Minute, func(st *admin.ClusterStatus) bool {
		for _, m := range st.Members {
			if m.ID == fc.id(k) {
				return ok(m)
			}
		}
		return false
	})
}

func memberUp(m admin.MemberStatus) bool   { return m.Up }
func memberDown(m admin.MemberStatus) bool { return !m.Up }

// client returns a QUORUM client of node k, closed when the test ends.
func (fc *faultCluster) client(k int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: fc.nodes[k].addr, PoolSize: 8, MaxRetries: -1})
	fc.t.Cleanup(func() { c.Close() })
	return c
}

// load writes the static and bulk keys through node k at QUORUM.
func (fc *faultCluster) load(k int) {
	fc.t.Helper()
	ctx := context.Background()
	c := faultBulkClient(fc.nodes[k].addr)
	defer c.Close()
	for lo := 0; lo < faultStatic+faultBulk; lo += 100 {
		pipe := c.Pipeline()
		for i := lo; i < min(lo+100, faultStatic+faultBulk); i++ {
			if i < faultStatic {
				pipe.Set(ctx, fmt.Sprintf("s-%d", i), fmt.Sprintf("v-%d", i), 0)
			} else {
				pipe.Set(ctx, fmt.Sprintf("b-%d", i-faultStatic), faultBulkValue(i-faultStatic), 0)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			fc.t.Fatalf("loading the keys: %v", err)
		}
	}
}

// faultBulkClient is a client for pipelines of a hundred commands at QUORUM, with a read
// timeout for a loaded machine (each write is fsynced at QUORUM).
func faultBulkClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2, ReadTimeout: 30 * time.Second, MaxRetries: -1})
}

// id returns node k's ID.
func (fc *faultCluster) id(k int) string { return fc.nodes[k].id }

// number returns the number of the node with ID id, 0 if none.
func (fc *faultCluster) number(id string) int {
	for k, n := range fc.nodes {
		if n.id == id {
			return k
		}
	}
	return 0
}

// faultWork starts the QUORUM workload on c and returns it with a stop that may be
// called more than once (it is called when the test ends too).
func faultWork(t *testing.T, c *redis.Client, seed uint64) (*monotonic, func()) {
	work := startMonotonic([]*redis.Client{c}, 4, 250, faultStatic, seed)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			work.stopAndWait()
		}
	}
	t.Cleanup(stop)
	return work, stop
}

// checkNothingLost checks, once work is stopped, that no read of it returned less than
// was acknowledged, that it wrote throughout, and that every acknowledged write (the
// workload's, the loaded keys, and extra's exact values) reads back at QUORUM through
// each node of live and at ALL.
func (fc *faultCluster) checkNothingLost(work *monotonic, extra map[string]string, live ...int) {
	t := fc.t
	t.Helper()
	w, r, f := work.counts()
	t.Logf("the workload: %d writes and %d reads acknowledged, %d failed", w, r, f)
	if len(work.violations) > 0 {
		t.Errorf("%d reads returned less than was acknowledged, e.g. %v", len(work.violations), work.violations[:min(5, len(work.violations))])
	}
	if w < 100 {
		t.Errorf("only %d writes acknowledged: the workload did not run through the change", w)
	}
	exact := map[string]string{}
	for i := range faultStatic {
		exact[fmt.Sprintf("s-%d", i)] = fmt.Sprintf("v-%d", i)
	}
	for i := range faultBulk {
		exact[fmt.Sprintf("b-%d", i)] = faultBulkValue(i)
	}
	for k, v := range extra {
		exact[k] = v
	}
	work.mu.Lock()
	counters := maps.Clone(work.acked)
	work.mu.Unlock()
	keys := make([]string, 0, len(exact)+len(counters))
	for k := range exact {
		keys = append(keys, k)
	}
	for k := range counters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var atAll map[string]string
	for _, k := range live {
		c := faultBulkClient(fc.nodes[k].addr)
		got, errs := faultReadAll(c, keys)
		c.Close()
		missing := 0
		for _, key := range keys {
			ok := errs[key] == nil
			if v, isExact := exact[key]; isExact {
				ok = ok && got[key] == v
			} else {
				n, err := strconv.Atoi(got[key])
				ok = ok && err == nil && n >= counters[key]
			}
			if !ok {
				missing++
				if missing <= 5 {
					want := exact[key]
					if want == "" {
						want = strconv.Itoa(counters[key])
					}
					t.Errorf("through node %d at QUORUM: %s acknowledged as %.40q, reads %.40q (%v)", k, key, want, got[key], errs[key])
				}
			}
		}
		if missing > 0 {
			t.Errorf("through node %d: %d of %d acknowledged keys read back older or not at all at QUORUM", k, missing, len(keys))
		}
		if atAll == nil {
			atAll = got // the newest, possibly a write acknowledged to no one
		}
	}
	c := redis.NewClient(&redis.Options{Addr: fc.nodes[live[0]].addr, MaxRetries: -1})
	defer c.Close()
	if missing := missingAtAll(t, c, atAll); missing > 0 {
		t.Errorf("%d of %d keys read differently at ALL", missing, len(atAll))
	}
	t.Logf("%d acknowledged keys read back at QUORUM through nodes %v and at ALL", len(keys), live)
}

// faultReadAll reads keys through c at the connection's level, pipelined, and returns the
// values found and the errors (redis.Nil for a key not found).
func faultReadAll(c *redis.Client, keys []string) (map[string]string, map[string]error) {
	ctx := context.Background()
	got, errs := map[string]string{}, map[string]error{}
	for lo := 0; lo < len(keys); lo += 100 {
		pipe := c.Pipeline()
		cmds := make([]*redis.StringCmd, 0, 100)
		for _, k := range keys[lo:min(lo+100, len(keys))] {
			cmds = append(cmds, pipe.Get(ctx, k))
		}
		_, _ = pipe.Exec(ctx)
		for _, cmd := range cmds {
			key := cmd.Args()[1].(string)
			if v, err := cmd.Result(); err != nil {
				errs[key] = err
			} else {
				got[key] = v
			}
		}
	}
	return got, errs
}

// faultMetric returns the value of an unlabelled metric on a node's admin address.
func faultMetric(t *testing.T, adminAddr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", adminAddr, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s of %s: %v", name, adminAddr, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s on %s", name, adminAddr)
	return 0
}

// faultProgress is what the test reads of a stream's progress file
// (<data-dir>/streams/change-<ID>/transfer-<index>.json, package stream's record).
type faultProgress struct {
	Bytes int64 `json:"bytes"`
	Done  bool  `json:"done"`
}

// faultReadProgress returns the progress files under a node's streams directory, by path.
// A file being replaced is skipped (the streamer writes beside it and renames).
func faultReadProgress(streams string) map[string]faultProgress {
	paths, _ := filepath.Glob(filepath.Join(streams, "change-*", "transfer-*.json"))
	out := map[string]faultProgress{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		var rec faultProgress
		if err == nil && json.Unmarshal(b, &rec) == nil {
			out[p] = rec
		}
	}
	return out
}

// faultFollowProgress polls the progress files under each of streams until done reports true
// (checked every 200 ms) or limit passes, and returns every file's largest record seen,
// starting from from: the node discards a change's files once it ends, so a test that
// wants each transfer's final size reads them while the change runs.
func faultFollowProgress(t *testing.T, from map[string]faultProgress, limit time.Duration, done func() bool, streams ...string) map[string]faultProgress {
	t.Helper()
	out := maps.Clone(from)
	deadline := time.Now().Add(limit)
	for polls := 0; ; polls++ {
		for _, dir := range streams {
			for p, r := range faultReadProgress(dir) {
				if r.Bytes >= out[p].Bytes {
					out[p] = r
				}
			}
		}
		if polls%8 == 0 && done() {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change did not end in %v", limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// faultReadAllProgress reads the progress files under each of streams.
func faultReadAllProgress(streams ...string) map[string]faultProgress {
	out := map[string]faultProgress{}
	for _, dir := range streams {
		maps.Copy(out, faultReadProgress(dir))
	}
	return out
}

func faultProgressTotals(recs map[string]faultProgress) (bytes int64, done int) {
	for _, r := range recs {
		bytes += r.Bytes
		if r.Done {
			done++
		}
	}
	return bytes, done
}

// faultWaitMidChange polls adminAddr until its change in flight has at least one transfer in
// four done and at least two not done (progress reports how many are done; nil uses the
// change's own count). It fails the test if the change ends first: the stream is too
// fast to be interrupted, and the limit must come down.
func faultWaitMidChange(t *testing.T, adminAddr string, progress func() int) *admin.ClusterStatus {
	t.Helper()
	seen := false
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		st, err := fetchStatus(context.Background(), adminAddr)
		if err == nil && st.Topology != nil {
			c := st.Topology.Change
			if c == nil && seen {
				t.Fatalf("the change ended before it could be interrupted: lower the stream limit or load more")
			}
			if c != nil {
				seen = true
				done := c.Done
				if progress != nil {
					done = progress()
				}
				if done >= max(1, c.Transfers/4) {
					if done > c.Transfers-2 {
						t.Fatalf("the change is nearly done (%d of %d transfers) before it could be interrupted: lower the stream limit or load more", done, c.Transfers)
					}
					return st
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no change half-way through on %s in 90 s", adminAddr)
	return nil
}

func faultDescribeStreams(ss []admin.StreamStatus) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, " [%d from %s: %d B of ~%d B, resumed from %d, failures %d, done %v]", s.Index, s.Source, s.Bytes, s.Estimate, s.ResumedFrom, s.Failures, s.Done)
	}
	return b.String()
}

// streamSources returns the sources of the streams the given nodes run now, by node
// number, and how many of those streams there are.
func (fc *faultCluster) streamSources(nodes ...int) (map[string]int, int) {
	sources, n := map[string]int{}, 0
	for _, k := range nodes {
		st, err := fetchStatus(context.Background(), fc.nodes[k].adminAddr)
		if err != nil || st.Topology == nil {
			continue
		}
		for _, s := range st.Topology.Streams {
			if !s.Done {
				sources[s.Source]++
				n++
			}
		}
	}
	return sources, n
}

// TestRestartedLeavingNodeCompletesItsDecommission: node 4 of 4 holding data is
// decommissioned and SIGKILLed half-way through its transfers, then started again with
