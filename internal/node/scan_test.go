package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/scan"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// scanSeed returns a randomized test's seed, KURA_SCAN_SEED when set, and prints it.
func scanSeed(t *testing.T) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("KURA_SCAN_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("KURA_SCAN_SEED: %v", err)
		}
	}
	t.Logf("seed %d (KURA_SCAN_SEED=%d reruns it)", s, s)
	return s
}

// put writes rows straight into replica id's engine, as if only it had taken them.
func (c *testCluster) put(t *testing.T, id ring.NodeID, key string, r row.Row) {
	t.Helper()
	if err := c.handlers[id].Write([]row.Mutation{{Key: []byte(key), Row: r}}); err != nil {
		t.Fatal(err)
	}
}

// scanAll scans the whole keyspace at level with pages of count and returns the keys of
// visible rows in the order returned.
func scanAll(t *testing.T, s *clusterStore, level string, count int) ([]string, error) {
	t.Helper()
	var keys []string
	var last ring.Token = ring.MinToken
	for cursor, pages := uint64(0), 0; ; pages++ {
		if pages > 100000 {
			t.Fatal("the scan does not end")
		}
		rows, next, err := s.Scan(level, cursor, count)
		if err != nil {
			return keys, err
		}
		for _, m := range rows {
			tok := ring.TokenOf(m.Key)
			if tok < last || tok < scan.From(cursor) || next != 0 && tok >= scan.From(next) {
				t.Fatalf("key %q (token %d) out of its page [%d, %d)", m.Key, tok, scan.From(cursor), scan.From(next))
			}
			last = tok
			if len(m.Row.Visible(2)) > 0 {
				keys = append(keys, string(m.Key))
			}
		}
		if next == 0 {
			return keys, nil
		}
		if next <= cursor {
			t.Fatalf("cursor %d after %d", next, cursor)
		}
		cursor = next
	}
}

// A page is read from a quorum of the replicas and their rows merged: a key one replica
// lacks is found, a delete one replica has hides the key, a replica that refuses is
// replaced by a spare, and the levels bound what is asked.
func TestClusterScanMergesAQuorumOfReplicas(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	ts := time.Now().UnixMicro() // engines purge tombstones older than their grace period
	for _, id := range testIDs {
		c.put(t, id, "everywhere", cell("v", ts))
		c.put(t, id, "deleted", cell("v", ts))
	}
	for _, id := range []ring.NodeID{"n2", "n3"} {
		c.put(t, id, "not-on-n1", cell("v", ts))
		c.put(t, id, "deleted", row.Row{Deleted: ts + 1})
	}
	want := []string{"everywhere", "not-on-n1"}
	check := func(what, level string, want []string) {
		t.Helper()
		got, err := scanAll(t, c.store, level, 1+rand.IntN(3))
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", what, got, err, want)
		}
	}
	check("quorum", "", want)
	check("all", "ALL", want)
	// At ONE only this node's replica is asked, and it lacks a key and the delete.
	check("one", "ONE", []string{"deleted", "everywhere"})

	c.setDown("n2", true)
	check("n2 down", "", want)
	if _, err := scanAll(t, c.store, "ALL", 10); !errors.Is(err, coord.ErrUnavailable) {
		t.Errorf("ALL with a replica down: %v, want unavailable", err)
	}
	c.setDown("n2", false)

	// n2 refuses (it is refilling, and the coordinator has not heard): n3 is asked instead.
	c.handlers["n2"].SetRefilling(true)
	check("n2 refusing", "", want)
	c.handlers["n3"].SetRefilling(true)
	if _, err := scanAll(t, c.store, "", 10); !errors.Is(err, coord.ErrUnavailable) {
		t.Errorf("two replicas refusing: %v, want unavailable", err)
	}
	if _, _, err := c.store.Scan("SOME", 0, 10); err == nil {
		t.Error("an unknown level was accepted")
	}
}

// Pages of any size over a ring where each range has its own replica set (RF 2 of 3)
// return every key written at quorum once, in token order.
func TestClusterScanPagesThroughSpansInTokenOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(scanSeed(t), 0))
	for _, rf := range []int{2, 3} {
		c := newTestCluster(t, coord.Quorum)
		c.cfg.ReplicationFactor = rf
		c.configure()
		var want []string
		for i := range 300 {
			k := fmt.Sprint("key", i)
			if err := c.store.Apply([]row.Mutation{{Key: []byte(k), Row: cell("v", 1)}}); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
		slices.SortFunc(want, func(a, b string) int {
			return cmpTok(ring.TokenOf([]byte(a)), ring.TokenOf([]byte(b)))
		})
		for range 5 {
			got, err := scanAll(t, c.store, "", 1+rng.IntN(50))
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("RF %d: %d keys (%v), want the %d in token order", rf, len(got), err, len(want))
			}
		}
	}
}

func cmpTok(a, b ring.Token) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scanCapped is a replica that answers at most one row a scan page, as if more keys
// shared a token than a page holds.
type scanCapped struct {
	caller
	completions *atomic.Int32
}

