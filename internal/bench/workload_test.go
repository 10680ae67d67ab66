package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/go-ycsb/pkg/util"
)

// seed returns a seed for a randomized test and logs it so a failure can be replayed.
func seed(t *testing.T) int64 {
	s := time.Now().UnixNano()
	t.Logf("seed %d", s)
	return s
}

func TestNamedWorkloadsDrawOperationsInTheirProportions(t *testing.T) {
	sd := seed(t)
	const draws = 200_000
	for _, name := range WorkloadNames {
		w, err := NamedWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		w.RecordCount = 10_000
		g, err := NewGenerator(w, draws)
		if err != nil {
			t.Fatal(err)
		}
		s := g.Stream(sd)
		var counts [numOpKinds]int
		for range draws {
			op := s.Next()
			counts[op.Kind]++
			s.Done(op)
		}
		want := [numOpKinds]float64{w.ReadProportion, w.UpdateProportion, w.InsertProportion,
			w.ScanProportion, w.ReadModifyWriteProportion, w.PingProportion}
		for k, p := range want {
			// Five binomial standard deviations: a correct generator fails about once in
			// two million runs.
			tol := 5 * math.Sqrt(p*(1-p)/draws)
			if got := float64(counts[k]) / draws; math.Abs(got-p) > tol {
				t.Errorf("%s: %v share %.4f, want %.4f ± %.4f", name, OpKind(k), got, p, tol)
			}
		}
	}
}

