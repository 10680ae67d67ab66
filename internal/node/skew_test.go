package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/ring"
)

// skewedNode is a node of startSkewed's cluster with the skew of its physical clock, which
// a test may change while it runs.
type skewedNode struct {
	*Node
	skew *atomic.Int64 // microseconds added to the machine's clock
	c    *redis.Client
}

// startSkewed starts three in-process nodes (memory engine, three hosts, RF 3, QUORUM)
// whose physical clocks are the machine's shifted by skews, with max_clock_offset
// maxOffset, each with a go-redis client. versions, when given, are the nodes' internode
// frame versions (hooks.internodeVersion).
func startSkewed(t *testing.T, maxOffset time.Duration, skews []time.Duration, versions ...int) []skewedNode {
	t.Helper()
	defer func(d time.Duration) { t.Cleanup(func() { clockCheckInterval = d }) }(clockCheckInterval)
	clockCheckInterval = 20 * time.Millisecond
	var nodes []skewedNode
	for i, skew := range skews {
		seed := ""
		if i > 0 {
			seed = nodes[0].GossipAddr()
		}
		cfg := clusterConfig(t, fmt.Sprintf("h%d", i+1), seed)
		cfg.MaxClockOffset = maxOffset
		sn := skewedNode{skew: new(atomic.Int64)}
		sn.skew.Store(skew.Microseconds())
		h := hooks{physical: func() int64 { return time.Now().UnixMicro() + sn.skew.Load() }}
		if i < len(versions) {
			h.internodeVersion = versions[i]
		}
		n, err := startNode(cfg, keptLog(t, cfg.Host), h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Shutdown(context.Background()) })
		sn.Node = n
		sn.c = redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		t.Cleanup(func() { sn.c.Close() })
		nodes = append(nodes, sn)
	}
	for _, n := range nodes {
		eventually(t, "every node sees three normal members", func() bool { return ready(n.Node, len(nodes)) })
	}
	return nodes
}

// atAll runs f on a connection of c set to consistency ALL.
func atAll(t *testing.T, c *redis.Client, f func(*redis.Conn)) {
	t.Helper()
	ctx := context.Background()
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	f(conn)
}

// wantEverywhere reads key at ALL through every node with read and checks it gives want.
func wantEverywhere(t *testing.T, nodes []skewedNode, what string, want string, read func(*redis.Conn) (string, error)) {
	t.Helper()
	for _, n := range nodes {
		atAll(t, n.c, func(conn *redis.Conn) {
			if got, err := read(conn); err != nil || got != want {
				t.Errorf("%s: read at ALL through %s: %q, %v; want %q", what, n.Host(), got, err, want)
			}
		})
	}
}

func getString(key string) func(*redis.Conn) (string, error) {
	return func(c *redis.Conn) (string, error) {
		v, err := c.Get(context.Background(), key).Result()
		if err == redis.Nil {
			return "(nil)", nil
		}
		return v, err
	}
}

// keyLedBy returns a key whose leader (first live replica in ring order) is n.
func keyLedBy(t *testing.T, n skewedNode, prefix string) string {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("%s%d", prefix, i)
		if l := n.cluster.machine.Leaders([]byte(k)); len(l) > 0 && l[0] == ring.NodeID(n.ID()) {
			return k
		}
	}
	t.Fatalf("no key led by %s", n.Host())
	return ""
}