func (s scanCapped) cap(method uint16, payload []byte) []byte {
	if method != wire.MethodScanRead {
		return payload
	}
	req, err := wire.DecodeScanReadRequest(payload)
	if err != nil {
		panic(err)
	}
	if req.Rows == wire.MaxScanRows { // only completions ask for a whole token
		s.completions.Add(1)
	}
	req.Rows = 1
	return wire.AppendScanReadRequest(nil, &req)
}

func (s scanCapped) Call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	return s.caller.Call(ctx, method, s.cap(method, payload))
}

func (s scanCapped) Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error)) {
	s.caller.Go(ctx, method, s.cap(method, payload), done)
}

// A page that stops inside the span's first token (a replica whose page held one row,
// from a cursor at a key's token) is completed through that token before the merge
// moves on: the key is returned, and the scan goes on past it.
func TestClusterScanCompletesAPageThatStopsInsideItsFirstToken(t *testing.T) {
	var completions atomic.Int32
	c := heteroTestCluster(t, coord.Uniform{}, "n2", func(p caller) caller { return scanCapped{p, &completions} })
	c.roles = nil
	c.configure()
	c.setDown("n3", true) // the quorum is n1 and n2
	var keys []string
	for i := range 20 {
		k := fmt.Sprint("k", i)
		if err := c.store.Apply([]row.Mutation{{Key: []byte(k), Row: cell("v", 1)}}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmpTok(ring.TokenOf([]byte(a)), ring.TokenOf([]byte(b))) })
	// From the cursor of the 5th key's token: n2's page is that key alone, and may be
	// missing more keys of its token.
	rows, next, err := c.store.Scan("", scan.Cursor(ring.TokenOf([]byte(keys[4]))), 10)
	if err != nil || len(rows) == 0 || string(rows[0].Key) != keys[4] {
		t.Fatalf("page: %v %v", rows, err)
	}
	if completions.Load() == 0 {
		t.Error("no page was completed")
	}
	if next == 0 || scan.From(next) <= ring.TokenOf([]byte(keys[4])) {
		t.Errorf("next cursor %d does not move past the key's token", next)
	}
	got, err := scanAll(t, c.store, "", 3)
	if err != nil || !slices.Equal(got, keys) {
		t.Errorf("whole scan through a capped replica: %v %v, want %v", got, err, keys)
	}
}

// oldReplica is a node that predates wire.MethodScanRead.
type oldReplica struct{ caller }

func (o oldReplica) Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error)) {
	if method == wire.MethodScanRead {
		done(nil, &transport.RemoteError{Code: transport.CodeHandlerError, Message: "replica: unknown method 6"})
		return
	}
	o.caller.Go(ctx, method, payload, done)
}

// A replica that does not know scan reads is replaced by a spare, and when there is none
// the error says what to do.
func TestClusterScanNamesReplicasTooOldToScan(t *testing.T) {
	c := heteroTestCluster(t, coord.Uniform{}, "n2", func(p caller) caller { return oldReplica{p} })
	c.roles = nil
	c.configure()
	if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}}); err != nil {
		t.Fatal(err)
	}
	if got, err := scanAll(t, c.store, "", 10); err != nil || !slices.Equal(got, []string{"k"}) {
		t.Errorf("with a spare: %v %v", got, err)
	}
	c.setDown("n3", true)
	_, err := scanAll(t, c.store, "", 10)
	if !errors.Is(err, errScanUnsupported) || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("without a spare: %v", err)
	}
}

// A node outside a cluster lists its keys in token order too, with cursors that mean
// the same, and its DBSIZE is its engine's exact count.
func TestSingleNodeScansInTokenOrder(t *testing.T) {
	n, err := Start(testConfig(t, "memory"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	var want []string
	for i := range 500 {
		k := fmt.Sprint("key", i)
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	slices.SortFunc(want, func(a, b string) int { return cmpTok(ring.TokenOf([]byte(a)), ring.TokenOf([]byte(b))) })
	var got []string
	for cursor := uint64(0); ; {
		keys, next, err := c.Scan(ctx, cursor, "", 7).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if tok := ring.TokenOf([]byte(k)); tok < scan.From(cursor) || next != 0 && tok >= scan.From(next) {
				t.Fatalf("key %q outside its page's tokens", k)
			}
		}
		got = append(got, keys...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SCAN returned %d keys, want the %d in token order", len(got), len(want))
	}
	// A cursor at a key's token starts with that key.
	keys, _, err := c.Scan(ctx, scan.Cursor(ring.TokenOf([]byte(want[100]))), "", 3).Result()
	if err != nil || len(keys) == 0 || keys[0] != want[100] {
		t.Errorf("SCAN from a key's token: %v %v, want %s first", keys, err, want[100])
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 500 {
		t.Errorf("DBSIZE %d %v", n, err)
	}
	if info := c.Info(ctx, "keyspace").Val(); !strings.Contains(info, "keys_exact:1") {
		t.Errorf("INFO keyspace: %s", info)
	}
	if keys, err := c.Keys(ctx, "key1?").Result(); err != nil || len(keys) != 10 {
		t.Errorf("KEYS key1?: %v %v", keys, err)
	}
}
