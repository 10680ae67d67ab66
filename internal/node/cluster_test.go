package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

func clusterConfig(t *testing.T, host, seed string) config.Config {
	c := testConfig(t, "memory")
	c.Host = host
	c.GossipListen, c.InternodeListen, c.Seeds = "127.0.0.1:0", "127.0.0.1:0", seed
	c.RequestTimeout = time.Second
	c.AdminListen = "127.0.0.1:0"
	return c
}

// ready reports whether n sees want members, all normal with tokens and up.
func ready(n *Node, want int) bool {
	m := n.cluster.machine
	if m.Ring() == nil || len(m.Members()) != want {
		return false
	}
	for _, m := range m.Members() {
		if m.Status != cluster.Normal || len(m.Tokens) == 0 || !m.Up {
			return false
		}
	}
	return true
}

func TestThreeNodeClusterReplicatesHintsAndReplays(t *testing.T) {
	defer func(d, b time.Duration) { loadAnnounceInterval, behindAnnounceInterval = d, b }(loadAnnounceInterval, behindAnnounceInterval)
	loadAnnounceInterval, behindAnnounceInterval = 50*time.Millisecond, 50*time.Millisecond
	n1, err := Start(clusterConfig(t, "h1", ""), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Shutdown(context.Background())
	n2, err := Start(clusterConfig(t, "h2", n1.GossipAddr()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown(context.Background())
	cfg3 := clusterConfig(t, "h3", n1.GossipAddr())
	n3, err := Start(cfg3, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Node{n1, n2, n3} {
		eventually(t, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	// Every key has three replicas on three hosts: nodes that joined at once did not pick
	// the same tokens.
	for _, n := range []*Node{n1, n2, n3} {
		if rs := n.cluster.machine.Replicas([]byte("any key")); len(rs) != 3 {
			t.Fatalf("replica set %v, want 3 nodes", rs)
		}
		own := n.cluster.machine.Ring().Ownership()
		for id, share := range own {
			if share < 0.1 {
				t.Errorf("%s owns %.3f of the ring", id, share)
			}
		}
	}
	// The admin address serves the view as `kura admin` reads it.
	resp, err := http.Get("http://" + n1.AdminAddr() + "/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var st admin.ClusterStatus
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Members) != 3 || len(st.Tokens) != 3*16 || st.Self != n1.ID() {
		t.Fatalf("/cluster: %v %+v", err, st)
	}
	ctx := context.Background()
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	c2 := redis.NewClient(&redis.Options{Addr: n2.Addr()})
	defer c2.Close()
	if err := c1.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c2.Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("GET through another coordinator: %q %v", got, err)
	}
	// Each node announces its load, which grew with the write (over 1 MiB of values: the
	// announcement waits for a move of 1 MiB), and every node learns the others'.
	big := strings.Repeat("x", 1<<20)
	if err := c1.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n2 knows every member's load, each over 1 MiB", func() bool {
		for _, m := range n2.cluster.status().Members {
			if m.Load < 1<<20 {
				return false
			}
		}
		return true
	})

	// n3 goes away; QUORUM writes go on (RF 3, three hosts), with hints for n3.
	id3 := ring.NodeID(n3.ID())
	if err := n3.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n3 is marked down", func() bool { return !n1.cluster.member(id3).Up })
	if err := c1.Set(ctx, "k2", "while-down", 0).Err(); err != nil {
		t.Fatalf("QUORUM write with one replica down: %v", err)
	}
	n1.cluster.hintq.Sync() // the coordinator stores hints off the request path
	if st := n1.cluster.hints.Stats()[string(id3)]; st.Hints == 0 {
		t.Fatalf("no hint for the down replica: %+v", n1.cluster.hints.Stats())
	}
	// n2 holds no hint itself, but hears that n1 does: n3 lags, for n2's load-aware reads.
	if n2.cluster.hints.Holds(string(id3)) {
		t.Fatal("n2 holds a hint for n3; the check below would not test gossip")
	}
	eventually(t, "n2 hears that n1 holds hints for n3", func() bool { return n2.cluster.machine.Lagging(id3) })
	if id1 := ring.NodeID(n1.ID()); n2.cluster.machine.Lagging(id1) {
		t.Error("n2 takes n1 for lagging; nobody holds hints for it")
	}

	// n3 comes back from its data directory: hints are replayed to it.
	n3, err = Start(cfg3, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n3.Shutdown(context.Background())
	eventually(t, "n1's hints for n3 are replayed", func() bool {
		return n1.cluster.hints.Stats()[string(id3)].Hints == 0
	})
	eventually(t, "n2 hears that n3 no longer lags", func() bool { return !n2.cluster.machine.Lagging(id3) })
	b, err := n3.cluster.handler.Handle(ctx, wire.MethodRead, wire.AppendReadRequest(nil, &wire.ReadRequest{Key: []byte("k2")}))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := wire.DecodeReadResponse(b); !r.Found {
		t.Error("n3 does not hold the write it missed after the hint replay")
	}
	// The metrics tell the story.
	mresp, err := http.Get("http://" + n1.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`kura_coordinator_requests_total{op="write",result="ok"}`,
		"kura_hints_stored_total", "kura_hints_replayed_total", `kura_replica_requests_total{method="write",role=`,
		`kura_coordinator_replica_requests_total{method="write",role=`,
		`kura_internode_frames_written_total{side="client"}`, `kura_internode_flushes_total{side="server"}`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// n3 served n1's writes (the replayed hint among them) and timed them.
	m3resp, err := http.Get("http://" + n3.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics3, _ := io.ReadAll(m3resp.Body)
	m3resp.Body.Close()
	if !regexp.MustCompile(`kura_replica_request_seconds_count\{method="write",role="[a-z-]+"\} [1-9]`).Match(metrics3) {
		t.Error("n3 timed no replica write it served")
	}
	if strings.Contains(string(metrics), "kura_hints_replayed_total 0\n") {
		t.Error("no hint counted as replayed")
	}
	if strings.Contains(string(metrics), `kura_internode_frames_written_total{side="client"} 0`+"\n") {
		t.Error("no internode request counted as written")
	}
	// Every replica answers at ALL now, on a connection that asked for it.
	conn := c2.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n2 sees n3 up again, refilled (it runs the memory engine)", func() bool {
		m := n2.cluster.member(id3)
		return m.Up && !m.Refilling
	})
	for _, k := range []string{"k", "k2"} {
		if v, err := conn.Get(ctx, k).Result(); err != nil || v == "" {
			t.Errorf("GET %s at ALL: %q %v", k, v, err)
		}
	}
}

// Gossip reports changes from several goroutines at once; whichever rebuild of the
// request path's view is stored last must have read the view after every change, or
// requests go on with a stale view (a replica still down, or still refilling) until
// the next change, which in a quiet cluster may be long in coming.
func TestConcurrentViewChangesLeaveTheRequestPathOnTheNewestView(t *testing.T) {
	n, err := Start(clusterConfig(t, "h1", ""), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	eventually(t, "the node sees itself normal", func() bool { return ready(n, 1) })
	c := n.cluster
	const writers = 4
	for round := range 500 {
		var start, done sync.WaitGroup
		start.Add(1)
		for w := range writers {
			done.Go(func() {
				start.Wait()
				c.gossip.Update(func(m *cluster.Member) { m.Load = int64(round*writers + w + 1) })
			})
		}
		start.Done()
		done.Wait()
		var want int64
		for _, m := range c.gossip.Members() {
			if m.ID == c.self {
				want = m.Load
			}
		}
		if m, _ := c.machine.Member(c.self); m.Load != want {
			t.Fatalf("round %d: the request path sees load %d, the view holds %d", round, m.Load, want)
		}
	}
}

// --hints-dir puts the hint store elsewhere; a data directory that still holds hints
// keeps a node given --hints-dir from starting, so that they are not left behind.
func TestHintsDirMovesTheHintStoreAndRefusesToStrandOldHints(t *testing.T) {
	cfg := clusterConfig(t, "h1", "")
	cfg.HintsDir = filepath.Join(t.TempDir(), "hints-elsewhere")
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(cfg.HintsDir, "MANIFEST-*")); len(m) == 0 {
		t.Errorf("no hint store in %s", cfg.HintsDir)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "hints")); !os.IsNotExist(err) {
		t.Errorf("the data directory has hints/ too: %v", err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The same node restarted without --hints-dir makes its store in the data directory;
	// given --hints-dir again, it refuses to start.
	elsewhere := cfg.HintsDir
	cfg.HintsDir = ""
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.HintsDir = elsewhere
	if n, err := Start(cfg, quiet()); err == nil {
		n.Shutdown(context.Background())
		t.Fatal("a node started with --hints-dir while its data directory held hints")
	} else if !strings.Contains(err.Error(), "holds a hint store") {
		t.Fatalf("refused with %v", err)
	}
	// Given the data directory's own hints/ as --hints-dir, it starts.
	cfg.HintsDir = filepath.Join(cfg.DataDir, "hints")
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	n.Shutdown(context.Background())
}

// member returns the coordinator's view of member id.
func (c *clusterNode) member(id ring.NodeID) cluster.Member {
	m, _ := c.machine.Member(id)
	return m
}

// startMember starts a node on host joining the cluster of seed (none: a new cluster),
// with 4 vnodes and a 1-s join batch window, after edit (nil: none) changed its
// configuration; it shuts down when the test ends.
func startMember(t *testing.T, host, seed string, edit func(*config.Config)) *Node {
	t.Helper()
	cfg := clusterConfig(t, host, seed)
	cfg.JoinBatchWindow, cfg.NumTokens = time.Second, 4
	if edit != nil {
		edit(&cfg)
	}
	n, err := Start(cfg, keptLog(t, host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n
}
