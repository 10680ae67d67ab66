package tiered

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/bench"
)

// simulation replays a YCSB stream against the placement alone (the access tracker and
// Policy.Decide, in virtual time, with no engine), to measure which share of reads the
// fast tier would serve against the oracle that knows the true most-read keys.
type simulation struct {
	records, budgetRows int
	theta               string
	readsPerSecond      int
	windows             int
	historyWindows      int
	counters            int // the tracker's sketch size (0: its default)
	historyCounters     int // the score's sketch size (0: its default)
	displace            float64
	// countWrites records writes as accesses too, as a node does by default
	// (--tier-count-writes).
	countWrites bool
	// lastWindows, if set, measures the reads of that many last windows instead of the
	// second half's.
	lastWindows int
	// exact ranks by exact counts aged as the tracker ages its score, instead of the
	// tracker's sketch: what the sketch's collisions and fixed point cost.
	exact bool
	// paperRule places as seed 001 does instead: the fast tier holds the rows read in the
	// last window (K=1), the most read first while the budget lasts.
	paperRule bool
}

// run returns the share of reads of the second half of the windows that found their key
// on the fast tier, and the oracle's share for the same budget.
func (s simulation) run(t *testing.T) (share, oracle float64) {
	t.Helper()
	w, err := bench.NamedWorkload("write-heavy")
	if err != nil {
		t.Fatal(err)
	}
	w.RecordCount = int64(s.records)
	if err := w.Set("zipfianconstant", s.theta); err != nil {
		t.Fatal(err)
	}
	const rowBytes = 1000
	window := 10 * time.Second
	tr := access.New(access.Config{Window: window, HistoryWindows: s.historyWindows, Counters: s.counters,
		HistoryCounters: s.historyCounters})
	p := Policy{BudgetBytes: int64(s.budgetRows * rowBytes), MinReads: 1, Displace: s.displace}
	opsPerWindow := 2 * s.readsPerSecond * int(window/time.Second) // half the operations read
	g, err := bench.NewGenerator(w, int64(opsPerWindow*s.windows))
	if err != nil {
		t.Fatal(err)
	}
	stream := g.Stream(11)
	fast := map[string]bool{}
	now := time.Unix(1_800_000_000, 0)
	measureFrom := s.windows / 2
	if s.lastWindows > 0 {
		measureFrom = s.windows - s.lastWindows
	}
	type aged struct {
		count  float64
		window int
	}
	exact, win := map[string]aged{}, 0
	keep := 1 - 1/float64(tr.Config().HistoryWindows)
	score := func(k string) float64 {
		if !s.exact {
			return tr.Score([]byte(k), now)
		}
		a := exact[k]
		return a.count * math.Pow(keep, float64(win-a.window))
	}
	var reads, hits int64
	for ; win < s.windows; win++ {
		for i := range opsPerWindow {
			op := stream.Next()
			if op.Kind == bench.OpRead || s.countWrites {
				at := now.Add(time.Duration(i) * window / time.Duration(opsPerWindow))
				tr.Record([]byte(op.Key), at)
				if s.exact {
					a := exact[op.Key]
					exact[op.Key] = aged{a.count*math.Pow(keep, float64(win-a.window)) + 1, win}
				}
			}
			if op.Kind == bench.OpRead {
				if win >= measureFrom {
					reads++
					if fast[op.Key] {
						hits++
					}
				}
			}
			stream.Done(op)
		}
		now = now.Add(window)
		var in Input
		for k := range fast {
			in.Fast = append(in.Fast, Candidate{Key: k, Reads: tr.Count([]byte(k), now), Score: score(k), Bytes: rowBytes})
		}
		for _, k := range tr.Top(now) {
			in.Hot = append(in.Hot, Candidate{Key: k.Key, Reads: k.Count, Score: score(k.Key), Bytes: rowBytes})
		}
		if s.paperRule {
			clear(fast)
			for _, k := range tr.Top(now)[:min(s.budgetRows, len(tr.Top(now)))] {
				fast[k.Key] = true
			}
			continue
		}
		for _, m := range p.Decide(in) {
			if m.To == Fast {
				fast[m.Key] = true
			} else {
				delete(fast, m.Key)
			}
		}
	}
	o, err := bench.OracleShare(w, int64(opsPerWindow*s.windows), s.budgetRows, 3)
	if err != nil {
		t.Fatal(err)
	}
	return float64(hits) / float64(reads), o.Share
}

