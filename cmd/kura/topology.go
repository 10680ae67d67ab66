package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/admin"
)

// addTopologyCmds adds the membership changes to `kura admin`: decommission, removenode,
// plan, commit, cancel and stream-limit. Each is a TopologyRequest to POST /topology on
// the node at --admin, which proposes it to the metadata log.
func addTopologyCmds(cmd *cobra.Command, addr *string) {
	run := func(c *cobra.Command, req admin.TopologyRequest) error {
		return postTopology(c.Context(), c.OutOrStdout(), *addr, req)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "decommission [ID...]",
		Short: "Take live nodes out of the ring: their ranges stream to the new owners, then they leave (default: the node at --admin)",
		Long: `decommission hands the ranges of each named live node (the node at --admin when none is
named) to the replicas that take them over, streaming from the leaving node, and then takes
it out of the ring: it stops serving and may be shut down. Writes go on meanwhile (to the
old and the new replicas of each moving range) and reads too (from the old replicas until a
range has moved). kura admin status shows the change and its streams.`,
		RunE: func(c *cobra.Command, args []string) error {
			return run(c, admin.TopologyRequest{Op: "decommission", Nodes: args})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "removenode ID...",
		Short: "Take dead nodes out of the ring: the survivors stream among themselves to restore the replication factor",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return run(c, admin.TopologyRequest{Op: "removenode", Nodes: args})
		},
	})
	var joins, leaves, removes []string
	for _, op := range []struct{ use, short string }{
		{"plan", "Show a change without starting it: ranges and bytes to move per node, and the time bound at the stream limit"},
		{"commit", "Start a change: the staged joiners (--join=staged), or the nodes named with --join, --leave and --remove"},
	} {
		c := &cobra.Command{
			Use:   op.use,
			Short: op.short,
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				return run(c, admin.TopologyRequest{Op: op.use, Joins: joins, Leaves: leaves, Removes: removes})
			},
		}
		c.Flags().StringSliceVar(&joins, "join", nil, "registered joining nodes to add (default: every staged joiner)")
		c.Flags().StringSliceVar(&leaves, "leave", nil, "live nodes to decommission")
		c.Flags().StringSliceVar(&removes, "remove", nil, "dead nodes to remove")
		cmd.AddCommand(c)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "cleanup",
		Short: "Delete the rows of the ranges the node at --admin no longer replicates (like nodetool cleanup); nodes do it by themselves --cleanup-delay after a change",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run(c, admin.TopologyRequest{Op: "cleanup"})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "cancel",
		Short: "Cancel the change in flight: ranges not moved yet revert at once, moved ones stream back",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run(c, admin.TopologyRequest{Op: "cancel"})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "stream-limit BYTES_PER_SECOND",
		Short: "Set the node's stream limit (sent and received, each) for membership changes; 0 for none",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := parseBytes(args[0])
			if err != nil {
				return err
			}
			return run(c, admin.TopologyRequest{Op: "stream-limit", Limit: n})
		},
	})
}