// The bug this fixes: a node whose clock is behind timestamped its writes below a value
// it had just read, or that another node had written moments before, and the later update
// was lost. Here h2's clock is 3 s behind the others' (within a max_clock_offset of 10 s,
// so that the node writes and the clocks carried by messages and reads order its
// updates): a value written and read through h1 and then updated through h2 (SET, DEL,
// HSET, INCR) ends up as the update, read at ALL through every node.
func TestUpdatesThroughANodeWhoseClockIsBehindWin(t *testing.T) {
	nodes := startSkewed(t, 10*time.Second, []time.Duration{0, -3 * time.Second, 0})
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	mustRead := func(c *redis.Client, key, want string) {
		t.Helper()
		if got, err := c.Get(ctx, key).Result(); err != nil || got != want {
			t.Fatalf("GET %s: %q, %v; want %q", key, got, err, want)
		}
	}

	// SET, the value read through the node behind: its read observed the value's
	// timestamp.
	must("SET", a.c.Set(ctx, "s1", "from h1", 0).Err())
	mustRead(b.c, "s1", "from h1")
	must("SET through h2", b.c.Set(ctx, "s1", "from h2", 0).Err())
	wantEverywhere(t, nodes, "SET after a read through h2", "from h2", getString("s1"))

	// SET, the value read through h1 but written at ALL: h2 took the write as a replica,
	// and observed the clock its message carried, before the client saw OK.
	atAll(t, a.c, func(conn *redis.Conn) { must("SET at ALL", conn.Set(ctx, "s2", "from h1", 0).Err()) })
	mustRead(a.c, "s2", "from h1")
	must("SET through h2", b.c.Set(ctx, "s2", "from h2", 0).Err())
	wantEverywhere(t, nodes, "SET after a replicated write", "from h2", getString("s2"))

	// DEL reads first (to count), then writes its tombstone above what it read.
	must("SET", a.c.Set(ctx, "d", "doomed", 0).Err())
	mustRead(a.c, "d", "doomed")
	if n, err := b.c.Del(ctx, "d").Result(); err != nil || n != 1 {
		t.Fatalf("DEL through h2: %d, %v", n, err)
	}
	wantEverywhere(t, nodes, "DEL through h2", "(nil)", getString("d"))

	// HSET reads the hash first.
	must("HSET", a.c.HSet(ctx, "h", "f", "from h1").Err())
	if v, err := a.c.HGet(ctx, "h", "f").Result(); err != nil || v != "from h1" {
		t.Fatalf("HGET: %q, %v", v, err)
	}
	must("HSET through h2", b.c.HSet(ctx, "h", "f", "from h2").Err())
	wantEverywhere(t, nodes, "HSET through h2", "from h2", func(c *redis.Conn) (string, error) {
		return c.HGet(ctx, "h", "f").Result()
	})

	// INCR runs at the key's leader, here h2 itself: its read of the row is observed.
	ctr := keyLedBy(t, b, "ctr")
	must("SET", a.c.Set(ctx, ctr, 10, 0).Err())
	mustRead(a.c, ctr, "10")
	if v, err := b.c.Incr(ctx, ctr).Result(); err != nil || v != 11 {
		t.Fatalf("INCR through h2, which leads %s: %d, %v", ctr, v, err)
	}
	wantEverywhere(t, nodes, "INCR led by h2", "11", getString(ctr))
}

// settle retries check until it passes, and fails with its last complaint after 10 s.
func settle(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
		t.Logf("%s, retrying: %v", what, err) // shown if the test fails
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// clusterStatus reads a node's /cluster.
func clusterStatus(t *testing.T, n skewedNode) admin.ClusterStatus {
	t.Helper()
	code, body := get(t, "http://"+n.AdminAddr()+"/cluster")
	var st admin.ClusterStatus
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/cluster of %s: %d %v", n.Host(), code, err)
	}
	return st
}

// memberOf returns the status of member id in st.
func memberOf(t *testing.T, st admin.ClusterStatus, id string) admin.MemberStatus {
	t.Helper()
	for _, m := range st.Members {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("%s has no member %s", st.Self, id)
	return admin.MemberStatus{}
}

// metric returns the value of the sample named name (with its labels, as exposed) in a
// node's /metrics, and whether there is one.
func metric(t *testing.T, n skewedNode, name string) (float64, bool) {
	t.Helper()
	_, body := get(t, "http://"+n.AdminAddr()+"/metrics")
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v, true
		}
	}
	return 0, false
}

// touch reads a key at ALL through every node, so that every node has talked to every
// other lately and has their clocks' offsets.
func touch(t *testing.T, nodes []skewedNode) {
	t.Helper()
	for _, n := range nodes {
		atAll(t, n.c, func(conn *redis.Conn) {
			if err := conn.Get(context.Background(), "touch").Err(); err != nil && err != redis.Nil {
				t.Fatal(err)
			}
		})
	}
}

