package route

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
)

var t0 = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

func TestRecentWritesRememberAWindowInBoundedMemory(t *testing.T) {
	r := recentWrites{window: time.Second, max: 3}
	r.add(1, t0)
	r.add(2, t0.Add(500*time.Millisecond))
	if !r.has(1, t0.Add(900*time.Millisecond)) || !r.has(2, t0.Add(1500*time.Millisecond)) {
		t.Fatal("a write within the window is forgotten")
	}
	if r.has(3, t0) {
		t.Fatal("a key never written is remembered")
	}
	// Remembered for at least one window and at most two.
	if r.has(1, t0.Add(2100*time.Millisecond)) {
		t.Fatal("a write is remembered past two windows")
	}
	r.add(4, t0.Add(3*time.Second))
	for h := uint64(10); h < 20; h++ {
		r.add(h, t0.Add(3*time.Second))
	}
	if len(r.cur) > 3 {
		t.Fatalf("%d keys held, at most 3", len(r.cur))
	}
	if !r.has(4, t0.Add(3*time.Second)) {
		t.Fatal("a key added before the bound was reached is forgotten")
	}
}

func heteroSet() []coord.Replica {
	return []coord.Replica{{ID: "l", Role: ring.WriteOptimized, Up: true}, {ID: "b", Role: ring.ReadOptimized, Up: true},
		{ID: "m", Role: ring.InMemory, Up: true}}
}

func TestLoadAnnotatesReplicaSets(t *testing.T) {
	tr := NewLoad(nil)
	set := heteroSet()
	tr.Observe("b", 8*time.Millisecond, t0)
	for range 40 {
		tr.Observe("m", time.Millisecond, t0)
	}
	tr.Observe("m", 9*time.Millisecond, t0) // one slow answer moves the average an eighth of the way
	tr.Observe("l", 5*time.Millisecond, t0) // this node's own replica: its local reads are timed too
	tr.Wrote([]byte("k"), t0)
	got := tr.Annotate([]byte("k"), set, t0)
	if got[1].Lagging != true || got[0].Lagging || got[2].Lagging {
		t.Fatalf("after a write only the read-optimized replica may lag: %+v", got)
	}
	if got[1].Latency != 8*time.Millisecond || got[2].Latency != 2*time.Millisecond || got[0].Latency != 5*time.Millisecond {
		t.Fatalf("latencies %v %v %v; want 5ms, 8ms, 2ms", got[0].Latency, got[1].Latency, got[2].Latency)
	}
	if set[1].Lagging || set[1].Latency != 0 {
		t.Fatal("Annotate modified the shared replica set")
	}
	if got := tr.Annotate([]byte("other"), set, t0); got[1].Lagging {
		t.Fatal("a key not written is marked lagging")
	}
	if got := tr.Annotate([]byte("k"), set, t0.Add(2*LatencyStale)); got[1].Latency != 0 {
		t.Fatal("a stale latency is still used")
	}
	if got := tr.Annotate([]byte("k"), set, t0.Add(2*RecentWriteWindow+time.Millisecond)); got[1].Lagging {
		t.Fatal("a write is remembered past two windows")
	}
}

// Latencies lists each replica with a recent read latency, and only those.
func TestLoadListsRecentReadLatencies(t *testing.T) {
	tr := NewLoad(nil)
	tr.Observe("b", 8*time.Millisecond, t0)
	tr.Observe("l", 2*time.Millisecond, t0)
	tr.Observe("m", time.Millisecond, t0.Add(-2*LatencyStale)) // stale: not listed
	got := tr.Latencies(t0)
	want := []ReplicaLatency{{"b", 8 * time.Millisecond}, {"l", 2 * time.Millisecond}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("latencies %v, want %v", got, want)
	}
}

