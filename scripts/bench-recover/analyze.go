package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Row is one run's figures (RUN/row.json). Times are seconds; bytes are stream bytes
// (rows as encoded in stream pages).
type Row struct {
	Name string `json:"name"`
	// Kind is "unthrottled" (the calibration: no stream limit anywhere) or "limited".
	Kind    string `json:"kind"`
	Tokens  int    `json:"tokens"`
	Records int64  `json:"records"`
	RF      int    `json:"rf"`
	Limit   int64  `json:"limit"` // every node's send and receive limit, B/s (0: none)
	// UnthrottledBps is the calibration's measured rate (limited runs: the one the limit
	// was set from; see Rates).
	UnthrottledBps float64 `json:"unthrottled_bps,omitempty"`
	MemCap         string  `json:"mem_cap"`
	Uptime         string  `json:"uptime"`
	UptimeAfter    string  `json:"uptime_after"`

	// The foreground load: saturation (closed loop, YCSB A at QUORUM) and the fixed rate.
	SaturationOps float64 `json:"saturation_ops"`
	RateOps       float64 `json:"rate_ops"`

	// IDs are the nodes' IDs by the script's numbers (n1..n6).
	IDs         map[int]string `json:"ids"`
	Victim      int            `json:"victim"`
	VictimID    string         `json:"victim_id"`
	VictimVoter bool           `json:"victim_voter"`

	// Moments, seconds from the kill: the removenode that was accepted was sent at
	// Remove (Detect: the failure detector must hold the node down first); the last
	// "metadata: advance change" of the leader, which finished the change, at Finish.
	Remove   float64 `json:"remove_s"`
	Finish   float64 `json:"finish_s"`
	Recovery float64 `json:"recovery_s"` // Finish - Remove
	Epoch    uint64  `json:"removal_epoch"`

	ReplicaBytes     int64 `json:"replica_bytes"`      // one replica of every row
	LostBytes        int64 `json:"lost_bytes"`         // rows the victim replicated, on the ring before
	VictimStoreBytes int64 `json:"victim_store_bytes"` // its store's rows (a check of LostBytes)
	LostRanges       int   `json:"lost_ranges"`
	// Measured: Σ over nodes of kura_stream_sent_bytes_total's and of the received
	// counters' deltas over the recovery, and per node (by number).
	SentBytes     int64         `json:"sent_bytes"`
	ReceivedBytes int64         `json:"received_bytes"`
	Sent          map[int]int64 `json:"sent_by_node"`
	Received      map[int]int64 `json:"received_by_node"`
	// What kura's plan moves (move.Plan on the rings before and after, run as a kura node
	// runs it: move.RecoveryOfPlan), per node; and its time at the limit (the largest
	// per-node send or receive over the limit).
	PlanSend      map[int]int64 `json:"plan_send"`
	PlanReceive   map[int]int64 `json:"plan_receive"`
	PlanSeconds   float64       `json:"plan_bound_s"`
	PlanBusiest   string        `json:"plan_busiest"`
	PlanMovedSum  int64         `json:"plan_moved_bytes"`
	PlanTransfers int           `json:"plan_transfers"`
	// WaitsOnDead are the plan's transfers a kura node would merge from the dead node too
	// (none of their range's old replicas stays), and their bytes.
	WaitsOnDead      int   `json:"waits_on_dead"`
	WaitsOnDeadBytes int64 `json:"waits_on_dead_bytes"`

	// The physical bound (move.BoundRecovery), every node sending and receiving at the
	// limit, destinations free: one source per copy (RecoveryFromChange), and every live
	// peer a source (RecoveryFromChangeWith, FromEveryPeer: what a kura node merges),
	// which Bound is.
	OneSource  Bound   `json:"one_source"`
	EveryPeer  *Bound  `json:"every_peer,omitempty"`
	BoundKind  string  `json:"bound_kind"` // "every-peer" or "one-source"
	Bound      float64 `json:"bound_s"`
	Ratio      float64 `json:"ratio"`      // Bound / Recovery (target ≥ 0.85)
	PlanRatio  float64 `json:"plan_ratio"` // PlanSeconds / Recovery
	SimSeconds float64 `json:"sim_kura_s"` // movesim of move.Kura's schedule, one source
	// SimPlanSeconds is movesim's time for kura's plan's copies (simulatePlan).
	SimPlanSeconds float64 `json:"sim_plan_s"`
	// HandOff is move.HandOff run again on the run's rings (limited runs).
	HandOff *HandOffCheck `json:"handoff,omitempty"`
	// EffectiveBps, without a limit: the bound's bytes over the recovery's time.
	EffectiveBps float64 `json:"effective_bps,omitempty"`

	// Rates over the recovery: each node's average send and receive rate, the busiest
	// node of each side, and the highest one-second rate any node reached (timeline).
	Rates Rates `json:"rates"`

	Latency Latency `json:"latency"`
	// Seconds are the recovery second by second, from 3 s before the removal to 3 s after
	// the finish.
	Seconds []Second `json:"seconds"`
	Verify  *Verify  `json:"verify,omitempty"`
	// Ranges of the ring after, and those with RF distinct replicas all on live normal
	// members other than the victim.
	Ranges   int `json:"ranges"`
	RangesOK int `json:"ranges_ok"`
}

// Bound is a move.RecoveryBound at the limit.
type Bound struct {
	Seconds      float64  `json:"seconds"`
	WholeSeconds float64  `json:"whole_seconds"`
	Exact        bool     `json:"exact"`
	Limits       []string `json:"limits"`
	CopyBytes    int64    `json:"copy_bytes"`
	Copies       int      `json:"copies"`
}

