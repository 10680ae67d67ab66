package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/admin"
)

// A running `kura dev` grows and shrinks on request: `kura dev add N` and `kura dev remove
// NODE` leave a request in the cluster's data directory (devRequests) and wait; the
// supervisor, which owns every node process, picks it up, starts new nodes (which join
// through the metadata log, streaming their ranges) or decommissions a node and stops it
// once it has left, and records the nodes in devState. The requests go through files
// rather than a socket because the supervisor already owns the data directory and needs
// nothing else open.

// devState is the file in which a running `kura dev` lists its nodes.
const devState = "dev.json"

// devRequests is the directory of requests to a running `kura dev`.
const devRequests = "dev-requests"

// devNodeState is one node in devState.
type devNodeState struct {
	Name   string `json:"name"`
	Engine string `json:"engine"`
	Client string `json:"client"`
	Admin  string `json:"admin"`
	PID    int    `json:"pid"`
}

// devRequest is one request to a running `kura dev`: add N hosts, or remove a node.
type devRequest struct {
	Add    int    `json:"add,omitempty"`
	Remove string `json:"remove,omitempty"`
}

// devRoot is where devState and devRequests live: host 1's data directory.
func devRoot(dataDir string) string { return forHost(dataDir, 1) }

// writeDevState records nodes in devState.
func writeDevState(f *devFlags, nodes []*devNode) error {
	var st []devNodeState
	for _, n := range nodes {
		s := devNodeState{Name: n.name, Engine: n.engine, Client: n.client, Admin: n.admin}
		if n.cmd != nil && n.cmd.Process != nil {
			s.PID = n.cmd.Process.Pid
		}
		st = append(st, s)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(devRoot(f.dataDir), devState+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(devRoot(f.dataDir), devState))
}

// serveDevRequests runs the requests left for the supervisor until ctx ends, and returns
// the nodes as they are then (those it started included, those it removed not).
func serveDevRequests(ctx context.Context, out io.Writer, exe string, f *devFlags, nodes []*devNode) []*devNode {
	dir := filepath.Join(devRoot(f.dataDir), devRequests)
	_ = os.MkdirAll(dir, 0o755)
	_ = writeDevState(f, nodes)
	for {
		select {
		case <-ctx.Done():
			return nodes
		case <-time.After(200 * time.Millisecond):
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			b, err := os.ReadFile(path)
			_ = os.Remove(path)
			var req devRequest
			if err == nil {
				err = json.Unmarshal(b, &req)
			}
			result := filepath.Join(dir, strings.TrimSuffix(e.Name(), ".json")+".done")
			switch {
			case err != nil:
			case req.Add > 0:
				nodes, err = addDevNodes(ctx, out, exe, f, nodes, req.Add)
			case req.Remove != "":
				nodes, err = removeDevNode(ctx, out, f, nodes, req.Remove)
			default:
				err = errors.New("empty request")
			}
			msg := "ok"
			if err != nil {
				msg = err.Error()
				fmt.Fprintf(out, "kura dev: request failed: %v\n", err)
			}
			_ = writeDevState(f, nodes)
			_ = os.WriteFile(result, []byte(msg), 0o644)
		}
	}
}

// addDevNodes starts n more hosts, each with every engine of the cluster, and waits
// until the ring has them all normal.
func addDevNodes(ctx context.Context, out io.Writer, exe string, f *devFlags, nodes []*devNode, n int) ([]*devNode, error) {
	grown := *f
	grown.hosts = f.hosts + n
	planned, err := planDev(&grown)
	if err != nil {
		return nodes, err
	}
	added := planned[len(nodes):]
	for _, nd := range added {
		if err := startDevNode(exe, f, nd, nodes[0].gossip); err != nil {
			return nodes, err
		}
	}
	f.hosts = grown.hosts
	nodes = append(nodes, added...)
	if err := waitRing(ctx, nodes, f.timeout+2*time.Minute); err != nil {
		return nodes, err
	}
	fmt.Fprintf(out, "kura dev: added %d hosts, %d nodes in the ring\n", n, len(nodes))
	for _, nd := range added {
		fmt.Fprintf(out, "  %-16s redis-cli -p %s    admin %s    pid %d\n", nd.name,
			strings.TrimPrefix(nd.client, "127.0.0.1:"), nd.admin, nd.cmd.Process.Pid)
	}
	return nodes, nil
}

// removeDevNode decommissions the node named name (its ranges stream to the new owners),
// waits until it has left the ring, and stops it.
func removeDevNode(ctx context.Context, out io.Writer, f *devFlags, nodes []*devNode, name string) ([]*devNode, error) {
	i := slices.IndexFunc(nodes, func(n *devNode) bool { return n.name == name })
	if i < 0 {
		return nodes, fmt.Errorf("no node %q in this cluster", name)
	}
	if len(nodes) == 1 {
		return nodes, errors.New("cannot remove the last node")
	}
	n := nodes[i]
	if err := postTopology(ctx, io.Discard, n.admin, admin.TopologyRequest{Op: "decommission"}); err != nil {
		return nodes, err
	}
	other := nodes[(i+1)%len(nodes)]
	deadline := time.Now().Add(f.timeout + 5*time.Minute)
	for {
		st, err := fetchStatus(ctx, other.admin)
		if err == nil && st.Topology != nil && st.Topology.Change == nil {
			left := false
			for _, m := range st.Members {
				if m.ClientAddr == n.client && m.Status == "left" {
					left = true
				}
			}
			if left {
				break
			}
		}
		if time.Now().After(deadline) {
			return nodes, fmt.Errorf("%s did not leave the ring in time; see its log", name)
		}
		select {
		case <-ctx.Done():
			return nodes, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	stopDev([]*devNode{n}, f.stopTimeout)
	fmt.Fprintf(out, "kura dev: %s decommissioned and stopped, %d nodes left\n", name, len(nodes)-1)
	return slices.Delete(nodes, i, i+1), nil
}

// sendDevRequest leaves req for the `kura dev` running on dataDir and waits for its
// answer.
func sendDevRequest(ctx context.Context, out io.Writer, dataDir string, req devRequest, limit time.Duration) error {
	if err := loadDevSecurity(dataDir); err != nil { // a --secure cluster's admin endpoints
		return err
	}
	root := devRoot(dataDir)
	state := filepath.Join(root, devState)
	b, err := os.ReadFile(state)
	if err != nil {
		return fmt.Errorf("no kura dev is running on %s (%w)", dataDir, err)
	}
	var nodes []devNodeState
	if err := json.Unmarshal(b, &nodes); err != nil || len(nodes) == 0 || syscall.Kill(nodes[0].PID, 0) != nil {
		return fmt.Errorf("no kura dev is running on %s", dataDir)
	}
	name := strconv.FormatInt(time.Now().UnixNano(), 10)
	dir := filepath.Join(root, devRequests)
	body, _ := json.Marshal(req)
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name+".json")); err != nil {
		return err
	}
	done := filepath.Join(dir, name+".done")
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(done); err == nil {
			_ = os.Remove(done)
			if msg := string(b); msg != "ok" {
				return errors.New(msg)
			}
			b, _ = os.ReadFile(state)
			var after []devNodeState
			_ = json.Unmarshal(b, &after)
			for _, n := range after {
				fmt.Fprintf(out, "  %-16s redis-cli -p %s    admin %s    pid %d\n", n.Name, strings.TrimPrefix(n.Client, "127.0.0.1:"), n.Admin, n.PID)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kura dev did not answer within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// addDevSubcommands adds `kura dev add` and `kura dev remove`.
func addDevSubcommands(cmd *cobra.Command) {
	var dataDir string
	var limit time.Duration
	add := &cobra.Command{
		Use:   "add N",
		Short: "Grow a running kura dev by N hosts (each with the cluster's engines); they join, streaming their ranges",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return fmt.Errorf("add: want a positive number of hosts, got %q", args[0])
			}
			return sendDevRequest(c.Context(), c.OutOrStdout(), dataDir, devRequest{Add: n}, limit)
		},
	}
	remove := &cobra.Command{
		Use:   "remove NODE",
		Short: "Shrink a running kura dev: decommission NODE (e.g. host3-lsm), its ranges stream to the others, then stop it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return sendDevRequest(c.Context(), c.OutOrStdout(), dataDir, devRequest{Remove: args[0]}, limit)
		},
	}
	for _, c := range []*cobra.Command{add, remove} {
		c.Flags().StringVar(&dataDir, "data-dir", "kura-dev", "the running kura dev's --data-dir")
		c.Flags().DurationVar(&limit, "timeout", 10*time.Minute, "how long to wait for the change")
		cmd.AddCommand(c)
	}
}
