package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// Step is one change of a run: every joiner of a run started at once, or one joiner of a
// run that adds them one after another. Times are seconds from the step's start (the
// script's clock just before it started the step's first joiner).
type Step struct {
	Nodes   []int    `json:"nodes"` // the script's node numbers (4, 5, ...)
	Joiners []string `json:"joiners"`
	StartNS int64    `json:"start_ns"`
	// Registered is when each joiner's Register entry was committed (its log's
	// "registered with the cluster"): the process start, gossip and the metadata log.
	Registered []float64 `json:"registered_s"`
	// Planned is when the log's leader started the change (its "start change" line): the
	// batching window waits 2 s after the last joiner registered.
	Planned float64 `json:"planned_s"`
	// Finished is when the leader committed the entry of the epoch the script found
	// settled: the change's last range current, every joiner normal.
	Finished float64 `json:"finished_s"`
	// JoinerDone is when each joiner recorded its last transfer done (its last "transfers
	// done" line): its own ranges complete; they become current at the leader's next round.
	JoinerDone []float64 `json:"joiner_done_s"`
	Epoch      uint64    `json:"epoch"`
	// Changes is how many changes the leader started for the step's joiners: 1 when the
	// batching window planned them together.
	Changes int `json:"changes"`

	// In stream bytes (encoded pages): the minimum, Σ over ranges |new \ old| × bytes,
	// the least possible largest per-node send or receive over every choice of sources
	// (move.MinMaxLoad), the strict plan's largest load, and what the plan gives each
	// joiner, all from move.Plan on the keys' sizes.
	MinimumBytes  int64   `json:"minimum_bytes"`
	KeyMinimum    int64   `json:"key_minimum_bytes"` // the same, key by key (a check)
	BoundBytes    int64   `json:"bound_bytes"`
	BoundSend     int64   `json:"bound_send_bytes"`
	BoundRecv     int64   `json:"bound_receive_bytes"`
	PlanLoadBytes int64   `json:"plan_load_bytes"`
	PlanReceive   []int64 `json:"plan_receive_bytes"` // per joiner
	BoundSeconds  float64 `json:"bound_s"`
	// Measured: stream bytes sent (every node's kura_stream_sent_bytes_total, the step's
	// delta) and received by each joiner (kura_stream_received_bytes_total, all peers).
	SentBytes     int64   `json:"sent_bytes"`
	ReceivedBytes []int64 `json:"received_bytes"` // per joiner
	OldRecvBytes  int64   `json:"old_nodes_received_bytes"`
	PlanTransfers int     `json:"plan_transfers"`
}

// Row is one run.
type Row struct {
	Tokens int    `json:"tokens"`
	Mode   string `json:"mode"` // at-once or one-by-one
	Count  int    `json:"count"`
	Load   string `json:"load"` // none or read
	// Variant is empty for the experiment's runs; the diagnosis's send-only (the new
	// nodes unlimited) and receive-only (the old nodes unlimited) runs name theirs.
	Variant string `json:"variant,omitempty"`
	Limit   int64  `json:"limit"`
	Records int64  `json:"records"`
	// ReplicaBytes is one replica's rows in stream bytes (rowsizes), Rows their number.
	ReplicaBytes int64   `json:"replica_bytes"`
	Rows         int     `json:"rows"`
	MemCap       string  `json:"mem_cap"`
	Uptime       string  `json:"uptime"`
	Steps        []Step  `json:"steps"`
	Time         float64 `json:"time_s"` // the last step's finish from the first step's start
	// One-by-one: the time to add the first k, k = 1..Count (at once: just Time).
	Cumulative []float64 `json:"cumulative_s"`
	SentBytes  int64     `json:"sent_bytes"`
	Minimum    int64     `json:"minimum_bytes"`
	// AtOnceMinimum is what adding the run's final joiners to its first ring in one
	// change would move (their tokens as they ended): one-by-one's over-fetch.
	AtOnceMinimum int64      `json:"at_once_minimum_bytes"`
	Reads         *ReadStats `json:"reads,omitempty"`
	// MemPeak is each node's memory cgroup's peak (page cache included), by node number;
	// nil when the nodes ran uncapped.
	MemPeak map[int]int64 `json:"mem_peak_bytes,omitempty"`
}

// ReadStats are the read load's latencies over the run (from 5 s before the first joiner
// started to the end of the last change), at ONE.
type ReadStats struct {
	Count, Errors, NotFound  int64
	Seconds                  float64
	P50, P95, P99, P999, Max float64 // milliseconds
}

