package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/movesim"
	"github.com/kuradb/kura/internal/ring"
)

// measured fills the stream bytes each node sent and received over the recovery, from
// its counters scraped just before the removal was sent (metrics-before-K.txt; the
// victim's before the kill) and after the change finished (metrics-after-K.txt), and
// each node's average rates over the recovery.
func (r *Row) measured(dir string, ids map[int]string) {
	r.Sent, r.Received = map[int]int64{}, map[int]int64{}
	r.Rates.SendBps, r.Rates.RecvBps = map[int]float64{}, map[int]float64{}
	counters := func(path string) (int64, int64, bool) {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, false
		}
		defer f.Close()
		s, rc := parseStreamCounters(f)
		return s, rc, true
	}
	var bestS, bestR int64 = -1, -1
	for k := range ids {
		s0, r0, ok0 := counters(filepath.Join(dir, fmt.Sprintf("metrics-before-%d.txt", k)))
		s1, r1, ok1 := counters(filepath.Join(dir, fmt.Sprintf("metrics-after-%d.txt", k)))
		if !ok0 || !ok1 {
			continue
		}
		r.Sent[k], r.Received[k] = s1-s0, r1-r0
		r.SentBytes += s1 - s0
		r.ReceivedBytes += r1 - r0
		if r.Recovery > 0 {
			r.Rates.SendBps[k], r.Rates.RecvBps[k] = float64(s1-s0)/r.Recovery, float64(r1-r0)/r.Recovery
		}
		if s1-s0 > bestS {
			bestS, r.Rates.BusiestSend = s1-s0, k
		}
		if r1-r0 > bestR {
			bestR, r.Rates.BusiestRecv = r1-r0, k
		}
	}
}

// timelineRates reads the timeline: when each node last sent and received stream bytes
// (seconds from the removal), and the highest rate a node reached between two samples
// (about a second apart) from a second before the removal to a second after the finish.
func timelineRates(path string, remove, finish time.Time) (lastSend, lastRecv map[int]float64, peak float64, peakNode int, peakSide string) {
	lastSend, lastRecv = map[int]float64{}, map[int]float64{}
	byNode := readTimeline(path)
	lo, hi := remove.Add(-time.Second).UnixNano(), finish.Add(time.Second).UnixNano()
	for k, ss := range byNode {
		for i := 1; i < len(ss); i++ {
			a, b := ss[i-1], ss[i]
			if a.UnixNS < lo || b.UnixNS > hi {
				continue
			}
			dt := float64(b.UnixNS-a.UnixNS) / 1e9
			at := float64(b.UnixNS-remove.UnixNano()) / 1e9
			if b.Sent > a.Sent {
				lastSend[k] = at
				if v := float64(b.Sent-a.Sent) / dt; v > peak {
					peak, peakNode, peakSide = v, k, "send"
				}
			}
			if b.Received > a.Received {
				lastRecv[k] = at
				if v := float64(b.Received-a.Received) / dt; v > peak {
					peak, peakNode, peakSide = v, k, "receive"
				}
			}
		}
	}
	return
}

// rangesOK counts the ranges of c's ring and those with RF distinct replicas, all on
// members that are normal, up, and not victim.
func rangesOK(c *cluster, victim string) (int, int, error) {
	rg, err := buildRing(c)
	if err != nil {
		return 0, 0, err
	}
	strategy, err := ring.StrategyByName(c.Placement)
	if err != nil {
		return 0, 0, err
	}
	live := map[ring.NodeID]bool{}
	for _, m := range c.Members {
		if m.Status == "normal" && m.Up && m.ID != victim {
			live[ring.NodeID(m.ID)] = true
		}
	}
	ok := 0
	for i := range rg.RangeCount() {
		set := strategy.Replicas(rg, rg.RangeEnd(i), c.ReplicationFactor)
		good := len(set) == c.ReplicationFactor
		for j, id := range set {
			if !live[id] || slices.Contains(set[:j], id) {
				good = false
			}
		}
		if good {
			ok++
		}
	}
	return rg.RangeCount(), ok, nil
}