// Quick holds only when every spare has a recent latency under the limit.
func TestQuickSparesHaveRecentLatenciesUnderTheLimit(t *testing.T) {
	tr := NewLoad(nil)
	tr.Observe("a", time.Millisecond, t0)
	tr.Observe("b", 30*time.Millisecond, t0)
	for _, tc := range []struct {
		ids  []ring.NodeID
		at   time.Time
		want bool
	}{
		{[]ring.NodeID{"a"}, t0, true},
		{[]ring.NodeID{"a", "b"}, t0, false}, // b is slow
		{[]ring.NodeID{"a", "c"}, t0, false}, // c has no sample
		{[]ring.NodeID{"a"}, t0.Add(2 * LatencyStale), false},
		{nil, t0, false},
	} {
		if got := tr.Quick(tc.ids, 10*time.Millisecond, tc.at); got != tc.want {
			t.Errorf("Quick(%v at +%v) = %v, want %v", tc.ids, tc.at.Sub(t0), got, tc.want)
		}
	}
}

// A replica some member holds hints for lags for every key, written recently or not,
// until the hints are gone.
func TestLoadMarksHintedReplicasLagging(t *testing.T) {
	held := map[ring.NodeID]bool{"b": true}
	tr := NewLoad(func(id ring.NodeID) bool { return held[id] })
	set := heteroSet()
	got := tr.Annotate([]byte("never written"), set, t0)
	if !got[1].Lagging || got[0].Lagging || got[2].Lagging {
		t.Fatalf("with hints held for b only b lags: %+v", got)
	}
	held = map[ring.NodeID]bool{"m": true}
	if got := tr.Annotate([]byte("never written"), set, t0); got[1].Lagging || !got[2].Lagging {
		t.Fatalf("with hints held for m only m lags: %+v", got)
	}
}

func TestLatencyBucketsHoldTheirLatencies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for range 10000 {
		d := time.Duration(rng.Int64N(int64(3 * time.Second)))
		i := latencyBucket(d)
		if i < latencyBuckets-1 && d > latencyUpper(i) {
			t.Fatalf("%v in bucket %d, whose bound is %v", d, i, latencyUpper(i))
		}
		if i > 0 && d <= latencyUpper(i-1) {
			t.Fatalf("%v in bucket %d, but bucket %d holds up to %v", d, i, i-1, latencyUpper(i-1))
		}
	}
	for i := range latencyBuckets - 1 { // every bound is its own bucket's
		if b := latencyBucket(latencyUpper(i)); b != i {
			t.Fatalf("bound %v of bucket %d lands in %d", latencyUpper(i), i, b)
		}
	}
}

// The threshold follows the percentile of the last window's reads, within a bucket's
// quarter above it, is capped, and stays as it was over a window of too few reads.
func TestReadFallbackThresholdFollowsThePercentileOfRecentReads(t *testing.T) {
	const limit = 20 * time.Millisecond
	for _, tc := range []struct {
		p        float64
		min, max time.Duration
	}{
		{90, time.Millisecond, 1250 * time.Microsecond}, // the 1 ms reads
		{99, limit, limit}, // the 50 ms reads, capped
	} {
		l := NewReadLatencies(tc.p, limit)
		if got := l.Threshold(); got != limit {
			t.Fatalf("before any window: %v, want the cap %v", got, limit)
		}
		at := t0
		for i := range 100 { // a window: 95 reads of 1 ms, 5 of 50 ms
			d := time.Millisecond
			if i%20 == 0 {
				d = 50 * time.Millisecond
			}
			l.Observe(at, d)
			at = at.Add(10 * time.Millisecond)
		}
		l.Observe(t0.Add(readWindow+time.Second), time.Millisecond) // rolls it
		if got := l.Threshold(); got < tc.min || got > tc.max {
			t.Fatalf("p%g: threshold %v, want %v to %v", tc.p, got, tc.min, tc.max)
		}
		// A window of a few slow reads changes nothing.
		before := l.Threshold()
		at = t0.Add(readWindow + 2*time.Second)
		for range readWindowReads / 2 {
			l.Observe(at, 500*time.Millisecond)
		}
		l.Observe(at.Add(2*readWindow), time.Millisecond)
		if got := l.Threshold(); got != before {
			t.Fatalf("p%g: %d reads moved the threshold from %v to %v", tc.p, readWindowReads/2, before, got)
		}
	}
}

