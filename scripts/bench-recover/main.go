// Command bench-recover is the measuring half of scripts/bench-recover.sh (issue 33 point
// 7: re-replication on a real 6-host cluster): it drives the foreground load, samples the
// cluster while it recovers, reads every acknowledged write back, and turns one run's files
// into its figures and the report.
//
//	bench-recover settled -admin ADDR -normal N        exit 0 once N members are normal and up and no change is in flight
//	bench-recover rowsizes -out FILE STORE...         every row's token and stream bytes, from stopped lsm stores (merged)
//	bench-recover load -targets A,B -rate R -out FILE  a fixed-rate QUORUM read/update load until SIGINT; every op logged
//	bench-recover verify -target A -ops FILE -out F    every acknowledged write read back at ALL
//	bench-recover timeline -admins K=ADDR,... -out F   each node's status and stream counters once a second until SIGTERM
//	bench-recover analyze RUN                          RUN/row.json from the files the script left in RUN
//	bench-recover report -out FILE RESULTS             the report (docs/bench/recover.md) from RESULTS/runs/*/row.json
//	bench-recover stuck META_STATE                     a recovery that did not finish: its transfers not done, from a node's meta.state
//
// The bytes of the lost replicas are counted in the unit the streams count (each row as a
// stream page encodes it, bench-join's rowsizes), from copies of every node's store taken
// before the run, placed on the ring before the removal. The physical bound is
// move.BoundRecovery on the recovery move.RecoveryFromChange builds from the rings before
// and after, every node sending and receiving at the stream limit.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-recover settled|rowsizes|load|verify|timeline|analyze|report|stuck ...")
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "settled":
		err = settledCmd(args)
	case "rowsizes":
		err = rowSizesCmd(args)
	case "load":
		err = loadCmd(args)
	case "verify":
		err = verifyCmd(args)
	case "timeline":
		err = timelineCmd(args)
	case "analyze":
		if len(args) != 1 {
			err = fmt.Errorf("usage: bench-recover analyze RUN")
			break
		}
		err = analyze(args[0])
	case "report":
		err = reportCmd(args)
	case "stuck":
		err = stuckCmd(args)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-recover:", err)
		os.Exit(1)
	}
}