// Window is the foreground load's operations of one kind due in a window: latencies in
// milliseconds from their due time, failed operations included at their latency.
type Window struct {
	Count    int64   `json:"count"`
	Errors   int64   `json:"errors"`
	NotFound int64   `json:"not_found"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	// ServiceP99 is the p99 of the time from when the client sent the operation (zero in
	// logs without it).
	ServiceP99 float64 `json:"service_p99_ms"`
}

// OpWindows are a window's reads and writes.
type OpWindows struct {
	Seconds float64 `json:"seconds"`
	Read    Window  `json:"read"`
	Write   Window  `json:"write"`
}

// Latency is the load in four windows: Before, the BEFORE_S seconds before the kill;
// Detect, from the kill to the removal; During, the recovery (removal to finish); After,
// from the finish to the load's stop.
type Latency struct {
	Before, Detect, During, After OpWindows
	// P99Ratio is During's p99 over Before's, reads and writes (target ≤ 2).
	ReadP99Ratio  float64 `json:"read_p99_ratio"`
	WriteP99Ratio float64 `json:"write_p99_ratio"`
}

func latencies(path string, kill, remove, finish, stop time.Time, env map[string]string) (Latency, error) {
	var out Latency
	beforeS, _ := strconv.ParseFloat(env["before_s"], 64)
	bounds := []time.Time{kill.Add(-time.Duration(beforeS * float64(time.Second))), kill, remove, finish, stop}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	var lat, svc [4][2][]float64
	var cnt [4][2]Window
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 4 {
			continue
		}
		due, err1 := strconv.ParseInt(fl[0], 10, 64)
		us, err2 := strconv.ParseInt(fl[2], 10, 64)
		if err1 != nil || err2 != nil {
			return out, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		w := sort.Search(len(bounds), func(i int) bool { return bounds[i].UnixNano() > due }) - 1
		if w < 0 || w > 3 {
			continue
		}
		kind := 0
		if fl[1] == "W" {
			kind = 1
		}
		lat[w][kind] = append(lat[w][kind], float64(us)/1000)
		if len(fl) >= 8 {
			sv, _ := strconv.ParseInt(fl[7], 10, 64)
			svc[w][kind] = append(svc[w][kind], float64(sv)/1000)
		}
		cnt[w][kind].Count++
		switch fl[3] {
		case "err":
			cnt[w][kind].Errors++
		case "nf":
			cnt[w][kind].NotFound++
		}
	}
	ws := []*OpWindows{&out.Before, &out.Detect, &out.During, &out.After}
	for i, w := range ws {
		w.Seconds = bounds[i+1].Sub(bounds[i]).Seconds()
		w.Read, w.Write = cnt[i][0], cnt[i][1]
		w.Read.P50, w.Read.P99, w.Read.Max = percentiles(lat[i][0])
		w.Write.P50, w.Write.P99, w.Write.Max = percentiles(lat[i][1])
		_, w.Read.ServiceP99, _ = percentiles(svc[i][0])
		_, w.Write.ServiceP99, _ = percentiles(svc[i][1])
	}
	if out.Before.Read.P99 > 0 {
		out.ReadP99Ratio = out.During.Read.P99 / out.Before.Read.P99
	}
	if out.Before.Write.P99 > 0 {
		out.WriteP99Ratio = out.During.Write.P99 / out.Before.Write.P99
	}
	return out, sc.Err()
}

// percentiles returns the p50, p99 (nearest rank) and max of v.
func percentiles(v []float64) (p50, p99, most float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	slices.Sort(v)
	rank := func(q float64) float64 { return v[max(int(math.Ceil(q*float64(len(v))))-1, 0)] }
	return rank(0.50), rank(0.99), v[len(v)-1]
}

// simulate runs move.Kura's schedule of rec in movesim: what kura sim predicts for this
// recovery with one source per copy (the real removal does not use that scheduler yet).
func simulate(rec *move.Recovery) (float64, error) {
	s, err := move.Kura{}.Schedule(rec)
	if err != nil {
		return 0, err
	}
	res, err := movesim.Run(rec, s, movesim.Options{})
	if err != nil {
		return 0, err
	}
	return res.Seconds, nil
}

// simulatePlan runs the copies of kura's plan (move.RecoveryOfPlan: each with its one
// source and destination) in movesim, every copy started at once and sharing the nodes'
// send and receive limits max-min fairly: kura sim's prediction of the real removal's
// streaming, without its slots, its 1-s stream loop or the leader's rounds.
func simulatePlan(rec *move.Recovery) (float64, error) {
	var transfers []move.Transfer
	for i, c := range rec.Copies {
		to := rec.Candidates(i)
		if len(c.Sources) == 0 || len(to) == 0 {
			continue
		}
		transfers = append(transfers, move.Transfer{Range: c.Range, Source: c.Sources[0], Destination: to[0], Bytes: c.Bytes})
	}
	if len(transfers) == 0 {
		return 0, nil
	}
	res, err := movesim.RunTransfers(rec.Fabric, transfers, movesim.Limits{}, movesim.Options{})
	if err != nil {
		return 0, err
	}
	return res.Seconds, nil
}
