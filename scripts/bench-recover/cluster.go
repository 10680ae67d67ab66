package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/ring"
)

// cluster is a node's /cluster, what `kura admin status` reads (admin.ClusterStatus).
type cluster = admin.ClusterStatus

// fetchCluster reads addr's /cluster.
func fetchCluster(ctx context.Context, addr string) (*cluster, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/cluster", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/cluster: %s", addr, resp.Status)
	}
	var c cluster
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return nil, fmt.Errorf("%s/cluster: %w", addr, err)
	}
	return &c, nil
}

// settledCmd exits 0 when the node at -admin reports -normal normal members, all up, no
// other member normal, and no change in flight; 1 otherwise (or when it does not answer).
func settledCmd(args []string) error {
	fs := flag.NewFlagSet("settled", flag.ExitOnError)
	adminAddr := fs.String("admin", "", "admin address of a node")
	normal := fs.Int("normal", 6, "normal members wanted")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := fetchCluster(ctx, *adminAddr)
	if err != nil || c.Topology == nil || c.Topology.Change != nil {
		os.Exit(1)
	}
	n := 0
	for _, m := range c.Members {
		if m.Status == "normal" {
			if !m.Up {
				os.Exit(1)
			}
			n++
		}
	}
	if n != *normal {
		os.Exit(1)
	}
	return nil
}

// readCluster reads a saved /cluster.
func readCluster(path string) (*cluster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Topology == nil {
		return nil, fmt.Errorf("%s: no topology (is the node running --ring-source=log?)", path)
	}
	return &c, nil
}

// buildRing is the ring c routes by: every member with tokens (bench-join's).
func buildRing(c *cluster) (*ring.Ring, error) {
	tokens := map[string][]ring.Token{}
	for _, t := range c.Tokens {
		tokens[t.ID] = append(tokens[t.ID], ring.Token(t.Token))
	}
	var nodes []ring.Node
	for _, m := range c.Members {
		if len(tokens[m.ID]) > 0 {
			nodes = append(nodes, ring.Node{ID: ring.NodeID(m.ID), Host: m.Host, Rack: m.Rack, Role: ring.WriteOptimized, Tokens: tokens[m.ID]})
		}
	}
	return ring.New(nodes)
}
