package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

func heteroConfig(t *testing.T, eng, host, seed string) config.Config {
	c := clusterConfig(t, host, seed)
	c.Engine = eng
	c.Placement, c.Routing = "engine-diverse", "engine-aware"
	// No test here waits out a timeout, and under a loaded CI machine one of 300 synced
	// writes once took over clusterConfig's second.
	c.RequestTimeout = 10 * time.Second
	return c
}

// startHeteroTrio starts an lsm, a btree and a memory node on hosts h1..h3 and waits
// until each sees all three; it returns them and the btree's and memory node's configs,
// for restarts. The caller shuts them down.
func startHeteroTrio(t *testing.T) (n1, n2, n3 *Node, cfg2, cfg3 config.Config) {
	t.Helper()
	n1, err := Start(heteroConfig(t, "lsm", "h1", ""), keptLog(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	cfg2 = heteroConfig(t, "btree", "h2", n1.GossipAddr())
	if n2, err = Start(cfg2, keptLog(t, "n2")); err != nil {
		n1.Shutdown(context.Background())
		t.Fatal(err)
	}
	cfg3 = heteroConfig(t, "memory", "h3", n1.GossipAddr())
	if n3, err = Start(cfg3, keptLog(t, "n3")); err != nil {
		n1.Shutdown(context.Background())
		n2.Shutdown(context.Background())
		t.Fatal(err)
	}
	for _, n := range []*Node{n1, n2, n3} {
		eventually(t, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	return n1, n2, n3, cfg2, cfg3
}

// A restarted in-memory node is empty. Here a write was acknowledged by the write-optimized
// and in-memory replicas while the read-optimized one never got it (its asynchronous write
// "had not landed"): once the in-memory node restarts, the read-optimized and in-memory
// replicas, the ones engine-aware reads ask, would both answer "not found". The node comes
// back refilling, reads skip it and find the write on the write-optimized replica, and once
// it has pulled its ranges it holds everything and serves reads again.
func TestRestartedMemoryNodeRefillsBeforeServingReads(t *testing.T) {
	ctx := context.Background()
	n1, n2, n3, cfg2, cfg3 := startHeteroTrio(t)
	defer n1.Shutdown(ctx)
	var err error
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	const keys = 300
	for i := range keys {
		if err := c1.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// "x" reaches the lsm and memory replicas only: the btree node is down, and the hint
	// the coordinator keeps for it is dropped.
	id2, id3 := ring.NodeID(n2.ID()), ring.NodeID(n3.ID())
	if err := n2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n2 is marked down", func() bool { return !n1.cluster.member(id2).Up })
	if err := c1.Set(ctx, "x", "acknowledged", 0).Err(); err != nil {
		t.Fatal(err)
	}
	n1.cluster.hintq.Sync() // the coordinator stores hints off the request path
	if _, err := n1.cluster.hints.Replay(string(id2), time.Now(), 100, func([]row.Mutation) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n2, err = Start(cfg2, keptLog(t, "n2 restarted")); err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown(ctx)
	eventually(t, "n2 is up again", func() bool { return n1.cluster.member(id2).Up })

	// The memory node restarts empty and holds its refill until released.
	release := make(chan struct{})
	defer func(g func()) { refillGate = g }(refillGate)
	refillGate = func() { <-release }
	if err := n3.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n3 is marked down", func() bool { return !n1.cluster.member(id3).Up })
	if n3, err = Start(cfg3, keptLog(t, "n3 restarted")); err != nil {
		close(release)
		t.Fatal(err)
	}
	defer n3.Shutdown(ctx)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	eventually(t, "n1 sees n3 up and refilling", func() bool {
		m := n1.cluster.member(id3)
		return m.Up && m.Refilling
	})
	if st := n1.cluster.status(); !slices.ContainsFunc(st.Members, func(m admin.MemberStatus) bool { return m.ID == string(id3) && m.Refilling }) {
		t.Errorf("status does not show n3 refilling: %+v", st.Members)
	}
	if _, found, _ := n3.cluster.handler.Engine.Get(ring.EngineKey([]byte("x"))); found {
		t.Fatal("the restarted memory node is not empty: the test would prove nothing")
	}
	// Two guards: the replica itself refuses reads (for coordinators that have not heard
	// yet), and coordinators that have heard do not ask it.
	if _, err := n3.cluster.handler.Read([]byte("x"), false); !errors.Is(err, replica.ErrRefilling) {
		t.Fatalf("a refilling replica answered a read: %v", err)
	}
	for _, r := range n1.cluster.machine.Replicas([]byte("x")) {
		if r.ID == id3 && !r.Refilling {
			t.Fatal("n1's replica set does not mark n3 refilling")
		}
	}
	c3 := redis.NewClient(&redis.Options{Addr: n3.Addr()})
	defer c3.Close()
	for name, c := range map[string]*redis.Client{"n1": c1, "n3": c3} {
		if v, err := getRetryingUnavailable(ctx, c, "x"); err != nil || v != "acknowledged" {
			t.Fatalf("GET x through %s while n3 refills: %q, %v", name, v, err)
		}
	}

	close(release)
	released = true
	eventually(t, "n1 sees n3 refilled", func() bool { return !n1.cluster.member(id3).Refilling })
	for i := range keys {
		key := fmt.Sprint("k", i)
		if r, err := n3.cluster.handler.Read([]byte(key), false); err != nil || !r.Found {
			t.Fatalf("after the refill n3 lacks %s: %v", key, err)
		}
	}
	if r, _ := n3.cluster.handler.Read([]byte("x"), false); !r.Found {
		t.Fatal("after the refill n3 lacks x")
	}
	if v, err := getRetryingUnavailable(ctx, c3, "x"); err != nil || v != "acknowledged" {
		t.Fatalf("GET x through n3 after the refill: %q, %v", v, err)
	}
}

// getRetryingUnavailable reads key, retrying for a while as long as the coordinator
// answers UNAVAILABLE: a failure detector may briefly doubt a live node on a loaded
// machine. Any other answer, a wrong value included, is returned at once.
func getRetryingUnavailable(ctx context.Context, c *redis.Client, key string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.Get(ctx, key).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE") || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A read-optimized replica that missed writes (down while they were made, its hints
// dropped) is rebuilt on demand: POST /rebuild makes it refill from its peers, reads skip
// it meanwhile, a second rebuild is refused while one runs, and afterwards it holds every
// row.
func TestRebuildRefillsALaggingReplicaFromItsPeers(t *testing.T) {
	ctx := context.Background()
	n1, n2, n3, cfg2, _ := startHeteroTrio(t)
	defer n1.Shutdown(ctx)
	defer n3.Shutdown(ctx)
	var err error
	id2 := takeDown(t, n1, n2)
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	const keys = 200
	for i := range keys {
		if err := c1.Set(ctx, fmt.Sprint("y", i), fmt.Sprint("v", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dropHints(t, n1, id2)
	if n2, err = Start(cfg2, keptLog(t, "n2 restarted")); err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown(ctx)
	eventually(t, "n2 is up again", func() bool { return n1.cluster.member(id2).Up })
	if r, _ := n2.cluster.handler.Read([]byte("y0"), false); r.Found {
		t.Fatal("n2 has y0 before the rebuild: the test would prove nothing")
	}

	release := make(chan struct{})
	defer func(g func()) { refillGate = g }(refillGate)
	refillGate = func() { <-release }
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	post := func() (int, string) {
		resp, err := http.Post("http://"+n2.AdminAddr()+"/rebuild", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != http.StatusOK {
		t.Fatalf("POST /rebuild: %d %s", code, body)
	}
	eventually(t, "n1 sees n2 refilling", func() bool { return n1.cluster.member(id2).Refilling })
	if code, body := post(); code != http.StatusConflict {
		t.Fatalf("a second POST /rebuild during the first: %d %s, want 409", code, body)
	}
	if v, err := getRetryingUnavailable(ctx, c1, "y0"); err != nil || v != "v0" {
		t.Fatalf("GET y0 while n2 rebuilds: %q, %v", v, err)
	}
	close(release)
	released = true
	eventually(t, "n1 sees n2 rebuilt", func() bool { return !n1.cluster.member(id2).Refilling })
	for i := range keys {
		key := fmt.Sprint("y", i)
		if r, err := n2.cluster.handler.Read([]byte(key), false); err != nil || !r.Found {
			t.Fatalf("after the rebuild n2 lacks %s: %v", key, err)
		}
	}
}

// Hints for a replica that was rebuilt from its peers after they were created are
// discarded unsent (its peers gave it those writes); a hint created after the rebuild is
// still replayed.
func TestRebuildDiscardsTheHintsItCovered(t *testing.T) {
	defer func(d time.Duration) { hintReplayInterval = d }(hintReplayInterval)
	hintReplayInterval = time.Hour // the test replays by hand
	ctx := context.Background()
	n1, n2, n3, _, _ := startHeteroTrio(t)
	defer n1.Shutdown(ctx)
	defer n2.Shutdown(ctx)
	defer n3.Shutdown(ctx)
	id2 := ring.NodeID(n2.ID())
	const old = 300
	created := time.Now().Add(-time.Minute)
	for i := range old {
		m := row.Mutation{Key: fmt.Appendf(nil, "old%d", i), Row: cell("v", created.UnixMicro())}
		if err := n1.cluster.hints.Add(string(id2), m, created); err != nil {
			t.Fatal(err)
		}
	}
	if err := n2.cluster.rebuild(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n1 sees n2 rebuilt", func() bool {
		m := n1.cluster.member(id2)
		return !m.Refilling && !m.Refilled.IsZero()
	})
	late := row.Mutation{Key: []byte("late"), Row: cell("v", time.Now().UnixMicro())}
	if err := n1.cluster.hints.Add(string(id2), late, time.Now()); err != nil {
		t.Fatal(err)
	}
	n1.cluster.replayHints()
	resp, err := http.Get("http://" + n1.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("kura_hints_discarded_total %d\n", old); !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %q", want)
	}
	if st := n1.cluster.hints.Stats()[string(id2)]; st.Hints != 0 || st.Dropped != 0 {
		t.Errorf("n1's hints for n2 after the replay: %+v", st)
	}
	if r, _ := n2.cluster.handler.Read([]byte("late"), false); !r.Found {
		t.Error("the hint created after the rebuild was not replayed")
	}
	if r, _ := n2.cluster.handler.Read([]byte("old0"), false); r.Found {
		t.Error("a hint created before the rebuild was replayed, not discarded")
	}
}