// The budget starts with RetryBudgetBurst retries in hand, never holds more, and then
// allows one retry for every ten reads.
func TestRetryBudgetAllowsATenthOfReads(t *testing.T) {
	var b RetryBudget
	for range 10 * RetryBudgetBurst { // reads while it is full earn nothing
		b.Earn()
	}
	n := 0
	for b.Spend() {
		n++
	}
	if n != RetryBudgetBurst {
		t.Fatalf("%d retries in hand at first, want the burst %d", n, RetryBudgetBurst)
	}
	for range 9 {
		b.Earn()
	}
	if b.Spend() {
		t.Fatal("a retry allowed after 9 reads with the budget spent")
	}
	b.Earn()
	if !b.Spend() {
		t.Fatal("no retry allowed after 10 reads")
	}
	if b.Spend() {
		t.Fatal("a second retry allowed after 10 reads")
	}
	// Steady state where every read is late: one in ten is retried.
	retried := 0
	for range 1000 {
		b.Earn()
		if b.Spend() {
			retried++
		}
	}
	if retried != 100 {
		t.Fatalf("%d of 1000 reads retried when every one was late, want 100", retried)
	}
}

// A pace takes at most a window of unanswered writes and a tenth of a second's worth of
// its rate at once; late answers halve the rate, at most once per span; timely ones
// raise it.
func TestPaceBoundsWhatIsUnansweredAndHalvesOnLateAnswers(t *testing.T) {
	p := &Pace{Target: 20 * time.Millisecond}
	if got, want := p.Room(t0), min(DefaultPaceRate/10, DefaultPaceWindow); got != want {
		t.Fatalf("room at first %d, want %d: a tenth of a second at %d/s, at most a window", got, want, DefaultPaceRate)
	}
	p.Sent(DefaultPaceWindow, t0)
	if p.Ready(t0.Add(time.Second)) {
		t.Fatal("ready with a full window unanswered")
	}
	for range DefaultPaceWindow {
		p.Answered(50*time.Millisecond, false, t0.Add(time.Second)) // late: one halving
	}
	if p.Rate() != DefaultPaceRate/2 {
		t.Fatalf("rate %v after a burst of late answers, want one halving to %v", p.Rate(), DefaultPaceRate/2)
	}
	p.Answered(time.Millisecond, true, t0.Add(time.Second+30*time.Millisecond)) // a failure, a span later
	if p.Rate() != DefaultPaceRate/4 {
		t.Fatalf("rate %v after a failure a span later, want %v", p.Rate(), DefaultPaceRate/4)
	}
	before := p.Rate()
	p.Sent(1, t0.Add(2*time.Second))
	p.Answered(time.Millisecond, false, t0.Add(2*time.Second))
	if p.Rate() <= before {
		t.Fatal("a timely answer did not raise the rate")
	}
}

// A synchronous replica answering late congests the asynchronous replicas on its host,
// and only those; the pacer then marks them Backlogged once their room is spent.
func TestALateSynchronousReplicaSlowsTheAsynchronousOnesOnItsHost(t *testing.T) {
	hosts := map[ring.NodeID]string{"l1": "h1", "b1": "h1", "b2": "h2"}
	a := NewPacer(time.Second, 20*time.Millisecond, func(id ring.NodeID) string { return hosts[id] })
	a.Sent("b1", 1, t0)
	a.Sent("b2", 1, t0)
	a.Answered("b1", 1, time.Millisecond, false, t0)
	a.Answered("b2", 1, time.Millisecond, false, t0)
	rate := func(id ring.NodeID) float64 {
		for _, r := range a.Rates() {
			if r.ID == id {
				return r.Rate
			}
		}
		return 0
	}
	b1, b2 := rate("b1"), rate("b2")
	a.Synchronous("l1", 10*time.Millisecond, false, t0) // in time: nothing
	if rate("b1") != b1 {
		t.Fatal("a timely synchronous answer slowed its host")
	}
	a.Synchronous("l1", 50*time.Millisecond, false, t0)
	if rate("b1") != b1/2 || rate("b2") != b2 {
		t.Fatalf("after a late synchronous answer on h1: b1 %v (was %v), b2 %v (was %v)", rate("b1"), b1, rate("b2"), b2)
	}
	set := []coord.Replica{{ID: "b1", Up: true}, {ID: "b2", Up: true}}
	a.Sent("b1", a.Room("b1", t0), t0)
	got := a.Annotate(set, t0)
	if !got[0].Backlogged || got[1].Backlogged || set[0].Backlogged {
		t.Fatalf("after spending b1's room: %+v (shared set %+v)", got, set)
	}
}
