package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The read-modify-write commands through every coordinator of a cluster whose key's
// leader serves throughout (doc.go in package resp, "Read-modify-write commands"):
// APPENDs and SETRANGEs all land, one SETNX (or SET NX) of many sets the key, and MSETNXs
// with keys in common never leave some keys of one and some of another.
func TestReadModifyWriteCommandsThroughEveryCoordinator(t *testing.T) {
	nodes := startThree(t, "lsm", "btree", "memory")
	cs := clients(t, nodes, 2)
	ctx := context.Background()
	const workers, each = 6, 20
	run := func(f func(c *redis.Client, w, i int) error) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					if err := f(cs[w%len(cs)], w, i); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}

	run(func(c *redis.Client, w, i int) error { return c.Append(ctx, "log", "x").Err() })
	run(func(c *redis.Client, w, i int) error {
		return c.SetRange(ctx, "board", int64(w*4), fmt.Sprintf("%c%03d", 'a'+w, i)).Err()
	})
	for _, c := range cs {
		if n, err := c.StrLen(ctx, "log").Result(); err != nil || n != workers*each {
			t.Errorf("STRLEN log through %v: %d %v, want %d", c, n, err, workers*each)
		}
		var want strings.Builder
		for w := range workers {
			fmt.Fprintf(&want, "%c%03d", 'a'+w, each-1)
		}
		if v, err := c.Get(ctx, "board").Result(); err != nil || v != want.String() {
			t.Errorf("GET board: %q %v, want %q", v, err, want.String())
		}
	}

	var mu sync.Mutex
	setnx := map[string][]int{} // key -> workers whose SETNX set it
	msetnx := map[int][]int{}   // round -> workers whose MSETNX set its keys
	run(func(c *redis.Client, w, i int) error {
		key := fmt.Sprint("nx", i)
		var ok bool
		var err error
		if w%2 == 0 {
			ok, err = c.Do(ctx, "SETNX", key, w).Bool()
		} else {
			ok, err = c.SetNX(ctx, key, w, 0).Result() // SET key w NX
		}
		if err != nil {
			return err
		}
		keys := []any{}
		for j := range 3 {
			keys = append(keys, fmt.Sprintf("m%d:%d", i, (w+j)%workers), w)
		}
		set, err := c.MSetNX(ctx, keys...).Result()
		mu.Lock()
		defer mu.Unlock()
		if ok {
			setnx[key] = append(setnx[key], w)
		}
		if set {
			msetnx[i] = append(msetnx[i], w)
		}
		return err
	})
	for i := range each {
		key := fmt.Sprint("nx", i)
		if len(setnx[key]) != 1 {
			t.Errorf("%s: SETNX replied 1 to workers %v, want exactly one", key, setnx[key])
			continue
		}
		if v, err := cs[i%3].Get(ctx, key).Result(); err != nil || v != fmt.Sprint(setnx[key][0]) {
			t.Errorf("%s = %q %v, want the winner %d's value", key, v, err, setnx[key][0])
		}
		checkMSetNX(t, cs[i%3], i, workers, msetnx[i])
	}
}

// checkMSetNX checks a round of MSETNXs in a cluster: every key holds a value of an
// MSETNX that replied 1, and of two that both replied 1 with keys in common, the common
// keys never hold the one's value on some and the other's on others (a third may have
// overwritten some).
func checkMSetNX(t *testing.T, c *redis.Client, round, workers int, winners []int) {
	t.Helper()
	ctx := context.Background()
	holder := map[int]string{} // key index -> value
	for k := range workers {
		v, err := c.Get(ctx, fmt.Sprintf("m%d:%d", round, k)).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		holder[k] = v
	}
	keysOf := func(w int) []int { return []int{w % workers, (w + 1) % workers, (w + 2) % workers} }
	won := map[string]bool{}
	for _, w := range winners {
		won[fmt.Sprint(w)] = true
	}
	for k, v := range holder {
		if v != "" && !won[v] {
			t.Errorf("round %d: key %d holds %q, of an MSETNX that replied 0", round, k, v)
		}
	}
	for _, a := range winners {
		for _, b := range winners {
			if a == b {
				continue
			}
			seen := map[string]bool{}
			for _, k := range keysOf(a) {
				if v := holder[k]; slices.Contains(keysOf(b), k) && (v == fmt.Sprint(a) || v == fmt.Sprint(b)) {
					seen[v] = true
				}
			}
			if len(seen) > 1 {
				t.Errorf("round %d: the MSETNXs of %d and %d each hold some of their common keys: %v", round, a, b, holder)
			}
		}
	}
	if len(winners) == 0 {
		t.Errorf("round %d: no MSETNX set its keys", round)
	}
}