// The policy, with h2's clock 3 s behind and the default max_clock_offset of 500 ms: every
// node reports the offsets (kura admin status, /metrics); h2 finds itself out of sync with
// both peers and refuses the writes it would timestamp with UNAVAILABLE, so that its clock
// loses nothing: the value h1 wrote stays. It still serves reads, and the INCRs it
// coordinates run at another replica. Its peers skip it as a leader. Once its clock is
// back, its writes go through and win.
func TestAClockFurtherOffThanTheMaximumIsReportedAndRefusesWrites(t *testing.T) {
	nodes := startSkewed(t, 500*time.Millisecond, []time.Duration{0, -3 * time.Second, 0})
	a, b, c := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()
	eventually(t, "h2 finds itself out of sync and h1 sees h2's clock behind", func() bool {
		touch(t, nodes)
		return clusterStatus(t, b).ClockOutOfSync && memberOf(t, clusterStatus(t, a), b.ID()).ClockSkewed
	})

	// What the nodes report. Gossip on a loaded machine may think a peer down for a
	// moment, which takes it out of the offsets: the checks are retried.
	settle(t, "the reports of h2's clock", func() error {
		touch(t, nodes)
		sa, sb := clusterStatus(t, a), clusterStatus(t, b)
		if sa.ClockOutOfSync || sa.MaxClockOffsetUS != 500_000 {
			return fmt.Errorf("h1's status: out of sync %v, max %d µs", sa.ClockOutOfSync, sa.MaxClockOffsetUS)
		}
		for _, w := range []struct {
			who  string
			m    admin.MemberStatus
			want time.Duration
		}{
			{"h1", memberOf(t, sa, b.ID()), -3 * time.Second},
			{"h1", memberOf(t, sa, c.ID()), 0},
			{"h2", memberOf(t, sb, a.ID()), 3 * time.Second},
			{"h2", memberOf(t, sb, c.ID()), 3 * time.Second},
		} {
			// The estimate is low by a frame's transit: at most the true offset, and on
			// loopback well within a second of it.
			o, skewed := w.m.ClockOffsetUS, w.want != 0
			if o == nil || *o > w.want.Microseconds() || *o < (w.want-time.Second).Microseconds() || w.m.ClockSkewed != skewed {
				return fmt.Errorf("%s's view of %s: offset %v µs, skewed %v; want about %v, skewed %v", w.who, w.m.Host, o, w.m.ClockSkewed, w.want, skewed)
			}
		}
		if self := memberOf(t, sb, b.ID()); !self.ClockSkewed || self.ClockOffsetUS != nil {
			return fmt.Errorf("h2's own entry: skewed %v, offset %v; want skewed and no offset", self.ClockSkewed, self.ClockOffsetUS)
		}
		if v, ok := metric(t, a, fmt.Sprintf(`kura_clock_offset_seconds{peer=%q}`, b.ID())); !ok || v > -2 || v < -3.0001 {
			return fmt.Errorf("h1's kura_clock_offset_seconds of h2: %v (%v), want about -3", v, ok)
		}
		for _, m := range []struct {
			n    skewedNode
			name string
			want float64
		}{{a, "kura_clock_out_of_sync", 0}, {b, "kura_clock_out_of_sync", 1}, {b, "kura_clock_max_offset_seconds", 0.5}} {
			if v, ok := metric(t, m.n, m.name); !ok || v != m.want {
				return fmt.Errorf("%s's %s = %v (%v), want %v", m.n.Host(), m.name, v, ok, m.want)
			}
		}
		return nil
	})

	// The policy: h2 writes nothing it would timestamp, and nothing is lost.
	if err := a.c.Set(ctx, "k", "from h1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.c.Get(ctx, "k").Result(); err != nil || v != "from h1" {
		t.Fatalf("GET through h2 while it refuses writes: %q, %v", v, err)
	}
	for name, err := range map[string]error{
		"SET":  b.c.Set(ctx, "k", "from h2", 0).Err(),
		"DEL":  b.c.Del(ctx, "k").Err(),
		"HSET": b.c.HSet(ctx, "h", "f", "from h2").Err(),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE") || !strings.Contains(err.Error(), "clock") {
			t.Errorf("%s through h2 out of sync: %v, want UNAVAILABLE naming its clock", name, err)
		}
	}
	wantEverywhere(t, nodes, "after h2's refused writes", "from h1", getString("k"))
	if v, ok := metric(t, b, "kura_clock_writes_refused_total"); !ok || v < 3 {
		t.Errorf("h2's kura_clock_writes_refused_total = %v (%v), want at least 3", v, ok)
	}
	// INCR through h2 on a key h2 leads runs at the next replica; through h1, h1 asks h2
	// to lead, is refused, and asks the next.
	ctr := keyLedBy(t, b, "ctr")
	if err := a.c.Set(ctx, ctr, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i, n := range []skewedNode{b, a} {
		if v, err := n.c.Incr(ctx, ctr).Result(); err != nil || v != int64(11+i) {
			t.Fatalf("INCR through %s of a key h2 leads: %d, %v; want %d", n.Host(), v, err, 11+i)
		}
	}
	wantEverywhere(t, nodes, "INCRs of a key h2 leads", "12", getString(ctr))

	// Its clock fixed, h2 writes again, and its writes win.
	b.skew.Store(0)
	eventually(t, "h2 back in sync", func() bool {
		touch(t, nodes)
		return !clusterStatus(t, b).ClockOutOfSync
	})
	if err := b.c.Set(ctx, "k", "from h2", 0).Err(); err != nil {
		t.Fatalf("SET through h2 back in sync: %v", err)
	}
	wantEverywhere(t, nodes, "SET through h2 back in sync", "from h2", getString("k"))
}