func analyze(dir string) error {
	env, err := readEnv(filepath.Join(dir, "run.env"))
	if err != nil {
		return err
	}
	row := Row{Mode: env["mode"], Load: env["load"], Variant: env["variant"], MemCap: env["mem_cap"], Uptime: env["uptime"]}
	row.Tokens, _ = strconv.Atoi(env["tokens"])
	row.Count, _ = strconv.Atoi(env["count"])
	row.Limit, _ = strconv.ParseInt(env["limit"], 10, 64)
	row.Records, _ = strconv.ParseInt(env["records"], 10, 64)
	steps, _ := strconv.Atoi(env["steps"])
	if steps < 1 || env["sizes"] == "" {
		return fmt.Errorf("%s: run.env lacks steps or sizes", dir)
	}
	keys, err := readRowSizes(env["sizes"])
	if err != nil {
		return err
	}
	row.ReplicaBytes, row.Rows = 0, len(keys)
	for _, k := range keys {
		row.ReplicaBytes += k.bytes
	}
	logs, ids, err := readLogs(dir)
	if err != nil {
		return err
	}
	first, err := readCluster(filepath.Join(dir, "cluster-0.json"))
	if err != nil {
		return err
	}
	prev := first
	prevMetrics := readMetricsStep(dir, 0)
	var last *cluster
	for s := 1; s <= steps; s++ {
		senv, err := readEnv(filepath.Join(dir, fmt.Sprintf("step-%d.env", s)))
		if err != nil {
			return err
		}
		after, err := readCluster(filepath.Join(dir, fmt.Sprintf("cluster-%d.json", s)))
		if err != nil {
			return err
		}
		st := Step{}
		st.StartNS, _ = strconv.ParseInt(senv["t0"], 10, 64)
		for _, f := range strings.Fields(senv["nodes"]) {
			k, _ := strconv.Atoi(f)
			st.Nodes = append(st.Nodes, k)
			st.Joiners = append(st.Joiners, ids[k])
		}
		if err := stepTimes(&st, logs, after.Topology.Epoch); err != nil {
			return fmt.Errorf("%s step %d: %w", dir, s, err)
		}
		if err := stepBytes(&st, prev, after, keys, row.Limit); err != nil {
			return fmt.Errorf("%s step %d: %w", dir, s, err)
		}
		m := readMetricsStep(dir, s)
		joiner := map[string]bool{}
		for _, id := range st.Joiners {
			joiner[id] = true
			st.ReceivedBytes = append(st.ReceivedBytes, m.recv[id]-prevMetrics.recv[id])
		}
		for id, v := range m.sent {
			st.SentBytes += v - prevMetrics.sent[id]
		}
		for id, v := range m.recv {
			if !joiner[id] {
				st.OldRecvBytes += v - prevMetrics.recv[id]
			}
		}
		prevMetrics = m
		row.Steps = append(row.Steps, st)
		row.SentBytes += st.SentBytes
		row.Minimum += st.MinimumBytes
		row.Cumulative = append(row.Cumulative, st.Finished+float64(st.StartNS-row.Steps[0].StartNS)/1e9)
		prev, last = after, after
	}
	row.Time = row.Cumulative[len(row.Cumulative)-1]
	var whole Step
	if err := stepBytes(&whole, first, last, keys, row.Limit); err != nil {
		return err
	}
	row.AtOnceMinimum = whole.MinimumBytes
	if b, err := os.ReadFile(filepath.Join(dir, "mem-peak.txt")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var k int
			var v int64
			if n, _ := fmt.Sscanf(l, "%d %d", &k, &v); n == 2 {
				if row.MemPeak == nil {
					row.MemPeak = map[int]int64{}
				}
				row.MemPeak[k] = v
			}
		}
	}
	if row.Load == "read" {
		row.Reads, err = readStats(filepath.Join(dir, "reads", "result.json"))
		if err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(row, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "row.json"), append(b, '\n'), 0o644)
}

// stepBytes fills the step's minimum and bound, in stream bytes: each range of the target
// ring (which has every token of the current one: only joins here) weighs what its rows
// take in stream pages, and move.Plan runs as topo.Plan runs it (strict: each copy from
// the replica it displaces).
func stepBytes(st *Step, before, after *cluster, keys []keySize, limit int64) error {
	cur, err := buildRing(before)
	if err != nil {
		return err
	}
	target, err := buildRing(after)
	if err != nil {
		return err
	}
	strategy, err := ring.StrategyByName(after.Placement)
	if err != nil {
		return err
	}
	sizes := make([]int64, target.RangeCount())
	for _, k := range keys {
		sizes[target.RangeIndex(k.token)] += k.bytes
	}
	pr, err := move.NewPerRange(target, sizes)
	if err != nil {
		return err
	}
	rf := after.ReplicationFactor
	mv, err := move.Plan(move.Change{Current: cur, Target: target, Strategy: strategy, RF: rf, Sizes: pr, Strict: true})
	if err != nil {
		return err
	}
	st.MinimumBytes, st.PlanLoadBytes = mv.MinimumBytes, mv.Load
	st.BoundBytes, st.BoundSend, st.BoundRecv = mv.Bound.Bytes, mv.Bound.SendBytes, mv.Bound.ReceiveBytes
	st.PlanTransfers = len(mv.Transfers)
	if limit > 0 {
		st.BoundSeconds = mv.BoundSeconds(float64(limit))
	}
	st.PlanReceive = nil
	for _, id := range st.Joiners {
		st.PlanReceive = append(st.PlanReceive, mv.Receive[ring.NodeID(id)])
	}
	// The same minimum row by row: every row goes to each replica it gains.
	st.KeyMinimum = 0
	for _, k := range keys {
		old := strategy.Replicas(cur, k.token, rf)
		for _, id := range strategy.Replicas(target, k.token, rf) {
			if !slices.Contains(old, id) {
				st.KeyMinimum += k.bytes
			}
		}
	}
	return nil
}

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

