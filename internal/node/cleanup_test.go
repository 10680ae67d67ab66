package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// After a node joins, cleanup on an old owner deletes exactly the rows of the ranges it
// gave up: every row it keeps lies in a range it replicates, some rows went, and every
// write still reads back at ALL.
func TestCleanupDeletesTheRangesANodeGaveUp(t *testing.T) {
	start := func(host, seed string) *Node {
		c := clusterConfig(t, host, seed)
		c.JoinBatchWindow, c.CleanupDelay, c.NumTokens = time.Second, 0, 4
		n, err := Start(c, keptLog(t, host))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Shutdown(context.Background()) })
		return n
	}
	n1 := start("h1", "")
	n2, n3 := start("h2", n1.GossipAddr()), start("h3", n1.GossipAddr())
	settledAt := func(members int, on ...*Node) func() bool {
		return func() bool {
			for _, n := range on {
				st := n.cluster.rl.state.Load()
				normal := 0
				for _, m := range st.Members {
					if m.State == meta.Normal {
						normal++
					}
				}
				if st.Change != nil || normal != members || n.cluster.machine.Epoch() != st.Epoch {
					return false
				}
			}
			return true
		}
	}
	eventuallyFor(t, 30*time.Second, "three normal members", settledAt(3, n1, n2, n3))
	client := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer client.Close()
	ctx := context.Background()
	const keys = 600
	for i := range keys {
		if err := client.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n4 := start("h4", n1.GossipAddr())
	eventuallyFor(t, 30*time.Second, "four normal members", settledAt(4, n1, n2, n3, n4))

	count := func(n *Node) (rows, outside int) {
		p, err := meta.NewPlacement(n.cluster.rl.state.Load())
		if err != nil {
			t.Fatal(err)
		}
		it, err := n.cluster.handler.Engine.NewIterator(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for it.Next() {
			rows++
			mine := false
			tok, _, err := ring.SplitEngineKey(it.Key())
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range p.ReadSet(tok) {
				mine = mine || id == n.cluster.self
			}
			if !mine {
				outside++
			}
		}
		return rows, outside
	}
	before, outside := count(n2)
	if outside == 0 {
		t.Fatalf("n2 holds %d rows, none outside its ranges: the join moved nothing away from it", before)
	}
	deleted, err := n2.cluster.rl.cleanup()
	if err != nil || deleted == 0 {
		t.Fatalf("cleanup: %d ranges, %v", deleted, err)
	}
	after, left := count(n2)
	t.Logf("n2 held %d rows, %d of them outside its ranges; cleanup deleted %d ranges, %d rows remain", before, outside, deleted, after)
	if left != 0 || after != before-outside {
		t.Errorf("after cleanup n2 holds %d rows, %d outside its ranges; want %d and 0", after, left, before-outside)
	}
	conn := client.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if v, err := conn.Get(ctx, fmt.Sprintf("k%d", i)).Result(); err != nil || v != "v" {
			t.Fatalf("k%d after cleanup at ALL: %q %v", i, v, err)
		}
	}
}

// eventuallyFor waits up to limit for cond.
func eventuallyFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
	}
}
