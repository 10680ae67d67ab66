package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/config"
)

// scanCluster is a cluster of real nodes under test whose members may restart.
type scanCluster struct {
	t     *testing.T
	mu    sync.Mutex
	cfgs  []config.Config
	nodes []*Node // nil while down
}

// client returns a client of node i, or nil while it is down. The caller closes it.
func (c *scanCluster) client(i int) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[i] == nil {
		return nil
	}
	return redis.NewClient(&redis.Options{Addr: c.nodes[i].Addr(), MaxRetries: -1, Protocol: 2})
}

func (c *scanCluster) stop(i int) {
	c.mu.Lock()
	n := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if err := n.Shutdown(context.Background()); err != nil {
		c.t.Errorf("shutdown of node %d: %v", i, err)
	}
}

func (c *scanCluster) start(i int, name string) {
	n, err := Start(c.cfgs[i], keptLog(c.t, name))
	if err != nil {
		c.t.Fatalf("start node %d: %v", i, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	c.mu.Unlock()
}

// The check of SCAN: a scan of a four-node cluster (RF 3, four tokens a node, so
// that token ranges have different replica sets; three lsm nodes and a memory one) while
// clients update, delete and insert keys through every node and one node, picked by the
// seed, restarts: the memory node, which comes back empty and refills (held refilling
// for a while), or an lsm node, which comes back without the writes it missed. Before
// the scan, n2 missed a hundred keys (it was down when they were written, at QUORUM, and
// hints are not replayed here), so that they are on two replicas of three and a page
// finds them only by merging a quorum. Pages go through a node picked at random each
// time, with random COUNTs, and a failed page is asked again, with the same cursor,
// elsewhere. Every key present for the whole scan (acknowledged at QUORUM before it
// began, updated or left alone during it) is returned, and no key that never existed is.
func TestScanUnderConcurrentWritesAndARestartReturnsEveryKeyPresentThroughout(t *testing.T) {
	rng := rand.New(rand.NewPCG(scanSeed(t), 7))
	ctx := context.Background()
	engines := []string{"lsm", "lsm", "lsm", "memory"}
	c := &scanCluster{t: t, nodes: make([]*Node, len(engines))}
	release := make(chan struct{}) // lets the restarted memory node's refill go
	released := false
	defer func(h time.Duration, g func()) {
		if !released {
			close(release)
		}
		for i := range c.nodes {
			if c.nodes[i] != nil {
				c.stop(i)
			}
		}
		hintReplayInterval, refillGate = h, g
	}(hintReplayInterval, refillGate)
	hintReplayInterval, refillGate = time.Hour, func() { <-release }
	for i, eng := range engines {
		seed := ""
		if i > 0 {
			seed = c.nodes[0].GossipAddr()
		}
		cfg := clusterConfig(t, fmt.Sprint("h", i+1), seed)
		cfg.Engine, cfg.NumTokens, cfg.Durability = eng, 4, "periodic"
		c.cfgs = append(c.cfgs, cfg)
		c.start(i, fmt.Sprint("n", i+1))
	}
	for _, n := range c.nodes {
		eventually(t, "every node sees four normal members", func() bool { return ready(n, len(engines)) })
	}

	// Keys 0-149 stay as they are (n2 lacks 0-99), 150-229 are updated during the scan,
	// 230-299 deleted; 300-399 are inserted during it. All but the last are written, at
	// QUORUM, first.
	const lagging, stable, updated, deleted, total = 100, 150, 230, 300, 400
	key := func(i int) string { return fmt.Sprintf("k%03d", i) }
	preload := func(from, to int) {
		c1 := c.client(0)
		defer c1.Close()
		for i := from; i < to; i++ {
			if err := c1.Set(ctx, key(i), "v0", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.stop(1)
	preload(0, lagging)
	c.start(1, "n2 restarted, lagging")
	for _, n := range c.nodes {
		eventually(t, "every node sees n2 back", func() bool { return ready(n, len(engines)) })
	}
	preload(lagging, deleted)

	var attempted sync.Map // keys a writer tried to insert: they may exist
	stop := make(chan struct{})
	var writers sync.WaitGroup
	var writes, writeErrs atomic.Int64
	for w := range 3 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		writers.Add(1)
		go func() {
			defer writers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cl := c.client(wrng.IntN(len(engines)))
				if cl == nil {
					continue
				}
				i := stable + wrng.IntN(total-stable)
				var err error
				switch {
				case i < updated:
					err = cl.Set(ctx, key(i), fmt.Sprint("v", writes.Load()), 0).Err()
				case i < deleted:
					err = cl.Del(ctx, key(i)).Err()
				default:
					attempted.Store(key(i), true)
					err = cl.Set(ctx, key(i), "new", 0).Err()
				}
				cl.Close()
				writes.Add(1)
				if err != nil {
					writeErrs.Add(1)
				}
			}
		}()
	}

	victim := 2 + rng.IntN(2) // n3 (lsm) or n4 (memory)
	returned := map[string]int{}
	var pages, retries int
	down := false
	cursor := uint64(0)
	for {
		pages++
		switch pages {
		case 4:
			t.Logf("restarting node %d (%s)", victim+1, engines[victim])
			c.stop(victim)
			down = true
		case 10:
			c.start(victim, fmt.Sprintf("n%d restarted", victim+1))
			down = false
		case 30:
			close(release)
			released = true
		}
		var keys []string
		var next uint64
		for attempt := 0; ; attempt++ {
			if attempt == 200 {
				t.Fatalf("page from cursor %d failed 200 times", cursor)
			}
			cl := c.client(rng.IntN(len(engines)))
			if cl == nil {
				continue
			}
			var err error
			keys, next, err = cl.Scan(ctx, cursor, "k*", int64(1+rng.IntN(12))).Result()
			cl.Close()
			if err == nil {
				break
			}
			retries++
			t.Logf("page from cursor %d: %v; asking again", cursor, err)
			time.Sleep(10 * time.Millisecond) // a node is coming back: give it a moment
		}
		for _, k := range keys {
			returned[k]++
		}
		if next == 0 {
			break
		}
		if next <= cursor {
			t.Fatalf("cursor %d after %d", next, cursor)
		}
		cursor = next
	}
	if down {
		t.Errorf("the scan ended after %d pages, before the node came back: the test proves less", pages)
		c.start(victim, fmt.Sprintf("n%d restarted", victim+1))
	}
	close(stop)
	writers.Wait()

	dups := 0
	for k, n := range returned {
		var i int
		if _, err := fmt.Sscanf(k, "k%03d", &i); err != nil || i >= total {
			t.Errorf("%q was returned: no such key was ever written", k)
			continue
		}
		if _, tried := attempted.Load(k); i >= deleted && !tried {
			t.Errorf("%q was returned: it was never written", k)
		}
		dups += n - 1
	}
	for i := range updated {
		if returned[key(i)] == 0 {
			t.Errorf("%s, present for the whole scan, was not returned", key(i))
		}
	}
	t.Logf("%d pages (%d asked again), %d keys returned (%d twice), %d writes during the scan (%d failed)",
		pages, retries, len(returned), dups, writes.Load(), writeErrs.Load())

	// DBSIZE is the cluster's, estimated from n1's rows (deleted ones and, on lsm, write
	// operands not yet compacted included) and its share of the ring, and says so.
	cl := c.client(0)
	defer cl.Close()
	size, err := cl.DBSize(ctx).Result()
	if info := cl.Info(ctx, "keyspace").Val(); err != nil || size < stable || !strings.Contains(info, "keys_exact:0") {
		t.Errorf("DBSIZE %d (%v), INFO keyspace %q: want an estimate of at least %d keys, not exact", size, err, info, stable)
	}
	t.Logf("DBSIZE %d (%d keys returned by the scan)", size, len(returned))
}