// logLine is one line of a node's text log.
type logLine struct {
	node  int
	at    time.Time
	msg   string
	epoch uint64
}

// readLogs reads RUN/logs/n<k>.log: every line with a time and a message, and each
// node's ID from its ready line.
func readLogs(dir string) ([]logLine, map[int]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "logs", "n*.log"))
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no logs", dir)
	}
	var out []logLine
	ids := map[int]string{}
	for _, f := range files {
		k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "n"), ".log"))
		if err != nil {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			ts := field(l, "time")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				continue
			}
			ll := logLine{node: k, at: at, msg: field(l, "msg")}
			ll.epoch, _ = strconv.ParseUint(field(l, "epoch"), 10, 64)
			if ll.msg == "kura node ready" {
				ids[k] = field(l, "id")
			}
			out = append(out, ll)
		}
		fh.Close()
	}
	slices.SortStableFunc(out, func(a, b logLine) int { return a.at.Compare(b.at) })
	return out, ids, nil
}

// field returns the value of key=value in a slog text line, unquoted.
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

// stepTimes finds the step's moments in the logs: each joiner's registration and last
// transfer done, the leader's start of the change naming the joiners, and the leader's
// commit of epoch, the one found settled.
func stepTimes(st *Step, logs []logLine, epoch uint64) error {
	t0 := time.Unix(0, st.StartNS)
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	var finished time.Time
	for _, l := range logs {
		if l.at.Before(t0) {
			continue
		}
		switch {
		case strings.HasPrefix(l.msg, "registered with the cluster"):
			for i, k := range st.Nodes {
				if l.node == k {
					for len(st.Registered) <= i {
						st.Registered = append(st.Registered, -1)
					}
					st.Registered[i] = sec(l.at)
				}
			}
		case strings.HasPrefix(l.msg, "metadata: start change: join ") && finished.IsZero() && names(l.msg, st.Joiners):
			if st.Changes == 0 {
				st.Planned = sec(l.at)
			}
			st.Changes++
		case l.msg == "metadata: advance change" && l.epoch == epoch && finished.IsZero():
			finished = l.at
		}
	}
	if st.Planned == 0 || finished.IsZero() {
		return fmt.Errorf("no start (%v) or finish at epoch %d in the logs", st.Planned, epoch)
	}
	st.Finished, st.Epoch = sec(finished), epoch
	for _, k := range st.Nodes {
		done := -1.0
		for _, l := range logs {
			if l.node == k && strings.HasSuffix(l.msg, "transfers done") && !l.at.Before(t0) && !l.at.After(finished) {
				done = sec(l.at)
			}
		}
		st.JoinerDone = append(st.JoinerDone, done)
	}
	for len(st.Registered) < len(st.Nodes) {
		st.Registered = append(st.Registered, -1)
	}
	return nil
}

// names reports whether msg names any of ids.
func names(msg string, ids []string) bool {
	for _, id := range ids {
		if id != "" && strings.Contains(msg, id) {
			return true
		}
	}
	return false
}

// metrics are one scrape of every node: stream bytes sent, and received from all peers.
type metrics struct {
	sent, recv map[string]int64
}

// readMetricsStep reads RUN/metrics-<step>-<k>.txt, each node's /metrics after the step
// (step 0: before the first), keyed by node ID (the file's first line: "# id ID").
func readMetricsStep(dir string, step int) metrics {
	m := metrics{sent: map[string]int64{}, recv: map[string]int64{}}
	files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("metrics-%d-*.txt", step)))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var id string
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "# id "); ok {
				id = v
				continue
			}
			name, val, ok := strings.Cut(l, " ")
			if !ok || strings.HasPrefix(l, "#") {
				continue
			}
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				continue
			}
			switch {
			case name == "kura_stream_sent_bytes_total":
				m.sent[id] += int64(x)
			case strings.HasPrefix(name, "kura_stream_received_bytes_total{"):
				m.recv[id] += int64(x)
			}
		}
	}
	return m
}

func readStats(path string) (*ReadStats, error) {
	dir := filepath.Dir(path)
	res, err := bench.LoadResult(dir)
	if err != nil {
		return nil, err
	}
	for _, op := range res.Operations {
		if op.Op == "READ" {
			return &ReadStats{Count: op.Count, Errors: op.Errors, NotFound: op.NotFound, Seconds: res.DurationSeconds,
				P50: op.P50Us / 1000, P95: op.P95Us / 1000, P99: op.P99Us / 1000, P999: op.P999Us / 1000, Max: op.MaxUs / 1000}, nil
		}
	}
	return &ReadStats{Seconds: res.DurationSeconds}, nil
}

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
