package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/node"
)

// startBenchCluster starts three memory nodes on loopback, one per host label, RF 3,
// QUORUM, and waits until the first sees all three up with tokens.
func startBenchCluster(b *testing.B) []*node.Node {
	var nodes []*node.Node
	for h := range 3 {
		c := config.Default()
		c.Engine, c.DataDir, c.Host = "memory", b.TempDir(), fmt.Sprint("h", h)
		c.Listen, c.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		c.GossipListen, c.InternodeListen = "127.0.0.1:0", "127.0.0.1:0"
		if h > 0 {
			c.Seeds = nodes[0].GossipAddr()
		}
		n, err := node.Start(c, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = n.Shutdown(context.Background()) })
		nodes = append(nodes, n)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var st struct {
			Members []struct {
				Up     bool `json:"up"`
				Tokens int  `json:"tokens"`
			} `json:"members"`
		}
		if resp, err := http.Get("http://" + nodes[0].AdminAddr() + "/cluster"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			ok := err == nil && len(st.Members) == 3
			for _, m := range st.Members {
				ok = ok && m.Up && m.Tokens > 0
			}
			if ok {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("the cluster did not form")
		}
	}
	return nodes
}

// BenchmarkThreeNodeCluster measures a whole in-process cluster (RESP, the coordinator,
// the transport, three memory replicas) under GETs and SETs at QUORUM from clients spread
// over the three nodes: the CPU and allocations a coordinated request costs the process.
func BenchmarkThreeNodeCluster(b *testing.B) {
	nodes := startBenchCluster(b)
	var clients []*redis.Client
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), PoolSize: 16})
		b.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	ctx := context.Background()
	for i := range 1000 {
		if err := clients[0].Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, op := range []string{"get", "set"} {
		b.Run("op="+op, func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				c := clients[next.Add(1)%3]
				i := 0
				for pb.Next() {
					key := fmt.Sprint("k", i%1000)
					i++
					var err error
					if op == "get" {
						err = c.Get(ctx, key).Err()
					} else {
						err = c.Set(ctx, key, "v", 0).Err()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