func TestZipfianSkewMatchesTheory(t *testing.T) {
	// YCSB's zipfian draws a rank from ten billion items (Gray et al.'s approximation of
	// a Zipf law) and hashes it onto the key range, so the hottest keys are the hashes of
	// ranks 0, 1, 2, ... Theory: rank i has probability (i+1)^-theta / zeta(1e10, theta);
	// every key also gets an even share of the remaining mass. The approximation puts up
	// to about 6% more mass on ranks 2..10 than the exact law; the stated tolerance is 8%.
	const tolerance = 0.08
	sd := seed(t)
	for _, theta := range []float64{0.90, 0.99} {
		w := NewWorkload()
		w.RequestDistribution, w.ZipfianConstant = "zipfian", theta
		w.RecordCount, w.ReadProportion, w.UpdateProportion = 100_000, 1, 0
		g, err := NewGenerator(w, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := g.Stream(sd)
		counts := map[int64]int{}
		const draws = 400_000
		for range draws {
			counts[s.nextKeyNum()]++
		}
		items := g.keyHi - g.keyLo + 1
		zn := Zeta(itemCountScrambled, theta)
		for _, k := range []int{1, 10, 100, 1000} {
			seen := map[int64]bool{}
			got, p := 0, 0.0
			for i := range k {
				p += math.Pow(float64(i+1), -theta) / zn
				if key := util.Hash64(int64(i)) % items; !seen[key] {
					seen[key] = true
					got += counts[key]
				}
			}
			want := p + float64(len(seen))*(1-p)/float64(items)
			share := float64(got) / draws
			t.Logf("theta %.2f: hottest %d keys take %.4f of requests, theory %.4f", theta, k, share, want)
			if math.Abs(share/want-1) > tolerance {
				t.Errorf("theta %.2f: hottest %d keys take %.4f, theory %.4f (tolerance %.0f%%)",
					theta, k, share, want, tolerance*100)
			}
		}
	}
}

func TestZetaMatchesDirectSumAndYCSBConstant(t *testing.T) {
	// YCSB precomputes zeta(1e10, 0.99) as 26.46902820178302.
	if got := Zeta(itemCountScrambled, 0.99); math.Abs(got-26.46902820178302) > 1e-9 {
		t.Errorf("Zeta(1e10, 0.99) = %.15f, want YCSB's 26.46902820178302", got)
	}
	for _, theta := range []float64{0.5, 0.9, 0.99, 1.2} {
		const n = 1_000_000
		direct := 0.0
		for i := 1; i <= n; i++ {
			direct += math.Pow(float64(i), -theta)
		}
		if got := Zeta(n, theta); math.Abs(got/direct-1) > 1e-12 {
			t.Errorf("Zeta(%d, %v) = %.15f, direct sum %.15f", n, theta, got, direct)
		}
	}
}

func TestKeyNamesFollowYCSB(t *testing.T) {
	w := NewWorkload()
	g, err := NewGenerator(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.KeyName(7), "user"+itoa(util.Hash64(7)); got != want {
		t.Errorf("hashed key 7 = %q, want %q", got, want)
	}
	w.InsertOrder, w.ZeroPadding, w.KeyPrefix = "ordered", 6, "k"
	if got := g.KeyName(42); got != "k000042" {
		t.Errorf("ordered padded key 42 = %q, want k000042", got)
	}
}

func TestLoadHandsOutEveryRecordOnce(t *testing.T) {
	w := NewWorkload()
	w.RecordCount, w.InsertStart, w.InsertCount = 100, 10, 50
	g, err := NewGenerator(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := g.Stream(1), g.Stream(2)
	seen := map[string]bool{}
	for _, s := range []*Stream{a, b, a, a, b} {
		for range 20 {
			op, ok := s.NextLoad()
			if !ok {
				break
			}
			if seen[op.Key] || len(op.Values) != 10 || len(op.Values[3].Value) != 100 {
				t.Fatalf("load op %+v: duplicate or malformed", op)
			}
			seen[op.Key] = true
		}
	}
	for n := int64(10); n < 60; n++ {
		if !seen[g.KeyName(n)] {
			t.Errorf("record %d was not loaded", n)
		}
	}
	if len(seen) != 50 {
		t.Errorf("loaded %d records, want 50", len(seen))
	}
}

func TestUpdatesWriteOneFieldUnlessWriteAllFields(t *testing.T) {
	for _, all := range []bool{false, true} {
		w, _ := NamedWorkload("write-only")
		w.WriteAllFields = all
		g, err := NewGenerator(w, 0)
		if err != nil {
			t.Fatal(err)
		}
		op := g.Stream(3).Next()
		want := 1
		if all {
			want = 10
		}
		if op.Kind != OpUpdate || len(op.Values) != want {
			t.Errorf("writeallfields=%v: %v with %d values, want UPDATE with %d", all, op.Kind, len(op.Values), want)
		}
	}
}

func TestRunInsertsBecomeReadableOnlyWhenAcknowledged(t *testing.T) {
	w, _ := NamedWorkload("d") // latest distribution over run-phase inserts
	w.RecordCount = 100
	g, err := NewGenerator(w, 1000)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Stream(seed(t))
	inserted := map[string]bool{}
	for n := range int64(100) {
		inserted[g.KeyName(n)] = true
	}
	for range 5000 {
		op := s.Next()
		if op.Kind != OpInsert && !inserted[op.Key] {
			t.Fatalf("%v of %q, which was never inserted", op.Kind, op.Key)
		}
		if op.Kind == OpInsert {
			inserted[op.Key] = true
		}
		s.Done(op)
	}
}

func TestPropertiesFileAndErrors(t *testing.T) {
	w := NewWorkload()
	err := w.ReadProperties(strings.NewReader("# YCSB workloada\nworkload=site.ycsb.workloads.CoreWorkload\n" +
		"recordcount=5000\nreadallfields = false\nzipfianconstant=0.9\nrequestdistribution=hotspot\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.RecordCount != 5000 || w.ReadAllFields || w.ZipfianConstant != 0.9 || w.RequestDistribution != "hotspot" {
		t.Errorf("properties not applied: %+v", w)
	}
	if got := w.Properties()["insertcount"]; got != "5000" {
		t.Errorf("insertcount resolves to %s, want 5000", got)
	}
	for _, bad := range []string{"recordcount=-1", "nosuch=1", "readallfields=maybe", "justtext"} {
		if err := NewWorkload().ReadProperties(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, set := range [][2]string{{"requestdistribution", "pareto"}, {"insertorder", "random"},
		{"zipfianconstant", "1"}, {"readproportion", "0"}} {
		w := NewWorkload()
		if set[0] == "readproportion" {
			w.UpdateProportion = 0
		}
		if err := w.Set(set[0], set[1]); err != nil {
			t.Fatal(err)
		}
		if err := w.Validate(); err == nil {
			t.Errorf("%s=%s validated", set[0], set[1])
		}
	}
	if _, err := NamedWorkload("z"); err == nil {
		t.Error("unknown workload accepted")
	}
}
