// Command bench-join is the measuring half of scripts/bench-join.sh (seed 004's experiment,
// issue 32 point 7): it tells when a cluster has settled, turns one run's logs, metrics
// and ring snapshots into its figures, and writes the tables and plots of all runs.
//
//	bench-join settled -admin ADDR -normal N     exit 0 once N members are normal and up and no change is in flight
//	bench-join rowsizes -store DIR -out FILE     every row's token and stream bytes, from a stopped lsm store
//	bench-join analyze RUN                         RUN/row.json from the files the script left in RUN
//	bench-join report -out DIR RESULTS             DIR/tables.md and the plots, from RESULTS/runs/*/row.json
//
// The minimum a change must move is computed in the unit the streams count, the bytes of
// encoded rows in stream pages (wire.AppendWriteRequest's encoding of each row, which a
// page is made of), and not in the planner's (announced engine bytes spread uniformly over
// the token space): every row of the loaded data is read from a copy of a replica
// (rowsizes), placed on the ring before and after the change by its token and the
// placement strategy the nodes use, and the planner's own move.Plan is run on the rows'
// bytes per range for the minimum, Σ over ranges |new \ old| × bytes, and for the bound
// (its max-flow over every choice of sources, independent of the plan chosen). A page's
// framing (a version byte, the row count, the next key, a checksum: about 40 bytes a page
// of 1 MiB) is not in the minimum: it counts in what is moved.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-join settled|analyze|report ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "settled":
		err = settledCmd(os.Args[2:])
	case "analyze":
		if len(os.Args) != 3 {
			err = fmt.Errorf("usage: bench-join analyze RUN")
			break
		}
		err = analyze(os.Args[2])
	case "report":
		err = reportCmd(os.Args[2:])
	case "rowsizes":
		err = rowSizesCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-join:", err)
		os.Exit(1)
	}
}

// cluster is the part of a node's /cluster (admin.ClusterStatus) this program reads.
type cluster struct {
	ReplicationFactor int    `json:"replication_factor"`
	Placement         string `json:"placement"`
	Members           []struct {
		ID     string `json:"id"`
		Host   string `json:"host"`
		Rack   string `json:"rack"`
		Status string `json:"status"`
		Up     bool   `json:"up"`
	} `json:"members"`
	Tokens []struct {
		Token int64  `json:"token"`
		ID    string `json:"id"`
	} `json:"tokens"`
	Topology *struct {
		Epoch  uint64          `json:"epoch"`
		Change json.RawMessage `json:"change"`
	} `json:"topology"`
}

// settledCmd exits 0 when the node at -admin reports -normal normal members, all up, and
// no change in flight; 1 otherwise (or when it does not answer).
func settledCmd(args []string) error {
	fs := flag.NewFlagSet("settled", flag.ExitOnError)
	adminAddr := fs.String("admin", "", "admin address of a node")
	normal := fs.Int("normal", 3, "normal members wanted")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+*adminAddr+"/cluster", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		os.Exit(1)
	}
	defer resp.Body.Close()
	var c cluster
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Topology == nil {
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
	if n != *normal || (len(c.Topology.Change) > 0 && string(c.Topology.Change) != "null") {
		os.Exit(1)
	}
	return nil
}
