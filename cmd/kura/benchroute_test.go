package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/bench"
	redisbench "github.com/kuradb/kura/internal/bench/redis"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/node"
)

// A real three-node cluster with one copy of each key: a token-routed workload (kura
// bench's Redis client, ?route=token) sends every operation to the node that holds its
// key, so no node serves a single read or write from the network; routed by thread, most
// operations cross to another node.
func TestTokenRoutedWorkloadNeedsNoInternodeHop(t *testing.T) {
	var nodes []*node.Node
	for h := range 3 {
		c := config.Default()
		c.Engine, c.DataDir, c.Host = "memory", t.TempDir(), fmt.Sprint("h", h)
		c.Listen, c.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		c.GossipListen, c.InternodeListen = "127.0.0.1:0", "127.0.0.1:0"
		c.ReplicationFactor, c.Placement = 1, "simple"
		if h > 0 {
			c.Seeds = nodes[0].GossipAddr()
		}
		n, err := node.Start(c, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
		nodes = append(nodes, n)
	}
	addrs := ""
	for i, n := range nodes {
		if i > 0 {
			addrs += ","
		}
		addrs += n.Addr()
	}
	waitForMembers(t, nodes[0].AdminAddr(), 3)
	served := func() int {
		total := 0
		for _, n := range nodes {
			total += networkServed(t, n.AdminAddr())
		}
		return total
	}
	w, _ := bench.NamedWorkload("a")
	w.RecordCount = 300
	w.WriteAllFields = true
	for _, route := range []string{redisbench.RouteToken, redisbench.RouteNode} {
		target, err := redisbench.ParseURL("resp://" + addrs + "?record=string&route=" + route)
		if err != nil {
			t.Fatal(err)
		}
		before := served()
		ctx := context.Background()
		load, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseLoad, Target: target, Threads: 3})
		if err != nil {
			t.Fatal(err)
		}
		run, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseRun, Target: target, Threads: 3, Operations: 600})
		if err != nil {
			t.Fatal(err)
		}
		read, _ := run.Op("READ")
		if load.Errors != 0 || run.Errors != 0 || read.NotFound != 0 {
			t.Fatalf("route=%s: load %d errors, run %d errors, %d reads not found", route, load.Errors, run.Errors, read.NotFound)
		}
		hops := served() - before
		t.Logf("route=%s: %d of %d operations served from the network", route, hops, load.Ops+run.Ops)
		if (route == redisbench.RouteToken) != (hops == 0) {
			t.Fatalf("route=%s: %d operations served from the network", route, hops)
		}
	}
}

// waitForMembers waits until the node at admin sees want members up, with tokens.
func waitForMembers(t *testing.T, admin string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			Members []struct {
				Up     bool `json:"up"`
				Tokens int  `json:"tokens"`
			} `json:"members"`
		}
		if resp, err := http.Get("http://" + admin + "/cluster"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			ok := err == nil && len(st.Members) == want
			for _, m := range st.Members {
				ok = ok && m.Up && m.Tokens > 0
			}
			if ok {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the cluster did not reach %d members", want)
}

var servedCount = regexp.MustCompile(`(?m)^kura_replica_request_seconds_count\{method="(read|write)",role="[^"]*"\} (\d+)`)

// networkServed sums the reads and writes the node at admin served to other nodes'
// coordinators (kura_replica_request_seconds).
func networkServed(t *testing.T, admin string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range servedCount.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		total += n
	}
	return total
}