// postTopology sends req to a node's /topology and prints its report.
func postTopology(ctx context.Context, out io.Writer, addr string, req admin.TopologyRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// A change is proposed to the metadata log, which may wait for a leader.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hr, err := adminCreds.request(ctx, http.MethodPost, addr, "/topology", bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := adminCreds.do(hr)
	if err != nil {
		return fmt.Errorf("admin %s: %w", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("admin %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.Op, strings.TrimSpace(string(b)))
	}
	_, err = out.Write(b)
	return err
}

// parseBytes reads a byte count with an optional binary suffix (K, M, G; KiB, MiB, GiB).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "IB")
	t = strings.TrimSuffix(t, "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	var n int64
	if _, err := fmt.Sscanf(t, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != t {
		return 0, fmt.Errorf("bytes per second %q: want a non-negative integer with an optional K, M or G", s)
	}
	return n * mult, nil
}

// printPeerStreams prints, while a change is in flight, the streams of every other live
// member (each node reports only the transfers it receives), asking their admin
// addresses.
func printPeerStreams(ctx context.Context, w io.Writer, st *admin.ClusterStatus) {
	if st.Topology == nil || st.Topology.Change == nil {
		return
	}
	var all []admin.StreamStatus
	all = append(all, st.Topology.Streams...)
	for _, m := range st.Members {
		if m.ID == st.Self || !m.Up || m.AdminAddr == "" {
			continue
		}
		peer, err := fetchStatus(ctx, m.AdminAddr)
		if err != nil || peer.Topology == nil || len(peer.Topology.Streams) == 0 {
			continue
		}
		fmt.Fprintf(w, "Streams into %s (%s):\n", m.ID, m.Host)
		for _, s := range peer.Topology.Streams {
			printStream(w, s)
		}
		all = append(all, peer.Topology.Streams...)
	}
	if len(all) > 0 {
		fmt.Fprintln(w, streamProgress(all))
	}
}

// streamProgress sums the streams of every live node into one line: bytes received of
// the sources' estimates, the rate of the streams running, and the time left at it. A
// removal's line is the re-replication's progress; the change ends (every range has its
// replicas again) when the last transfer is done.
func streamProgress(ss []admin.StreamStatus) string {
	var got, est int64
	var rate float64
	running := 0
	for _, s := range ss {
		got += s.Bytes
		est += max(s.Estimate, s.Bytes)
		if !s.Done {
			rate += s.RateBPS
			running++
		}
	}
	eta := "unknown"
	if rate > 0 {
		eta = (time.Duration(float64(est-got)/rate) * time.Second).String()
	}
	pct := 100.0
	if est > 0 {
		pct = 100 * float64(got) / float64(est)
	}
	return fmt.Sprintf("Progress: %s of ~%s received (%.0f%%) by %d streams, %d running at %s/s; ETA %s",
		humanBytes(got), humanBytes(est), pct, len(ss), running, humanBytes(int64(rate)), eta)
}

// printTopology prints the metadata part of kura admin status.
func printTopology(w io.Writer, t *admin.TopologyStatus) {
	leader := t.Leader
	switch {
	case t.NoQuorum:
		leader = "none: the voters lack a quorum; topology changes wait, data requests go on"
	case leader == "":
		leader = "none known: topology changes wait, data requests go on"
	case !t.Voter && t.LastPullSeconds > 0:
		leader += fmt.Sprintf(" (as of a pull %.0f s ago)", t.LastPullSeconds)
	}
	limit := "none"
	if t.StreamLimit > 0 {
		limit = humanBytes(t.StreamLimit) + "/s"
	}
	fmt.Fprintf(w, "Ring version (epoch) %d; metadata voters %s, leader %s; stream limit %s.\n", t.Epoch, strings.Join(t.Voters, ","), leader, limit)
	c := t.Change
	if c == nil {
		fmt.Fprintln(w, "No change in flight.")
		return
	}
	rev := ""
	if c.Reverting {
		rev = " (cancelled: moving its ranges back)"
	}
	fmt.Fprintf(w, "Change %d%s: %s; %d of %d ranges moved, %d of %d transfers done (%s of %s).\n", c.ID, rev, c.What,
		c.Moved, c.Ranges, c.Done, c.Transfers, humanBytes(c.DoneBytes), humanBytes(c.Bytes))
	if len(t.Streams) > 0 {
		fmt.Fprintln(w, "Streams into this node:")
	}
	for _, s := range t.Streams {
		printStream(w, s)
	}
}

// printStream prints one transfer a node receives.
func printStream(w io.Writer, s admin.StreamStatus) {
	state := fmt.Sprintf("%s/s, ETA %s", humanBytes(int64(s.RateBPS)), (time.Duration(s.ETASeconds) * time.Second).String())
	if s.Done {
		state = "done"
	}
	if s.Error != "" {
		state += "; last run stopped: " + s.Error
	}
	from := "from"
	if s.Merge {
		from = "merged from"
	}
	fmt.Fprintf(w, "  transfer %d %s %s: %s of ~%s, %s\n", s.Index, from, s.Source, humanBytes(s.Bytes), humanBytes(s.Estimate), state)
}
