package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/ring"
)

func TestFlushTargetsAreEveryMemberButRemovedOnes(t *testing.T) {
	targets, down := flushTargets([]cluster.Member{
		{ID: "c", Status: cluster.Normal, Up: true}, {ID: "a", Status: cluster.Joining, Up: false},
		{ID: "b", Status: cluster.Leaving, Up: true}, {ID: "d", Status: cluster.Removed, Up: false},
	})
	if fmt.Sprint(targets) != "[a b c]" || fmt.Sprint(down) != "[a]" {
		t.Fatalf("targets %v, down %v; want [a b c] and [a]", targets, down)
	}
}

// A single node's FLUSHALL deletes every key of its engine; later writes survive.
func TestSingleNodeFlushAllDeletesEveryKey(t *testing.T) {
	n, err := Start(testConfig(t, "lsm"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	ctx := context.Background()
	for i := range 100 {
		if err := c.Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.HSet(ctx, "h", "f", "v")
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k0", "k99", "h").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after FLUSHALL: %d %v", n, err)
	}
	if keys, err := c.Keys(ctx, "*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("KEYS * after FLUSHALL: %v %v", keys, err)
	}
	c.Set(ctx, "k0", "after", 0)
	if v, err := c.Get(ctx, "k0").Result(); err != nil || v != "after" {
		t.Fatalf("a write after FLUSHALL: %q %v", v, err)
	}
}

// In a cluster FLUSHALL deletes every node's rows, whatever coordinator it goes through,
// and refuses, flushing nothing, while a node is down.
func TestClusterFlushAllNeedsEveryNodeUp(t *testing.T) {
	nodes := startThree(t, "lsm", "btree", "memory")
	cs := clients(t, nodes, 3)
	ctx := context.Background()
	for i := range 200 {
		if err := cs[i%3].Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs[1].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes { // every replica, not only a quorum: read each engine
		if keys := visibleKeys(t, n); len(keys) != 0 {
			t.Fatalf("%s still holds %d keys after FLUSHALL, e.g. %s", n.ID(), len(keys), keys[0])
		}
	}
	if err := cs[2].Set(ctx, "after", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	id3 := ring.NodeID(nodes[2].ID())
	if err := nodes[2].Shutdown(context.Background()); err != nil { // again at cleanup: Shutdown is idempotent
		t.Fatal(err)
	}
	eventually(t, "the others see the third node down", func() bool {
		return !nodes[0].cluster.member(id3).Up && !nodes[1].cluster.member(id3).Up
	})
	err := cs[0].FlushDB(ctx).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "UNAVAILABLE ") || !strings.Contains(err.Error(), string(id3)) {
		t.Fatalf("FLUSHDB with a node down: %v, want UNAVAILABLE naming %s", err, id3)
	}
	if v, err := cs[1].Get(ctx, "after").Result(); err != nil || v != "v" {
		t.Fatalf("a refused FLUSHALL deleted: %q %v", v, err)
	}
}

// visibleKeys lists the keys n's own engine holds that a read at now would show.
func visibleKeys(t *testing.T, n *Node) []string {
	it, err := n.eng.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	now := time.Now().UnixMicro()
	var out []string
	for it.Next() {
		r := it.Row()
		if len(r.Visible(now)) > 0 {
			_, key, _ := ring.SplitEngineKey(it.Key())
			out = append(out, string(key))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