// A clock far ahead (h3's, 3 s) neither drags the others' clocks (its stamps are provably
// too far ahead to observe) nor writes (it is out of sync with both peers).
func TestAClockFarAheadDoesNotDragTheOthers(t *testing.T) {
	nodes := startSkewed(t, 500*time.Millisecond, []time.Duration{0, 0, 3 * time.Second})
	c := nodes[2]
	eventually(t, "h3 finds itself out of sync", func() bool {
		touch(t, nodes)
		return clusterStatus(t, c).ClockOutOfSync
	})
	touch(t, nodes)
	for _, n := range nodes[:2] {
		if ahead := time.Duration(n.cluster.clock.Now()-time.Now().UnixMicro()) * time.Microsecond; ahead > 500*time.Millisecond {
			t.Errorf("%s's clock issues timestamps %v ahead of its physical clock after hearing h3's", n.Host(), ahead)
		}
	}
	if err := c.c.Set(context.Background(), "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE") {
		t.Errorf("SET through h3, 3 s ahead: %v, want UNAVAILABLE", err)
	}
}

// A mixed-version cluster: h1 speaks internode frames of version 1 (a node from before
// clocks travelled), h2 (3 s behind, within a max of 10 s) and h3 version 2. Everything
// works through every node; h1 has no offsets (it gets no stamps) and the others have none
// of it, and between h2 and h3 clocks still travel: a value h3 wrote and h2 read is
// overwritten by h2's SET.
func TestAMixedVersionClusterWorksAndObservesItsNewNodes(t *testing.T) {
	nodes := startSkewed(t, 10*time.Second, []time.Duration{0, -3 * time.Second, 0}, 1, 0, 0)
	a, b, c := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()
	for i, n := range nodes {
		key := fmt.Sprintf("k%d", i)
		if err := n.c.Set(ctx, key, n.Host(), 0).Err(); err != nil {
			t.Fatalf("SET through %s: %v", n.Host(), err)
		}
		if err := n.c.Incr(ctx, "ctr").Err(); err != nil {
			t.Fatalf("INCR through %s: %v", n.Host(), err)
		}
		wantEverywhere(t, nodes, "SET through "+n.Host(), n.Host(), getString(key))
	}
	wantEverywhere(t, nodes, "INCR through every node", "3", getString("ctr"))
	settle(t, "offsets of the new nodes only", func() error {
		touch(t, nodes)
		if st := clusterStatus(t, a); memberOf(t, st, b.ID()).ClockOffsetUS != nil || memberOf(t, st, c.ID()).ClockOffsetUS != nil {
			return fmt.Errorf("h1, which speaks version 1, has clock offsets")
		}
		if st := clusterStatus(t, c); memberOf(t, st, a.ID()).ClockOffsetUS != nil || memberOf(t, st, b.ID()).ClockOffsetUS == nil {
			return fmt.Errorf("h3's offsets: h1 (version 1) %v, h2 %v; want none and one",
				memberOf(t, st, a.ID()).ClockOffsetUS, memberOf(t, st, b.ID()).ClockOffsetUS)
		}
		return nil
	})
	if err := c.c.Set(ctx, "s", "from h3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.c.Get(ctx, "s").Result(); err != nil || v != "from h3" {
		t.Fatalf("GET through h2: %q, %v", v, err)
	}
	if err := b.c.Set(ctx, "s", "from h2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wantEverywhere(t, nodes, "SET through h2 after its read", "from h2", getString("s"))
}
