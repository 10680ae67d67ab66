package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/ring"
)

// startThree starts an in-process cluster of three nodes on three hosts (each engine
// given in turn) and returns them once every node sees three normal members.
func startThree(t *testing.T, engines ...string) []*Node {
	t.Helper()
	var nodes []*Node
	for i := range 3 {
		seed := ""
		if i > 0 {
			seed = nodes[0].GossipAddr()
		}
		cfg := clusterConfig(t, fmt.Sprintf("h%d", i+1), seed)
		cfg.Engine = engines[i%len(engines)]
		n, err := Start(cfg, keptLog(t, cfg.Host))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Shutdown(context.Background()) })
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		eventually(t, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	return nodes
}

func clients(t *testing.T, nodes []*Node, proto int) []*redis.Client {
	var out []*redis.Client
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: proto, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		out = append(out, c)
	}
	return out
}

// Concurrent INCRs through every coordinator of a heterogeneous cluster land once each,
// and while one leader serves the key (no failure here) they return distinct values: the
// leader serializes them. Every node reads the same total.
func TestConcurrentIncrsThroughEveryNodeCountOnceAndStayUnique(t *testing.T) {
	nodes := startThree(t, "lsm", "btree", "memory")
	cs := clients(t, nodes, 3)
	ctx := context.Background()
	const workers, each = 6, 25
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			c := cs[w%len(cs)]
			for range each {
				v, err := c.Incr(ctx, "ctr").Result()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("INCR replies are not 1..%d: reply %d is %d (%v)", workers*each, i, v, got)
		}
	}
	for i, c := range cs {
		conn := c.Conn()
		if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := conn.Get(ctx, "ctr").Int64(); err != nil || v != workers*each {
			t.Errorf("GET through node %d at ALL: %d %v, want %d", i, v, err, workers*each)
		}
		conn.Close()
	}
	// HINCRBY and INCRBYFLOAT go the same way.
	for i, c := range cs {
		if err := c.HIncrBy(ctx, "h", "f", int64(i+1)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.IncrByFloat(ctx, "fl", 0.5).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := cs[0].HGet(ctx, "h", "f").Int64(); err != nil || v != 6 {
		t.Errorf("HGET after HINCRBY 1+2+3: %d %v", v, err)
	}
	if v, err := cs[1].Get(ctx, "fl").Result(); err != nil || v != "1.5" {
		t.Errorf("GET after INCRBYFLOAT 0.5 x3: %q %v", v, err)
	}
}

// A transaction on one key runs at its leader, in either protocol, through any node; one
// that touches two keys is refused; WATCH aborts EXEC after another client's write.
func TestTransactionsRunAtTheKeysLeader(t *testing.T) {
	nodes := startThree(t, "memory")
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		cs := clients(t, nodes, proto)
		key := fmt.Sprintf("rl%d", proto)
		for i, c := range cs {
			var incr *redis.IntCmd
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				incr = p.Incr(ctx, key)
				p.Expire(ctx, key, 100e9)
				return nil
			})
			if err != nil || incr.Val() != int64(i+1) {
				t.Fatalf("RESP%d: MULTI INCR EXPIRE EXEC through node %d: %d %v", proto, i, incr.Val(), err)
			}
		}
		if ttl, err := cs[2].TTL(ctx, key).Result(); err != nil || ttl.Seconds() < 90 {
			t.Errorf("RESP%d: TTL after the transactions: %v %v", proto, ttl, err)
		}
		_, err := cs[0].TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "a", 1, 0)
			p.Set(ctx, "b", 1, 0)
			return nil
		})
		if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
			t.Errorf("RESP%d: a two-key transaction: %v, want CROSSSLOT", proto, err)
		}
		// A non-transactional pipeline may touch any keys.
		if _, err := cs[1].Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "a", 1, 0)
			p.Incr(ctx, "b")
			return nil
		}); err != nil {
			t.Errorf("RESP%d: pipeline: %v", proto, err)
		}
		// WATCH, then a write through another node: EXEC aborts.
		err = cs[0].Watch(ctx, func(tx *redis.Tx) error {
			if err := cs[2].Set(ctx, "w", "theirs", 0).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "w", "mine", 0)
				return nil
			})
			return err
		}, "w")
		if err != redis.TxFailedErr {
			t.Errorf("RESP%d: WATCH then another client's SET: %v, want the transaction to fail", proto, err)
		}
		if v, _ := cs[1].Get(ctx, "w").Result(); v != "theirs" {
			t.Errorf("RESP%d: w = %q after the aborted transaction", proto, v)
		}
	}
}

