package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/engine/tiered"
)

func newAdminCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Inspect a running cluster through a node's admin address (like nodetool)",
	}
	cmd.PersistentFlags().StringVar(&addr, "admin", "127.0.0.1:9380", "admin address (host:port) of any node")
	bindAdminAuth(cmd.PersistentFlags())
	for _, sub := range []struct {
		use, short string
		print      func(io.Writer, *admin.ClusterStatus)
	}{
		{"status", "Members by host: ID, rack, engine role, state, owned share of the ring, clock offset", printStatus},
		{"ring", "Every vnode token and its node, in ring order", printRing},
		{"hints", "Hints this node holds for replicas that missed writes", printHints},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   sub.use,
			Short: sub.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				st, err := fetchStatus(cmd.Context(), addr)
				if err != nil {
					return err
				}
				sub.print(cmd.OutOrStdout(), st)
				if sub.use == "status" {
					printPeerStreams(cmd.Context(), cmd.OutOrStdout(), st)
				}
				return nil
			},
		})
	}
	cmd.AddCommand(newTiersCmd(&addr))
	cmd.AddCommand(newRepairCmd(&addr))
	addTopologyCmds(cmd, &addr)
	cmd.AddCommand(&cobra.Command{
		Use:   "store",
		Short: "The node's store as its engine describes it (lsm: pebble's levels, compactions by kind, caches)",
		Long: `store prints what the engine of the node at --admin reports about its store, like
nodetool tablestats: for lsm, pebble's metrics table (each level's files, size, bytes in,
read and written, write amplification; compactions by kind; flushes; caches; the log);
for a tiered node, each tier's. Engines without such a report (btree, memory) say so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printAdmin(cmd.Context(), cmd.OutOrStdout(), http.MethodGet, addr, "/debug/store")
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "rebuild",
		Short: "Refill the node's replica from its peers (like nodetool rebuild); it serves no reads until done",
		Long: `rebuild makes the node at --admin pull every range it replicates from the other replicas
of each range, in key order, as a restarted in-memory node does. Until it has, it takes
writes but is asked no reads (kura admin status shows it as refilling). For a replica far
behind its peers, such as a read-optimized replica whose asynchronous writes were deferred
to hints through a bulk load on slow disks: pulling in key order writes its B+tree far
faster than replaying the hints in the order they were written. Once it is done, the
coordinators discard the hints for it created before it started, and clear the repair
marks of the writes it lost before then (kura admin status's "needs repair" lines).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printAdmin(cmd.Context(), cmd.OutOrStdout(), http.MethodPost, addr, "/rebuild")
		},
	})
	return cmd
}

// printAdmin sends method to path on a node's admin address and prints the answer.
func printAdmin(ctx context.Context, out io.Writer, method, addr, path string) error {
	body, err := adminRequest(ctx, method, addr, path)
	if err != nil {
		return err
	}
	_, err = out.Write(body)
	return err
}

