package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SCAN through real processes: a 3-node `kura dev` cluster (lsm, RF 3) scanned page by
// page through random nodes while two clients update, delete and insert keys and one node
// is SIGKILLed, then restarted, mid-scan. A page that fails (the killed node's
// connection, a coordinator that has not noticed yet) is asked again, with the same
// cursor, through another node. Every key present for the whole scan is returned, and no
// key that never existed is. The seed (KURA_SCAN_SEED) picks the COUNTs, the nodes and
// the writes.
func TestScanThroughASIGKILLedNodeReturnsEveryKeyPresentThroughout(t *testing.T) {
	seed := rand.Uint64()
	if v := os.Getenv("KURA_SCAN_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_SCAN_SEED=%d reruns it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	base := freeBasePort(t, 3)
	dataDir := logsOnFailure(t, t.TempDir())
	_, nodes := startDev(t, "--hosts", "3", "--engines", "lsm", "--data-dir", dataDir, "--base-port", strconv.Itoa(base))
	order := []string{"host1-lsm", "host2-lsm", "host3-lsm"}
	var cs []*redis.Client
	for _, name := range order {
		waitForMembers(t, nodes[name].admin, 3)
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + nodes[name].port, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
		defer c.Close()
		cs = append(cs, c)
	}
	ctx := context.Background()
	// Keys 0-149 stay, 150-229 are updated during the scan, 230-299 deleted, 300-399
	// inserted; all but the last are written, at QUORUM, first.
	const stable, updated, deleted, total = 150, 230, 300, 400
	key := func(i int) string { return fmt.Sprintf("k%03d", i) }
	for i := range deleted {
		if err := cs[i%3].Set(ctx, key(i), "v0", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var attempted sync.Map
	stop := make(chan struct{})
	var writers sync.WaitGroup
	var writes atomic.Int64
	for w := range 2 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		writers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := cs[wrng.IntN(len(cs))]
				i := stable + wrng.IntN(total-stable)
				var err error
				switch {
				case i < updated:
					err = c.Set(ctx, key(i), "v1", 0).Err()
				case i < deleted:
					err = c.Del(ctx, key(i)).Err()
				default:
					attempted.Store(key(i), true)
					err = c.Set(ctx, key(i), "new", 0).Err()
				}
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the killed node refuses at once
				}
				writes.Add(1)
			}
		})
	}
	defer func() { close(stop); writers.Wait() }()

	var restart func()
	returned := map[string]int{}
	cursor, pages, retries := uint64(0), 0, 0
	for ; ; pages++ {
		switch pages {
		case 3:
			restart = sigkill(t, nodes["host3-lsm"].pid)
		case 10:
			restart()
		}
		var keys []string
		var next uint64
		for attempt := 0; ; attempt++ {
			if attempt == 100 {
				t.Fatalf("page from cursor %d failed 100 times", cursor)
			}
			var err error
			keys, next, err = cs[rng.IntN(len(cs))].Scan(ctx, cursor, "k*", int64(1+rng.IntN(12))).Result()
			if err == nil {
				break
			}
			retries++
			time.Sleep(20 * time.Millisecond)
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
	if pages < 10 {
		t.Fatalf("the scan ended after %d pages, before the node came back", pages)
	}
	for k := range returned {
		var i int
		if _, err := fmt.Sscanf(k, "k%03d", &i); err != nil || i >= total {
			t.Errorf("%q was returned: no such key was ever written", k)
			continue
		}
		if _, tried := attempted.Load(k); i >= deleted && !tried {
			t.Errorf("%q was returned: it was never written", k)
		}
	}
	for i := range updated {
		if returned[key(i)] == 0 {
			t.Errorf("%s, present for the whole scan, was not returned", key(i))
		}
	}
	t.Logf("%d pages (%d asked again), %d keys returned, %d writes meanwhile", pages+1, retries, len(returned), writes.Load())
}