// The key's leader is the first live replica in ring order, the same for every
// coordinator.
func TestEveryCoordinatorPicksTheSameLeader(t *testing.T) {
	nodes := startThree(t, "memory")
	for i := range 20 {
		key := []byte(fmt.Sprintf("k%d", i))
		var first []ring.NodeID
		for _, n := range nodes {
			l := n.cluster.machine.Leaders(key)
			if len(l) != 3 {
				t.Fatalf("%s: leaders %v", key, l)
			}
			if first == nil {
				first = l
			} else if !slices.Equal(first, l) {
				t.Fatalf("%s: leaders %v and %v", key, first, l)
			}
		}
	}
}

// In a rolling upgrade a key's leader may be a node that predates wire.MethodLeader (it
// answers "unknown method", as this node does before its front end exists): the
// coordinator then runs the commands itself, and no increment is lost.
func TestACoordinatorLeadsWhenTheLeaderIsAnOlderNode(t *testing.T) {
	nodes := startThree(t, "memory")
	key := "upgrading"
	leader := nodes[0].cluster.machine.Leaders([]byte(key))[0]
	var others []*Node
	for _, n := range nodes {
		if ring.NodeID(n.ID()) == leader {
			n.cluster.store.leader.Store(nil) // its internode server answers as an old node
		} else {
			others = append(others, n)
		}
	}
	cs := clients(t, others, 2)
	ctx := context.Background()
	for i := range 10 {
		for _, c := range cs {
			if err := c.Incr(ctx, key).Err(); err != nil {
				t.Fatalf("INCR %d through a new coordinator of an old leader: %v", i, err)
			}
		}
	}
	for _, c := range cs {
		conn := c.Conn()
		if err := conn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := conn.Get(ctx, key).Int64(); err != nil || v != 20 {
			t.Errorf("GET at ALL: %d %v, want 20", v, err)
		}
		conn.Close()
	}
}

// A SET concurrent with INCRs (doc.go, "Counters"): every INCR that began after the SET
// was acknowledged adds to the SET's value and replies above it, and none that finished
// before the SET began survives it.
func TestSetConcurrentWithIncrsKeepsTheIncrsThatFollowIt(t *testing.T) {
	nodes := startThree(t, "memory", "lsm")
	cs := clients(t, nodes, 2)
	ctx := context.Background()
	const base = 1_000_000
	var setBegan, setAcked atomic.Int64 // nanoseconds since start; 0 until then
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) + 1 }
	type incr struct {
		began, done int64
		reply       int64
		err         error
	}
	var mu sync.Mutex
	var incrs []incr
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			c := cs[w%len(cs)]
			for range 60 {
				b := since()
				v, err := c.Incr(ctx, "k").Result()
				mu.Lock()
				incrs = append(incrs, incr{began: b, done: since(), reply: v, err: err})
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for { // SET once some INCRs are done, whatever the machine's speed
			mu.Lock()
			n := len(incrs)
			mu.Unlock()
			if n >= 12 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		setBegan.Store(since())
		if err := cs[1].Set(ctx, "k", base, 0).Err(); err != nil {
			t.Error(err)
		}
		setAcked.Store(since())
	})
	wg.Wait()
	var after, before, concurrent int64
	for _, in := range incrs {
		if in.err != nil {
			t.Fatalf("INCR: %v", in.err)
		}
		switch {
		case in.began > setAcked.Load():
			after++
			if in.reply <= base {
				t.Errorf("an INCR that began after the SET was acknowledged replied %d", in.reply)
			}
		case in.done < setBegan.Load():
			before++
		default:
			concurrent++
		}
	}
	got, err := cs[2].Get(ctx, "k").Int64()
	if err != nil || got < base+after || got > base+after+concurrent {
		t.Fatalf("after SET %d with %d INCRs before it, %d concurrent and %d after: %d %v", base, before, concurrent, after, got, err)
	}
	if after == 0 || before == 0 {
		t.Fatalf("the SET did not land among the INCRs: %d before it, %d after", before, after)
	}
	t.Logf("%d INCRs before the SET, %d concurrent, %d after: %d", before, concurrent, after, got)
}
