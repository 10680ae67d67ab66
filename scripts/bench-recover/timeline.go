package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kuradb/kura/internal/admin"
)

// Sample is one node's state at one moment of the timeline: what `kura admin status`
// shows of the change in flight (its /cluster, the JSON the command reads) and the
// node's stream counters (its /metrics).
type Sample struct {
	UnixNS int64  `json:"t_ns"`
	Node   int    `json:"node"`
	Up     bool   `json:"up"` // it answered
	Epoch  uint64 `json:"epoch,omitempty"`
	// Change is the change in flight as this node has it (nil: none).
	Change *admin.ChangeStatus `json:"change,omitempty"`
	// Streams are the transfers it receives now, their bytes and rates as it reports them.
	Streams     int     `json:"streams,omitempty"`
	StreamBytes int64   `json:"stream_bytes,omitempty"`
	RateBPS     float64 `json:"rate_bps,omitempty"`
	ETASeconds  float64 `json:"eta_s,omitempty"`
	Limit       int64   `json:"limit"`
	// Sent and Received are kura_stream_sent_bytes_total and the sum over peers of
	// kura_stream_received_bytes_total.
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	// CPUSeconds is the node's process_cpu_seconds_total; MachineBusy and MachineTotal are
	// this machine's CPU time (USER_HZ ticks, /proc/stat) busy and in all, read with it: the
	// other programs sharing the machine show there.
	CPUSeconds   float64 `json:"cpu_s"`
	MachineBusy  int64   `json:"machine_busy"`
	MachineTotal int64   `json:"machine_total"`
}

// timelineCmd samples every node once a second into -out (a JSON object a line) until
// SIGINT or SIGTERM.
func timelineCmd(args []string) error {
	fs := flag.NewFlagSet("timeline", flag.ExitOnError)
	admins := fs.String("admins", "", "K=ADDR,... : each node's number and admin address")
	out := fs.String("out", "", "file to write")
	_ = fs.Parse(args)
	nodes := map[int]string{}
	for _, kv := range strings.Split(*admins, ",") {
		k, addr, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			return fmt.Errorf("usage: bench-recover timeline -admins K=ADDR,... -out FILE")
		}
		nodes[n] = addr
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		samples := make([]Sample, 0, len(nodes))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for k, addr := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := sample(k, addr)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}()
		}
		wg.Wait()
		enc := json.NewEncoder(w)
		for _, s := range samples {
			_ = enc.Encode(s)
		}
		_ = w.Flush()
		select {
		case <-stop:
			return f.Close()
		case <-tick.C:
		}
	}
}

// sample reads node k's /cluster and /metrics, within 900 ms.
func sample(k int, addr string) Sample {
	s := Sample{UnixNS: time.Now().UnixNano(), Node: k}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	c, err := fetchCluster(ctx, addr)
	if err != nil {
		return s
	}
	s.Up = true
	if t := c.Topology; t != nil {
		s.Epoch, s.Change, s.Limit = t.Epoch, t.Change, t.StreamLimit
		for _, st := range t.Streams {
			if st.Done {
				continue
			}
			s.Streams++
			s.StreamBytes += st.Bytes
			s.RateBPS += st.RateBPS
			s.ETASeconds = max(s.ETASeconds, st.ETASeconds)
		}
	}
	s.Sent, s.Received, s.CPUSeconds, _ = nodeCounters(ctx, addr)
	s.MachineBusy, s.MachineTotal = machineCPU()
	return s
}

// machineCPU reads the machine's busy and total CPU ticks from /proc/stat (busy: all but
// idle and iowait); zeros where there is none.
func machineCPU() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		x, _ := strconv.ParseInt(v, 10, 64)
		total += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy, total
}

// nodeCounters reads a node's stream bytes sent and received and its CPU seconds from its
// /metrics.
func nodeCounters(ctx context.Context, addr string) (sent, received int64, cpu float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	sent, received, cpu = parseCounters(resp.Body)
	return sent, received, cpu, nil
}

// parseStreamCounters sums kura_stream_sent_bytes_total and every peer's
// kura_stream_received_bytes_total in a Prometheus text exposition.
func parseStreamCounters(r io.Reader) (sent, received int64) {
	sent, received, _ = parseCounters(r)
	return sent, received
}

// parseCounters is parseStreamCounters with process_cpu_seconds_total.
func parseCounters(r io.Reader) (sent, received int64, cpu float64) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		l := sc.Text()
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
			sent += int64(x)
		case strings.HasPrefix(name, "kura_stream_received_bytes_total"):
			received += int64(x)
		case name == "process_cpu_seconds_total":
			cpu = x
		}
	}
	return sent, received, cpu
}
