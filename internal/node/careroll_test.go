package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/config"
)

// TestRollingChangeOfCAOnARunningCluster follows docs/design/security.md's steps on a
// 3-node cluster with mutual TLS between nodes while a client writes at QUORUM: the new
// CA joins every node's bundle, each node's certificate is reissued from it in turn, and
// the old CA leaves the bundles, with no restart. A fourth node, whose certificate comes
// from the new CA alone, then joins: its data streams to it, and it dials and is dialed by
// every node, so the rolled certificates and bundles are what new handshakes meet. Every
// acknowledged write is read back at ALL afterwards.
func TestRollingChangeOfCAOnARunningCluster(t *testing.T) {
	oldCA, newCA := t.TempDir(), t.TempDir()
	for _, d := range []string{oldCA, newCA} {
		if err := cert.CreateCA(d, cert.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	bundle := func(dir string, cas ...string) {
		var b bytes.Buffer
		for _, ca := range cas {
			pem, err := os.ReadFile(filepath.Join(ca, cert.CAFile))
			if err != nil {
				t.Fatal(err)
			}
			b.Write(pem)
		}
		if err := os.WriteFile(filepath.Join(dir, cert.CAFile), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(dir, ca, host string) {
		if err := cert.CreateNode(dir, ca, host, []string{"127.0.0.1"}, cert.Options{Overwrite: true}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(host, seed, dir string) *Node {
		return startMember(t, host, seed, func(cfg *config.Config) {
			useTLS(cfg, dir)
			cfg.TLSInternode = true
		})
	}
	hosts := []string{"h1", "h2", "h3"}
	dirs := map[string]string{}
	for _, h := range hosts {
		dirs[h] = t.TempDir()
		issue(dirs[h], oldCA, h)
		bundle(dirs[h], oldCA)
	}
	n1 := start("h1", "", dirs["h1"])
	nodes := []*Node{n1, start("h2", n1.GossipAddr(), dirs["h2"]), start("h3", n1.GossipAddr(), dirs["h3"])}
	for _, n := range nodes {
		eventuallyFor(t, 60*time.Second, "every node sees three normal members", func() bool { return ready(n, 3) })
	}

	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	acked := map[string]int{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := redis.NewClient(&redis.Options{Addr: nodes[1].Addr(), MaxRetries: -1})
		defer c.Close()
		for i := 0; ctx.Err() == nil; i++ {
			k := fmt.Sprintf("roll-%d", i)
			if err := c.Set(ctx, k, i, 0).Err(); err == nil {
				mu.Lock()
				acked[k] = i
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// Each step waits past the certificate source's check interval (1 s), so that the
	// next handshake reads the files as changed.
	step := func() { time.Sleep(1500 * time.Millisecond) }
	for _, h := range hosts { // 1. trust both CAs
		bundle(dirs[h], oldCA, newCA)
	}
	step()
	for _, h := range hosts { // 2. reissue from the new CA, one node at a time
		issue(dirs[h], newCA, h)
		step()
	}
	for _, h := range hosts { // 3. drop the old CA
		bundle(dirs[h], newCA)
	}
	step()

	d4 := t.TempDir()
	issue(d4, newCA, "h4")
	bundle(d4, newCA)
	n4 := start("h4", n1.GossipAddr(), d4)
	eventuallyFor(t, 90*time.Second, "the fourth node, on the new CA alone, joined and its change finished", func() bool {
		st := n4.cluster.rl.state.Load()
		return ready(n4, 4) && st.Change == nil && n4.cluster.machine.Epoch() == st.Epoch
	})
	stop()
	wg.Wait()
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged during the roll", len(acked))
	}
	r := redis.NewClient(&redis.Options{Addr: n4.Addr()})
	defer r.Close()
	bg := context.Background()
	if err := r.Do(bg, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for k, v := range acked {
		if got, err := r.Get(bg, k).Int(); err != nil || got != v {
			t.Fatalf("acknowledged %s=%d read at ALL through the new node: %d, %v", k, v, got, err)
		}
	}
	t.Logf("%d writes acknowledged during the roll, all read back at ALL through the node that joined on the new CA", len(acked))
}
