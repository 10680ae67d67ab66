package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Second is one second of the recovery (and a few around it): what the nodes streamed and
// what the foreground load saw, so that a latency spike can be set beside the streaming.
type Second struct {
	// At is the second's start, from the removal.
	At float64 `json:"at_s"`
	// SentBps and RecvBps are every node's stream rates summed; BusiestBps the highest
	// one node had on either side, BusiestNode that node.
	SentBps     float64 `json:"sent_bps"`
	RecvBps     float64 `json:"recv_bps"`
	BusiestBps  float64 `json:"busiest_bps"`
	BusiestNode int     `json:"busiest_node"`
	// NodesCPU is the cores every node used in the second, summed; BusiestCPU the most
	// one node used, BusiestCPUNode that node; MachineBusy the share of the machine's CPU
	// time busy (every program's: the machine is shared).
	NodesCPU       float64 `json:"nodes_cpu"`
	BusiestCPU     float64 `json:"busiest_cpu"`
	BusiestCPUNode int     `json:"busiest_cpu_node"`
	MachineBusy    float64 `json:"machine_busy"`
	// Epoch is the highest ring version a node reported in the second.
	Epoch uint64 `json:"epoch"`
	// Operations due in the second: reads' and writes' p99, milliseconds.
	ReadP99  float64 `json:"read_p99_ms"`
	WriteP99 float64 `json:"write_p99_ms"`
	// ServiceP99 is the p99 of every operation's time from when the client sent it.
	ServiceP99 float64 `json:"service_p99_ms"`
	Ops        int     `json:"ops"`
}

// secondsAround returns the seconds from `before` seconds before remove to `after` after
// finish, from the timeline (each node's counters, interpolated at each second's bounds)
// and the ops log.
func secondsAround(timeline, ops string, remove, finish time.Time, before, after int) []Second {
	n := before + int(math.Ceil(finish.Sub(remove).Seconds())) + after
	out := make([]Second, n)
	start := remove.Add(-time.Duration(before) * time.Second)
	for i := range out {
		out[i].At = float64(i - before)
	}
	byNode := readTimeline(timeline)
	for k, ss := range byNode {
		for i := range out {
			a, b := start.Add(time.Duration(i)*time.Second).UnixNano(), start.Add(time.Duration(i+1)*time.Second).UnixNano()
			s := interpolate(ss, b, sentOf) - interpolate(ss, a, sentOf)
			r := interpolate(ss, b, receivedOf) - interpolate(ss, a, receivedOf)
			cpu := interpolate(ss, b, cpuOf) - interpolate(ss, a, cpuOf)
			out[i].NodesCPU += cpu
			if cpu > out[i].BusiestCPU {
				out[i].BusiestCPU, out[i].BusiestCPUNode = cpu, k
			}
			if busy, total := interpolate(ss, b, busyOf)-interpolate(ss, a, busyOf), interpolate(ss, b, totalOf)-interpolate(ss, a, totalOf); total > 0 {
				out[i].MachineBusy = busy / total
			}
			out[i].SentBps += s
			out[i].RecvBps += r
			if m := max(s, r); m > out[i].BusiestBps {
				out[i].BusiestBps, out[i].BusiestNode = m, k
			}
			for _, x := range ss {
				if x.UnixNS >= a && x.UnixNS < b {
					out[i].Epoch = max(out[i].Epoch, x.Epoch)
				}
			}
		}
	}
	lat := make([][2][]float64, n)
	svc := make([][]float64, n)
	if f, err := os.Open(ops); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 3 {
				continue
			}
			due, _ := strconv.ParseInt(fl[0], 10, 64)
			us, _ := strconv.ParseInt(fl[2], 10, 64)
			i := int(math.Floor(float64(due-start.UnixNano()) / 1e9))
			if i < 0 || i >= n {
				continue
			}
			kind := 0
			if fl[1] == "W" {
				kind = 1
			}
			lat[i][kind] = append(lat[i][kind], float64(us)/1000)
			if len(fl) >= 8 {
				sv, _ := strconv.ParseInt(fl[7], 10, 64)
				svc[i] = append(svc[i], float64(sv)/1000)
			}
		}
		f.Close()
	}
	for i := range out {
		_, out[i].ReadP99, _ = percentiles(lat[i][0])
		_, out[i].WriteP99, _ = percentiles(lat[i][1])
		_, out[i].ServiceP99, _ = percentiles(svc[i])
		out[i].Ops = len(lat[i][0]) + len(lat[i][1])
	}
	return out
}

// readTimeline reads the timeline's samples of answering nodes, by node, in time order.
func readTimeline(path string) map[int][]Sample {
	byNode := map[int][]Sample{}
	f, err := os.Open(path)
	if err != nil {
		return byNode
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s Sample
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Up {
			byNode[s.Node] = append(byNode[s.Node], s)
		}
	}
	for _, ss := range byNode {
		slices.SortFunc(ss, func(a, b Sample) int { return int(a.UnixNS - b.UnixNS) })
	}
	return byNode
}

// Sample fields interpolate reads.
func sentOf(s Sample) float64     { return float64(s.Sent) }
func receivedOf(s Sample) float64 { return float64(s.Received) }
func cpuOf(s Sample) float64      { return s.CPUSeconds }
func busyOf(s Sample) float64     { return float64(s.MachineBusy) }
func totalOf(s Sample) float64    { return float64(s.MachineTotal) }

// interpolate returns a node's counter v at t, linear between its samples; before its
// first sample it is the first, after its last the last.
func interpolate(ss []Sample, t int64, v func(Sample) float64) float64 {
	if len(ss) == 0 {
		return 0
	}
	i, _ := slices.BinarySearchFunc(ss, t, func(s Sample, t int64) int { return int(s.UnixNS - t) })
	switch {
	case i == 0:
		return v(ss[0])
	case i == len(ss):
		return v(ss[len(ss)-1])
	}
	a, b := ss[i-1], ss[i]
	f := float64(t-a.UnixNS) / float64(b.UnixNS-a.UnixNS)
	return v(a) + f*(v(b)-v(a))
}

// cpu fills each node's cores and the machine's busy share over [b0, b1) (before the
// kill) and [d0, d1) (the recovery), from the timeline.
func (r *Row) cpu(timeline string, b0, b1, d0, d1 time.Time) {
	r.Rates.CPUBefore, r.Rates.CPUDuring = map[int]float64{}, map[int]float64{}
	over := func(ss []Sample, a, b time.Time, v func(Sample) float64) float64 {
		return interpolate(ss, b.UnixNano(), v) - interpolate(ss, a.UnixNano(), v)
	}
	for k, ss := range readTimeline(timeline) {
		if x := b1.Sub(b0).Seconds(); x > 0 {
			r.Rates.CPUBefore[k] = over(ss, b0, b1, cpuOf) / x
		}
		if x := d1.Sub(d0).Seconds(); x > 0 {
			r.Rates.CPUDuring[k] = over(ss, d0, d1, cpuOf) / x
		}
		if t := over(ss, b0, b1, totalOf); t > 0 {
			r.Rates.MachineBefore = over(ss, b0, b1, busyOf) / t
		}
		if t := over(ss, d0, d1, totalOf); t > 0 {
			r.Rates.MachineDuring = over(ss, d0, d1, busyOf) / t
		}
	}
}