// Rates are what the nodes streamed during the recovery.
type Rates struct {
	SendBps, RecvBps   map[int]float64 // averages over the recovery, by node
	BusiestSend        int             `json:"busiest_send"`
	BusiestRecv        int             `json:"busiest_recv"`
	PeakBps            float64         `json:"peak_bps"` // the highest per-node 1-s rate, either side
	PeakNode           int             `json:"peak_node"`
	PeakSide           string          `json:"peak_side"`
	LastSend, LastRecv map[int]float64 // when each node last sent or received (timeline), s from Remove
	// CPUBefore and CPUDuring are each node's cores used in the latency windows (before
	// the kill, the recovery); MachineBefore and MachineDuring the machine's busy share.
	CPUBefore, CPUDuring         map[int]float64
	MachineBefore, MachineDuring float64
}

func analyze(dir string) error {
	env, err := readEnv(filepath.Join(dir, "run.env"))
	if err != nil {
		return err
	}
	r := &Row{Name: filepath.Base(dir), Kind: env["kind"], MemCap: env["mem_cap"], Uptime: env["uptime"], UptimeAfter: env["uptime_after"],
		VictimID: env["victim_id"], VictimVoter: env["victim_voter"] == "1"}
	r.Tokens, _ = strconv.Atoi(env["tokens"])
	r.Records, _ = strconv.ParseInt(env["records"], 10, 64)
	r.Limit, _ = strconv.ParseInt(env["limit"], 10, 64)
	r.UnthrottledBps, _ = strconv.ParseFloat(env["unthrottled_bps"], 64)
	r.SaturationOps, _ = strconv.ParseFloat(env["saturation_ops"], 64)
	r.RateOps, _ = strconv.ParseFloat(env["rate_ops"], 64)
	r.Victim, _ = strconv.Atoi(env["victim"])
	r.Epoch, _ = strconv.ParseUint(env["removal_epoch"], 10, 64)
	ns := func(k string) time.Time { v, _ := strconv.ParseInt(env[k], 10, 64); return time.Unix(0, v) }
	kill, remove, settled, stop := ns("t_kill_ns"), ns("t_remove_ns"), ns("t_settled_ns"), ns("t_stop_ns")
	finish, err := finishTime(dir, remove, settled)
	if err != nil {
		return err
	}
	r.Remove, r.Finish = remove.Sub(kill).Seconds(), finish.Sub(kill).Seconds()
	r.Recovery = finish.Sub(remove).Seconds()

	before, err := readCluster(filepath.Join(dir, "cluster-before.json"))
	if err != nil {
		return err
	}
	after, err := readCluster(filepath.Join(dir, "cluster-after.json"))
	if err != nil {
		return err
	}
	r.RF = before.ReplicationFactor
	keys, err := readRowSizes(env["sizes"])
	if err != nil {
		return err
	}
	r.VictimStoreBytes, _ = strconv.ParseInt(env["victim_store_bytes"], 10, 64)
	ids := nodeIDs(dir)
	r.IDs = ids
	if err := r.bounds(before, after, keys, ids); err != nil {
		return err
	}
	r.measured(dir, ids)
	r.Rates.LastSend, r.Rates.LastRecv, r.Rates.PeakBps, r.Rates.PeakNode, r.Rates.PeakSide = timelineRates(filepath.Join(dir, "timeline.jsonl"), remove, finish)
	beforeS, _ := strconv.ParseFloat(env["before_s"], 64)
	r.cpu(filepath.Join(dir, "timeline.jsonl"), kill.Add(-time.Duration(beforeS*float64(time.Second))), kill, remove, finish)
	r.Seconds = secondsAround(filepath.Join(dir, "timeline.jsonl"), filepath.Join(dir, "ops.log"), remove, finish, 3, 3)
	r.Ranges, r.RangesOK, err = rangesOK(after, r.VictimID)
	if err != nil {
		return err
	}
	r.Latency, err = latencies(filepath.Join(dir, "ops.log"), kill, remove, finish, stop, env)
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "verify.json")); err == nil {
		r.Verify = &Verify{}
		if err := json.Unmarshal(b, r.Verify); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "row.json"), append(b, '\n'), 0o644)
}

// nodeIDs reads each node's ID from its log's ready line ("kura node ready ... id=ID").
func nodeIDs(dir string) map[int]string {
	ids := map[int]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "n*.log"))
	for _, f := range files {
		k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "n"), ".log"))
		if err != nil {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l := sc.Text(); field(l, "msg") == "kura node ready" {
				ids[k] = field(l, "id")
				break
			}
		}
		fh.Close()
	}
	return ids
}

// finishTime is when the removal's change finished: the last "metadata: advance change"
// any node logged after the removal was sent and before the script found the cluster
// settled (the leader's FinishChange, which makes every range's new set current).
func finishTime(dir string, from, settled time.Time) (time.Time, error) {
	var last time.Time
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "n*.log"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return last, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if field(l, "msg") != "metadata: advance change" {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, field(l, "time"))
			if err == nil && at.After(from) && !at.After(settled) && at.After(last) {
				last = at
			}
		}
		fh.Close()
	}
	if last.IsZero() {
		return last, fmt.Errorf("%s: no \"metadata: advance change\" between the removal and the settled cluster", dir)
	}
	return last, nil
}

// field returns the value of key=value in a slog text line, unquoted (bench-join's).
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		if !strings.HasPrefix(line, key+"=") {
			return ""
		}
		i = 0
	} else {
		i++
	}
	rest := line[i+len(key)+1:]
	if strings.HasPrefix(rest, `"`) {
		if s, err := strconv.QuotedPrefix(rest); err == nil {
			u, _ := strconv.Unquote(s)
			return u
		}
	}
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		return rest[:j]
	}
	return rest
}

// readEnv reads key=value lines.
func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, nil
}
