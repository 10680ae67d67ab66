package main

import (
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

// newRepairCmd is `kura admin repair`.
func newRepairCmd(addr *string) *cobra.Command {
	var req admin.RepairRequest
	var cluster, noWait, stop bool
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Compare the node's ranges with their other replicas and exchange the rows that differ (like nodetool repair)",
		Long: `repair makes the node at --admin compare every range it replicates with each other replica
of the range, by hash trees, and exchange only the rows that differ, each merged as writes
are: repair never makes a replica older. Afterwards the replicas of each range hold the
same rows (writes that arrive meanwhile aside). With several other replicas, the first is
compared again at the end, so that it also gets what the others held.

--range START:END limits it to the ring range (START, END] (tokens), --node to the ranges
shared with that replica. --cluster runs it on every live member in turn, each on the
ranges it is the first replica of, which repairs every range of the cluster once.

It prints the progress every second until the repair is done (--no-wait: only starts it),
then the rows that differed and the bytes the repair sent against theirs. --stop stops
the node's running repair once its current range is done. kura admin status shows a
running or finished repair, and /metrics counts sessions and bytes (kura_repair_*).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stop {
				return printAdmin(cmd.Context(), cmd.OutOrStdout(), http.MethodDelete, *addr, "/repair")
			}
			targets := []string{*addr}
			if cluster {
				st, err := fetchStatus(cmd.Context(), *addr)
				if err != nil {
					return err
				}
				targets = targets[:0]
				for _, m := range sortedByHost(st.Members) {
					if m.Up && m.AdminAddr != "" && (m.Status == "" || m.Status == "normal") {
						targets = append(targets, m.AdminAddr)
					}
				}
				req.Primary = true
			}
			failed := 0
			var started time.Time // the first node's repair's start, by its clock
			for _, t := range targets {
				pr, err := runRepair(cmd.Context(), cmd.OutOrStdout(), t, req, !noWait)
				if err != nil {
					return err
				}
				failed += pr.Failed
				if started.IsZero() {
					started = pr.Started
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d repair sessions failed (see the nodes' logs)", failed)
			}
			if cluster && !noWait {
				// Every range of the cluster has been compared with all its replicas:
				// each node holds every write acknowledged before the first started.
				for _, t := range targets {
					body, _ := json.Marshal(admin.RepairRequest{CoveredSince: started})
					if _, err := adminDo(cmd.Context(), http.MethodPost, t, "/repair", body, 30*time.Second); err != nil {
						return err
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "every node holds every write acknowledged before %s: coordinators drop older hints and repair marks for them\n",
					started.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Range, "range", "", "only the ring range START:END, tokens (START, END]")
	cmd.Flags().StringVar(&req.Node, "node", "", "only the ranges shared with this replica (node ID)")
	cmd.Flags().BoolVar(&cluster, "cluster", false, "run on every live member, each on the ranges it is the first replica of")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "start the repair and return")
	cmd.Flags().BoolVar(&stop, "stop", false, "stop the repair running on the node once its current range is done")
	return cmd
}

// runRepair starts a repair at addr and, with wait, prints its progress every second
// until it is done, then its summary.
func runRepair(ctx context.Context, out io.Writer, addr string, req admin.RepairRequest, wait bool) (admin.RepairProgress, error) {
	body, _ := json.Marshal(req)
	resp, err := adminDo(ctx, http.MethodPost, addr, "/repair", body, 30*time.Second)
	if err != nil {
		return admin.RepairProgress{}, err
	}
	var pr admin.RepairProgress
	if err := json.Unmarshal(resp, &pr); err != nil {
		return pr, fmt.Errorf("admin %s: %w", addr, err)
	}
	fmt.Fprintf(out, "%s: repair started: %d ranges\n", addr, pr.Ranges)
	if !wait {
		return pr, nil
	}
	last := ""
	for pr.Running {
		select {
		case <-ctx.Done():
			return pr, ctx.Err()
		case <-time.After(time.Second):
		}
		if err := fetchJSON(ctx, addr, "/repair", &pr); err != nil {
			return pr, err
		}
		if line := repairLine(pr, time.Now()); pr.Running && line != last {
			fmt.Fprintf(out, "%s: %s\n", addr, line)
			last = line
		}
	}
	fmt.Fprintf(out, "%s: %s\n", addr, repairLine(pr, time.Now()))
	return pr, nil
}

// repairLine describes a repair's progress in one line.
func repairLine(pr admin.RepairProgress, now time.Time) string {
	var b strings.Builder
	end := now
	state := "running"
	if !pr.Running {
		end, state = pr.Finished, "done"
	}
	took := end.Sub(pr.Started)
	fmt.Fprintf(&b, "repair %s: %d/%d ranges, %d sessions (%d equal, %d failed, %d retried), %d rows differing (%s), %s on the wire",
		state, pr.RangesDone, pr.Ranges, pr.Sessions, pr.Equal, pr.Failed, pr.Retries, pr.RowsDiffering, humanBytes(pr.BytesDiffering),
		humanBytes(pr.BytesSent+pr.BytesReceived))
	if r := pr.WireRatio(); r > 0 {
		fmt.Fprintf(&b, " (%.3f× the bytes differing)", r)
	}
	if s := took.Seconds(); s > 0 {
		fmt.Fprintf(&b, ", %.0f rows hashed/s", float64(pr.RowsHashed)/s)
	}
	if eta := pr.ETA(now); eta > 0 {
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	}
	fmt.Fprintf(&b, ", %v", took.Round(time.Millisecond))
	if pr.LastError != "" {
		fmt.Fprintf(&b, "; last error: %s", pr.LastError)
	}
	return b.String()
}