// The placement's claim, in simulation: with a tenth of the rows on the fast tier, it
// serves at least 0.9 of the reads the oracle's placement would, at seed 001's skews.
func TestPlacementApproachesTheOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of reads")
	}
	for _, theta := range []string{"0.99", "0.9"} {
		s := simulation{records: 100000, budgetRows: 10000, theta: theta, readsPerSecond: 1000, windows: 40,
			historyWindows: 8, displace: 2}
		share, oracle := s.run(t)
		s.paperRule = true
		paper, _ := s.run(t)
		t.Logf("zipfian %s: fast tier served %.3f of reads, the oracle %.3f: %.2f of it (the paper's rule: %.3f, %.2f)",
			theta, share, oracle, share/oracle, paper, paper/oracle)
		if share < 0.9*oracle {
			t.Errorf("zipfian %s: %.3f of reads from the fast tier, under 0.9 of the oracle's %.3f", theta, share, oracle)
		}
	}
}

// The placement holds its share once the budget is full, where most rows it ranks are read
// less than once an hour: the issue-6 runs' regime (3,000,000 rows, a budget of 300,000,
// about 225 reads a second) scaled down twentyfold, over 8,000 s. With the tracker's former
// memory of 8 windows in 16ths of a read, rows just read displaced rows that had been read
// more, longer ago: over the second half the fast tier served 0.84 of the oracle's share
// (0.79 by the end at a tenth of the runs' scale). With 128 windows in 256ths of a read it
// served 0.92; with the score's own sketch and 512 windows (the default since 2026-11-26),
// 0.95.
func TestPlacementHoldsItsShareOnceTheBudgetIsFull(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two hours of reads")
	}
	s := simulation{records: 150000, budgetRows: 15000, theta: "0.99", readsPerSecond: 11, windows: 800,
		counters: 1 << 16, displace: 2}
	share, oracle := s.run(t)
	t.Logf("second half of 8,000 s: fast tier served %.3f of reads, the oracle %.3f: %.2f of it", share, oracle, share/oracle)
	if share < 0.9*oracle {
		t.Errorf("%.3f of reads from the fast tier, under 0.9 of the oracle's %.3f", share, oracle)
	}
}

// The evaluation's hour at full scale (3,000,000 rows, the 330 MB budget's 285,961 rows,
// 600 operations a second, reads and writes counted, the last 10 minutes' reads measured)
// under each score the design weighed (docs/design/tiered.md, "A sketch of its own for the
// score"). About a minute a row of the table on two cores, so only when asked:
// KURA_SIM_HOUR=1 go test -run TestSimulateTheEvaluationsHour -v ./internal/engine/tiered/
func TestSimulateTheEvaluationsHour(t *testing.T) {
	if os.Getenv("KURA_SIM_HOUR") == "" {
		t.Skip("set KURA_SIM_HOUR=1 to simulate the evaluation's hour (minutes)")
	}
	for _, theta := range []string{"0.99", "0.9"} {
		// The oracle's share takes a long stream to estimate (bench.OracleShare ranks on
		// one draw and measures on another): 15,000,000 operations, as for the runs.
		w, err := bench.NamedWorkload("write-heavy")
		if err != nil {
			t.Fatal(err)
		}
		w.RecordCount = 3_000_000
		if err := w.Set("zipfianconstant", theta); err != nil {
			t.Fatal(err)
		}
		o, err := bench.OracleShare(w, 15_000_000, 285_961, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name          string
			history, size int
			exact         bool
		}{
			{"own sketch, 2^21 counters, 512 windows (the default)", 512, 1 << 21, false},
			{"own sketch, 2^21 counters, 128 windows", 128, 1 << 21, false},
			{"own sketch, 2^22 counters, 512 windows", 512, 1 << 22, false},
			{"exact counts, 512 windows", 512, 0, true},
			{"exact counts, 128 windows", 128, 0, true},
		} {
			s := simulation{records: 3_000_000, budgetRows: 285_961, theta: theta, readsPerSecond: 300, windows: 360,
				historyWindows: c.history, historyCounters: c.size, displace: 2, countWrites: true, lastWindows: 60,
				exact: c.exact}
			share, learned := s.run(t)
			t.Logf("zipfian %s, %s: last 10 minutes %.4f of reads from the fast tier, %.3f of the oracle's %.4f "+
				"(%.3f of the %.4f a ranking learned from an hour's operations serves)",
				theta, c.name, share, share/o.Share, o.Share, share/learned, learned)
		}
	}
}