// fetchStatus reads /cluster from a node's admin address.
func fetchStatus(ctx context.Context, addr string) (*admin.ClusterStatus, error) {
	var st admin.ClusterStatus
	if err := fetchJSON(ctx, addr, "/cluster", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// errNotFound is what fetchJSON returns, wrapped, when the node has no such view.
var errNotFound = errors.New("not found")

// fetchJSON reads path from a node's admin address into v.
func fetchJSON(ctx context.Context, addr, path string, v any) error {
	body, err := adminRequest(ctx, http.MethodGet, addr, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("admin %s: %w", addr, err)
	}
	return nil
}

// adminRequest sends method to path on a node's admin address and returns the body of a
// 200 answer; any other answer is an error carrying its body (wrapping errNotFound for a
// 404).
func adminRequest(ctx context.Context, method, addr, path string) ([]byte, error) {
	return adminDo(ctx, method, addr, path, nil, 5*time.Second)
}

// adminDo is adminRequest with a JSON body (nil: none) and a timeout.
func adminDo(ctx context.Context, method, addr, path string, body []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := adminCreds.request(ctx, method, addr, path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminCreds.do(req)
	if err != nil {
		return nil, fmt.Errorf("admin %s: %w", addr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("admin %s: %w", addr, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("admin %s: %w: %s", addr, errNotFound, strings.TrimSpace(string(out)))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("admin %s: %s", addr, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// newTiersCmd is `kura admin tiers`: each tiered node's tiers, every member's when the
// node is in a cluster.
func newTiersCmd(addr *string) *cobra.Command {
	var setBudget int64
	cmd := &cobra.Command{
		Use:   "tiers",
		Short: "Tiered storage per node: rows and bytes per tier, share of reads from the fast tier, migration traffic, threshold",
		Long: `tiers shows each tiered node's tiers (every member's when the node at --admin is in a
cluster). With --set-budget it changes the fast tier's budget of the node at --admin until
that node restarts (set --fast-budget-bytes to keep it): a larger budget takes rows read from
the slow tier from then on, a smaller one moves the lowest-ranked rows over it to the slow
tier at the next window's decision.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("set-budget") {
				body, err := adminRequest(ctx, http.MethodPost, *addr, fmt.Sprintf("/tiers?budget_bytes=%d", setBudget))
				if err != nil {
					return err
				}
				var ts admin.TiersStatus
				if err := json.Unmarshal(body, &ts); err != nil {
					return fmt.Errorf("admin %s: %w", *addr, err)
				}
				printTiers(cmd.OutOrStdout(), []admin.TiersStatus{ts})
				return nil
			}
			addrs := []string{*addr}
			if st, err := fetchStatus(ctx, *addr); err == nil {
				addrs = addrs[:0]
				for _, m := range sortedByHost(st.Members) {
					if m.Up && m.AdminAddr != "" {
						addrs = append(addrs, m.AdminAddr)
					}
				}
			} else if !errors.Is(err, errNotFound) {
				return err
			}
			var all []admin.TiersStatus
			for _, a := range addrs {
				var ts admin.TiersStatus
				switch err := fetchJSON(ctx, a, "/tiers", &ts); {
				case errors.Is(err, errNotFound):
					continue // not tiered
				case err != nil:
					return err
				}
				all = append(all, ts)
			}
			if len(all) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no node has tiered storage (start nodes with --fast-dir)")
				return nil
			}
			printTiers(cmd.OutOrStdout(), all)
			return nil
		},
	}
	cmd.Flags().Int64Var(&setBudget, "set-budget", 0, "change the fast tier's budget (bytes of rows) of the node at --admin, until it restarts")
	return cmd
}

func printTiers(w io.Writer, all []admin.TiersStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "host\tnode\ttier\tkeys\tdisk\treads\tmoved in")
	for _, ts := range all {
		for i, t := range ts.Tiers {
			h, id := ts.Host, ts.Node
			if i > 0 {
				h, id = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d rows, %s\n", h, id, t.Tier, t.Keys, humanBytes(t.DiskBytes), t.Reads, t.MovedIn, humanBytes(t.MovedInBytes))
		}
	}
	tw.Flush()
	for _, ts := range all {
		d := ts.LastDecision
		counted := "reads"
		if ts.CountWrites {
			counted = "reads and writes"
		}
		fmt.Fprintf(w, "%s: fast budget %s, %s of rows on it; reads from the fast tier %s since start, %s over the last %s; moving %s/s; threshold score %.2f (%s per %s, aged; K=%d); %d keys moving\n",
			ts.Host, humanBytes(ts.BudgetBytes), humanBytes(ts.FastRowBytes), share(ts.SinceStart), share(ts.LastMinute),
			ts.LastMinute.Over.Round(time.Second), humanBytes(int64(ts.LastMinute.MovedBytesPerSecond)), d.Threshold, counted, ts.Window, ts.MinReads, ts.InBoth)
		if ts.PromotedOnRead > 0 {
			fmt.Fprintf(w, "%s: %d rows promoted from what a read or a write replacing the row saw (%d from writes), since start\n",
				ts.Host, ts.PromotedOnRead, ts.PromotedOnWrite)
		}
		if ts.DeviceCapBytes > 0 {
			fmt.Fprintf(w, "%s: the fast device holds less than the budget: %s of rows in force until it has room again\n",
				ts.Host, humanBytes(ts.DeviceCapBytes))
		}
		for _, t := range ts.Tiers {
			if t.NoSpaceRefusals > 0 {
				fmt.Fprintf(w, "%s: the %s tier's device has %s free and keeps %s; it refused %d writes for lack of space (%d keys moved to the slow tier for it)\n",
					ts.Host, t.Tier, humanBytes(t.DiskAvailBytes), humanBytes(t.DiskReserveBytes), t.NoSpaceRefusals, ts.SpilledKeys)
			}
		}
	}
}

// share renders the fast tier's share of reads, or "-" when there were none.
func share(r tiered.Rates) string {
	if r.Reads == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*r.FastShare)
}

func printStatus(w io.Writer, st *admin.ClusterStatus) {
	fmt.Fprintf(w, "Replication factor %d, placement %s, routing %s. U = up, D = down.\n", st.ReplicationFactor, st.Placement, st.Routing)
	maxOffset := time.Duration(st.MaxClockOffsetUS) * time.Microsecond
	if st.ClockOutOfSync {
		fmt.Fprintf(w, "This node's clock is further than max_clock_offset %v from most of its peers': it refuses writes until it is back within it.\n", maxOffset)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "host\tstate\tid\track\tengine\trole\tload\ttokens\towns\towns (replicated)\tclock\tclient")
	host := ""
	for _, m := range sortedByHost(st.Members) {
		h := m.Host
		if h == host {
			h = ""
		}
		host = m.Host
		state := "D"
		if m.Up {
			state = "U"
		}
		if m.Refilling {
			state += "F"
		}
		if m.Behind {
			state += "B"
		}
		if m.ClockSkewed {
			state += "C"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f%%\t%.1f%%\t%s\t%s\n", h, state, statusLetter(m.Status),
			m.ID, m.Rack, m.Engine, m.Role, humanBytes(m.Load), m.Tokens, 100*m.Owns, 100*m.OwnsRepl, clockColumn(st, m), m.ClientAddr)
	}
	tw.Flush()
	fmt.Fprintln(w, "state: U/D (F: refilling, not read from; B: behind, hints held for it; C: clock off by more than max_clock_offset) then J joining, N normal, L leaving, X left (decommissioned), R removed")
	limit := "no max_clock_offset"
	if maxOffset > 0 {
		limit = fmt.Sprintf("max_clock_offset %v", maxOffset)
	}
	fmt.Fprintf(w, "clock: each node's clock minus this node's (%s), as estimated from its internode responses; ? = no estimate (none yet, or an older version); %s\n", st.Self, limit)
	printRepairs(w, st)
	if st.Repair != nil {
		fmt.Fprintf(w, "%s (on %s)\n", repairLine(*st.Repair, time.Now()), st.Self)
	}
	if st.Topology != nil {
		printTopology(w, st.Topology)
	}
}

// printRepairs writes a line for each replica this node dropped hints for (the marks of
// hint.Store; other coordinators hold their own): the writes in those spans reach it
// only through a repair (or a rebuild).
func printRepairs(w io.Writer, st *admin.ClusterStatus) {
	for _, r := range st.Repairs {
		how := "`kura admin repair` on it"
		if i := slices.IndexFunc(st.Members, func(m admin.MemberStatus) bool { return m.ID == r.Replica }); i >= 0 && st.Members[i].AdminAddr != "" {
			how = fmt.Sprintf("`kura admin repair --admin %s`", st.Members[i].AdminAddr)
		}
		spans := "spans"
		if len(r.Spans) == 1 {
			spans = "span"
		}
		fmt.Fprintf(w, "needs repair: node %s: %d token %s (%.3g%% of the ring) lost hints %s dropped; run %s\n",
			r.Replica, len(r.Spans), spans, 100*r.Share, st.Self, how)
	}
}

// statusLetter is a member's state as printStatus shows it.
func statusLetter(s string) string {
	if s == "left" {
		return "X"
	}
	if s == "" {
		return "?"
	}
	return strings.ToUpper(s[:1])
}

// clockColumn is a member's clock offset as printStatus shows it.
func clockColumn(st *admin.ClusterStatus, m admin.MemberStatus) string {
	switch {
	case m.ID == st.Self:
		return "0"
	case m.ClockOffsetUS == nil:
		return "?"
	}
	return admin.FormatOffset(time.Duration(*m.ClockOffsetUS) * time.Microsecond)
}

// humanBytes renders n bytes in binary units, as nodetool shows load.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func sortedByHost(ms []admin.MemberStatus) []admin.MemberStatus {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b admin.MemberStatus) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), strings.Compare(a.ID, b.ID))
	})
	return out
}

func printRing(w io.Writer, st *admin.ClusterStatus) {
	hosts := map[string]string{}
	for _, m := range st.Members {
		hosts[m.ID] = m.Host
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "token\tnode\thost")
	for _, t := range st.Tokens {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", t.Token, t.ID, hosts[t.ID])
	}
	tw.Flush()
}

func printHints(w io.Writer, st *admin.ClusterStatus) {
	if len(st.Hints) == 0 {
		fmt.Fprintln(w, "no hints")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "replica\thints\tbytes\tdropped")
	for _, h := range st.Hints {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", h.Replica, h.Hints, h.Bytes, h.Dropped)
	}
	tw.Flush()
}
