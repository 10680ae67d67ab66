package machine

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/route"
)

// hetero is the heterogeneous trio: n1 (the coordinator) write-optimized, n2
// read-optimized, n3 in memory.
func hetero(t *testing.T, cfg Config) *sim {
	return newSim(t, cfg, ring.WriteOptimized, ring.ReadOptimized, ring.InMemory)
}

// Replica sets list this node first, with the failure detector's opinion and each
// member's role; a new view replaces them.
func TestReplicaSetsPutThisNodeFirstAndFollowTheView(t *testing.T) {
	s := newSim(t, Config{}, ring.ReadOptimized, ring.WriteOptimized, ring.InMemory)
	for _, key := range []string{"a", "b", "c", "zz"} {
		set := s.n.Replicas([]byte(key))
		if len(set) != 3 || set[0].ID != "n1" || set[0].Role != ring.ReadOptimized || !set[1].Up {
			t.Fatalf("%s: replicas %+v", key, set)
		}
	}
	s.setUp("n2", false)
	for _, r := range s.n.Replicas([]byte("a")) {
		if r.Up != (r.ID != "n2") {
			t.Fatalf("after n2 went down: %+v", s.n.Replicas([]byte("a")))
		}
	}
	if New(Config{Policy: coord.Uniform{}}).Replicas([]byte("a")) != nil {
		t.Fatal("a node with no view has replicas")
	}
}

// Members announce the replicas they hold hints for; a coordinator takes the word of the
// live ones other than itself (its own hints it knows first-hand).
func TestBehindSetTakesLiveMembersAnnouncements(t *testing.T) {
	members := map[ring.NodeID]cluster.Member{
		"n1": {ID: "n1", Up: true, Behind: []ring.NodeID{"n2"}},
		"n2": {ID: "n2", Up: true},
		"n3": {ID: "n3", Up: false, Behind: []ring.NodeID{"n4"}}, // down: not news
		"n4": {ID: "n4", Up: true},
		"n5": {ID: "n5", Up: true, Behind: []ring.NodeID{"n3", "n4"}},
	}
	for _, tc := range []struct {
		self ring.NodeID
		want string
	}{
		{"n1", "[n3 n4]"},
		{"n2", "[n2 n3 n4]"},
		{"n5", "[n2]"},
	} {
		var got []ring.NodeID
		for id := range behindSet(members, tc.self) {
			got = append(got, id)
		}
		slices.Sort(got)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("as %s: behind %v, want %s", tc.self, got, tc.want)
		}
	}
	if s := behindSet(map[ring.NodeID]cluster.Member{"n1": {ID: "n1", Up: true}}, "n2"); s != nil {
		t.Errorf("nobody announced anything, behind %v", s)
	}
}

// A read-optimized replica that answers a second late: with its asynchronous writes
// paced, the coordinator keeps at most a window of them on it and defers the rest to
// hints; without, every write piles onto it. Either way every write succeeds at QUORUM.
func TestAsyncWritesToASlowReplicaAreDeferredBeyondItsPace(t *testing.T) {
	const writes = 100
	for _, paced := range []bool{true, false} {
		cfg := Config{Policy: coord.EngineAware{}}
		if paced {
			cfg.AsyncTarget, cfg.WriteSlowAfter = 20*time.Millisecond, 20*time.Millisecond
		}
		s := hetero(t, cfg)
		s.reps["n1"].writeDelay, s.reps["n3"].writeDelay = time.Millisecond, time.Millisecond
		s.reps["n2"].writeDelay = time.Second
		for i := range writes {
			if w := s.writeSync(fmt.Sprintf("k%d", i), coord.Quorum); w.reply.Err != nil {
				t.Fatalf("paced=%t: write %d: %v", paced, i, w.reply.Err)
			}
		}
		s.advance(2 * time.Second) // the late answers
		slow, deferred := s.reps["n2"], s.hintsFor("n2")
		t.Logf("paced=%t: the slow replica held at most %d writes at once; %d sent, %d deferred", paced, slow.maxHeld, slow.writes, deferred)
		if slow.writes+deferred != writes {
			t.Fatalf("paced=%t: %d writes sent and %d deferred to the slow replica, want %d in all", paced, slow.writes, deferred, writes)
		}
		if paced && (slow.maxHeld > route.DefaultPaceWindow || deferred == 0) {
			t.Fatalf("paced: the slow replica held %d writes at once (window %d), %d deferred", slow.maxHeld, route.DefaultPaceWindow, deferred)
		}
		if !paced && (slow.maxHeld != writes || deferred != 0) {
			t.Fatalf("unpaced: the slow replica held at most %d writes at once, %d deferred", slow.maxHeld, deferred)
		}
	}
}

// A synchronous replica answering late slows the asynchronous writes to the replicas on
// its host, though they answer at once: they take the disk and the cores it needs. Here
// the in-memory replica n3 answers 60 ms late (the host target is 20 ms) and the
// read-optimized n2 at once (its own target is a second): on n3's host, most of n2's
// writes are deferred; on a host of its own, none.
func TestALateSynchronousReplicaSlowsTheAsynchronousOnesOnItsHost(t *testing.T) {
	const writers, each = 8, 20
	for _, cohosted := range []bool{true, false} {
		s := hetero(t, Config{Policy: coord.EngineAware{}, AsyncTarget: time.Second, WriteSlowAfter: 20 * time.Millisecond})
		if cohosted {
			m1, _ := s.n.Member("n1")
			m2, _ := s.n.Member("n2")
			m3, _ := s.n.Member("n3")
			m3.Host = m2.Host
			s.setMembers([]cluster.Member{m1, m2, m3})
		}
		s.reps["n1"].writeDelay, s.reps["n2"].writeDelay = time.Millisecond, time.Millisecond
		s.reps["n3"].writeDelay = 60 * time.Millisecond
		done := 0
		for w := range writers {
			var next func(i int)
			next = func(i int) {
				if i == each {
					done++
					return
				}
				wr := s.startWrite(fmt.Sprintf("k%d-%d", w, i), coord.Quorum)
				wr.onReply = func() {
					if wr.reply.Err != nil {
						t.Fatal(wr.reply.Err)
					}
					next(i + 1)
				}
			}
			next(0)
		}
		s.runUntil("every writer is done", func() bool { return done == writers })
		deferred := s.hintsFor("n2")
		t.Logf("cohosted=%t: %d of %d writes to n2 deferred", cohosted, deferred, writers*each)
		if cohosted && deferred < writers*each/2 {
			t.Fatalf("n2 shares the late replica's host, yet only %d of %d of its writes were deferred", deferred, writers*each)
		}
		if !cohosted && deferred != 0 {
			t.Fatalf("n2 has a host of its own and answers at once, yet %d of %d of its writes were deferred", deferred, writers*each)
		}
	}
}

// Hint replay to a replica whose asynchronous writes are paced takes its pace: no more
// than its room per batch, nothing while it has none, and no second batch after one
// answered late. Unpaced, a round replays every batch it may.
func TestHintReplayTakesTheReplicasPace(t *testing.T) {
	// round replays to n2, whose batches answer after answerIn, and returns how many
	// hints it sent.
	round := func(s *sim, answerIn time.Duration) int {
		r, sent := s.n.StartReplay("n2"), 0
		for batch := r.Next(s.now); batch > 0; batch = r.Next(s.now) {
			r.Sent(batch, s.now)
			s.now = s.now.Add(answerIn)
			r.Answered(batch, answerIn, false, s.now)
			sent += batch
		}
		return sent
	}
	s := hetero(t, Config{Policy: coord.EngineAware{}, AsyncTarget: 20 * time.Millisecond, WriteSlowAfter: 20 * time.Millisecond})
	if n := round(s, 50*time.Millisecond); n != route.DefaultPaceWindow {
		t.Fatalf("a late replica was replayed %d hints, want one window's worth, %d", n, route.DefaultPaceWindow)
	}
	s.n.pacer.Sent("n2", s.n.pacer.Room("n2", s.now), s.now) // no room left
	if n := round(s, time.Millisecond); n != 0 {
		t.Fatalf("%d hints replayed to a replica with no room", n)
	}
	s.n.pacer.Answered("n2", 1, time.Millisecond, false, s.now)
	s.now = s.now.Add(100 * time.Millisecond) // the bucket refills: a tenth of a second's worth
	n := round(s, time.Millisecond)
	t.Logf("paced, after a halving: %d hints in one round", n)
	if n == 0 || n > route.DefaultPaceWindow {
		t.Fatalf("a fast replica was replayed %d hints in one round after its rate halved; want some, at most a bucket's", n)
	}

	unpaced := hetero(t, Config{Policy: coord.EngineAware{}})
	if n := round(unpaced, 50*time.Millisecond); n != ReplayBatches*ReplayBatch {
		t.Fatalf("unpaced: %d hints replayed in one round, want %d", n, ReplayBatches*ReplayBatch)
	}
}

// Hints for a replica rebuilt since are covered up to its refill's start, less the
// clock skew allowed; replay goes only to replicas that are up.
func TestHintsARebuildCoveredAreDiscardedAndReplayWaitsForUp(t *testing.T) {
	s := hetero(t, Config{Policy: coord.EngineAware{}})
	if _, ok := s.n.HintsCovered("n2"); ok {
		t.Fatal("hints covered for a replica never rebuilt")
	}
	m1, _ := s.n.Member("n1")
	m2, _ := s.n.Member("n2")
	m3, _ := s.n.Member("n3")
	m2.Refilled, m3.Up = t0, false
	s.setMembers([]cluster.Member{m1, m2, m3})
	if before, ok := s.n.HintsCovered("n2"); !ok || !before.Equal(t0.Add(-RefillSkew)) {
		t.Fatalf("covered before %v %v, want %v", before, ok, t0.Add(-RefillSkew))
	}
	if !s.n.ReplayTo("n2") || s.n.ReplayTo("n3") {
		t.Fatal("replay goes to a down replica, or not to an up one")
	}
}

// A node announces its load the first time, then only when it moved by 1% or 1 MiB; and
// the replicas it holds hints for whenever they change.
func TestAnnouncementsAreMadeWhenWorthIt(t *testing.T) {
	n := New(Config{Policy: coord.Uniform{}})
	for _, tc := range []struct {
		load int64
		want bool
	}{
		{0, true}, {1 << 19, false}, {1 << 20, true}, {1 << 30, true}, {1<<30 + 1<<20, false}, {1<<30 + 11<<20, true},
	} {
		if got := n.AnnounceLoad(tc.load); got != tc.want {
			t.Errorf("load %d: announce %v, want %v", tc.load, got, tc.want)
		}
	}
	for _, tc := range []struct {
		holding []ring.NodeID
		want    bool
	}{
		{nil, false}, {[]ring.NodeID{"n2"}, true}, {[]ring.NodeID{"n2"}, false}, {[]ring.NodeID{"n2", "n3"}, true}, {nil, true},
	} {
		if got := n.AnnounceBehind(tc.holding); got != tc.want {
			t.Errorf("holding %v: announce %v, want %v", tc.holding, got, tc.want)
		}
	}
}

// Engine-aware writes count the write-optimized and in-memory replicas. When the in-memory
// one is slow, the write waits WriteSlowAfter and then counts the read-optimized
// replica's acknowledgement, instead of waiting out the request timeout.
func TestEngineAwareWriteFallsBackWhenASynchronousReplicaIsSlow(t *testing.T) {
	for _, slowAfter := range []time.Duration{50 * time.Millisecond, 0} {
		m := &counts{}
		s := hetero(t, Config{Policy: coord.EngineAware{}, WriteSlowAfter: slowAfter, Timeout: 500 * time.Millisecond, Metrics: m})
		s.reps["n3"].writeDelay = time.Hour
		w := s.writeSync("k", coord.Quorum)
		switch {
		case slowAfter > 0 && (w.reply.Err != nil || w.took != slowAfter || m.writeSlowed != 0):
			t.Fatalf("fallback after %v: %v after %v; want OK at the fallback", slowAfter, w.reply.Err, w.took)
		case slowAfter == 0 && (w.reply.Err != nil || w.took != 500*time.Millisecond):
			// Without the timer the write waits out the request timeout, and only then
			// counts the read-optimized replica (coord.Write.OnTimeout).
			t.Fatalf("no fallback timer: %v after %v; want OK at the %v request timeout", w.reply.Err, w.took, 500*time.Millisecond)
		}
		s.advance(time.Second) // the deadline: n3 gets its hint, the write is done
		if !w.op.Done() || m.fellBack != 1 || (m.writeSlowed == 1) != (slowAfter > 0) || s.hintsFor("n3") != 1 {
			t.Fatalf("fallback after %v: done %v, fell back %d (slowed %d), hints for n3 %d", slowAfter, w.op.Done(),
				m.fellBack, m.writeSlowed, s.hintsFor("n3"))
		}
	}
}

// A key read right after this coordinator wrote it: load-aware reads ask the replicas
// that acknowledged the write, not the read-optimized one whose copy may still be on its
// way (here it takes 300 ms to answer anything). Engine-aware reads wait for it.
func TestLoadAwareReadOfAFreshWriteSkipsTheLaggingReplica(t *testing.T) {
	for _, policy := range []coord.Policy{coord.LoadAware{}, coord.EngineAware{}} {
		s := hetero(t, Config{Policy: policy})
		s.reps["n2"].readDelay, s.reps["n2"].writeDelay = 300*time.Millisecond, 300*time.Millisecond
		s.writeSync("k", coord.Quorum)
		rd := s.readSync("k", coord.Quorum)
		if rd.reply.Err != nil || !rd.reply.Found {
			t.Fatalf("%s: read %+v", policy.Name(), rd.reply)
		}
		if fast := rd.took == 0; fast != (policy.Name() == "load-aware") {
			t.Fatalf("%s: read of a fresh write took %v", policy.Name(), rd.took)
		}
	}
}

// A replica this coordinator holds a hint for is asked last by load-aware reads of any
// key, one it never wrote included, until the hint is replayed: n2 answers 300 ms late,
// and reads wait for it only once its hint is gone.
func TestLoadAwareReadsSkipAReplicaWithHintsPending(t *testing.T) {
	held := true
	s := hetero(t, Config{Policy: coord.LoadAware{}, HintsHeld: func(id ring.NodeID) bool { return held && id == "n2" }})
	s.reps["n2"].readDelay = 300 * time.Millisecond
	if rd := s.readSync("never written", coord.Quorum); rd.reply.Found || rd.took != 0 {
		t.Fatalf("with a hint held for n2 the read found %v after %v; it waited for n2", rd.reply.Found, rd.took)
	}
	held = false // replayed
	if rd := s.readSync("never written", coord.Quorum); rd.took != 300*time.Millisecond {
		t.Fatalf("with no hint held the read took %v; it did not ask n2, the read-optimized replica", rd.took)
	}
}

// Only reads are timed: a replica whose writes answer late (a read-optimized replica's
// asynchronous writes queue behind its commits) is not read around for that, since its
// reads do not wait for its writes.
func TestLoadAwareTimesReadsNotWrites(t *testing.T) {
	s := hetero(t, Config{Policy: coord.LoadAware{}})
	s.reps["n2"].writeDelay, s.reps["n2"].readDelay = 300*time.Millisecond, 5*time.Millisecond
	for i := range 5 {
		s.writeSync(fmt.Sprint(i), coord.Quorum)
	}
	s.advance(400 * time.Millisecond) // n2's answers are in
	if l := s.n.load.Latency("n2", s.now); l != 0 {
		t.Fatalf("n2's writes gave it a read latency of %v", l)
	}
	s.readSync("never written", coord.Quorum)
	if l := s.n.load.Latency("n2", s.now); l != 5*time.Millisecond {
		t.Fatalf("n2's read latency after a read: %v; want its read's, 5ms", l)
	}
}

// A replica answering 500 ms late, measured on a read, is asked last by load-aware reads
// while its latency is known, and measured again once the sample is stale: of reads a
// tenth of a second apart, one in every LatencyStale waits for it. The slow replica is a
// peer (n2) or the coordinator's own (n1, a B+tree waiting on its disk), which is timed
// as a peer is.
func TestLoadAwareReadsAvoidASlowReplica(t *testing.T) {
	for _, slow := range []ring.NodeID{"n2", "n1"} {
		roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
		if slow == "n1" {
			roles[0], roles[1] = roles[1], roles[0]
		}
		s := newSim(t, Config{Policy: coord.LoadAware{}}, roles[0], roles[1], roles[2])
		for i := range 20 {
			s.writeSync(fmt.Sprint(i), coord.Quorum)
		}
		s.advance(2*route.RecentWriteWindow + 100*time.Millisecond) // the writes no longer recent
		for _, r := range s.reps {
			r.readDelay = time.Millisecond
		}
		s.reps[slow].readDelay = 500 * time.Millisecond
		var waited []int
		for i := range 20 {
			if rd := s.readSync(fmt.Sprint(i), coord.Quorum); rd.took > 250*time.Millisecond {
				waited = append(waited, i)
			}
			s.advance(100 * time.Millisecond)
		}
		// Read 0 measures it; the sample, taken 0.5 s in, goes stale a second later,
		// when read 10 measures it again.
		if fmt.Sprint(waited) != "[0 10]" {
			t.Fatalf("slow %s: the reads that waited for it: %v, want [0 10]", slow, waited)
		}
	}
}

// An engine-aware read whose read-optimized replica answers 400 ms late: with a read
// fallback of 20 ms the write-optimized replica is asked in its place and the read
// returns then, counted as a replica_slow fallback; without one it waits.
func TestReadFallbackAsksAnotherReplicaWhenOneIsLate(t *testing.T) {
	const late = 400 * time.Millisecond
	for _, fallback := range []time.Duration{20 * time.Millisecond, 0} {
		m := &counts{}
		s := hetero(t, Config{Policy: coord.EngineAware{}, ReadSlowAfter: fallback, Metrics: m})
		s.writeSync("k", coord.Quorum)
		s.reps["n2"].readDelay = late
		rd := s.readSync("k", coord.Quorum)
		if rd.reply.Err != nil || !rd.reply.Found {
			t.Fatalf("fallback %v: read %+v", fallback, rd.reply)
		}
		if fallback > 0 && (rd.took != fallback || m.slowed != 1) {
			t.Fatalf("with a %v fallback the read took %v, %d replica_slow fallbacks", fallback, rd.took, m.slowed)
		}
		if fallback == 0 && (rd.took != late || m.slowed != 0) {
			t.Fatalf("without a fallback the read took %v, %d replica_slow fallbacks", rd.took, m.slowed)
		}
	}
}

// A local read runs beside the fallback's timer unless the local replica is in memory.
func TestLocalReadsRunInlineOnlyWhenNoTimerNeedsThem(t *testing.T) {
	for _, tc := range []struct {
		role     ring.Role
		fallback time.Duration
		inline   bool
	}{
		{ring.ReadOptimized, 20 * time.Millisecond, false},
		{ring.ReadOptimized, 0, true},
		{ring.InMemory, 20 * time.Millisecond, true},
	} {
		s := newSim(t, Config{Policy: coord.EngineAware{}, ReadSlowAfter: tc.fallback}, tc.role, ring.WriteOptimized, ring.WriteOptimized)
		op := &ReadOp{}
		s.n.StartRead(op, s.now, []byte("k"), coord.Quorum)
		if op.LocalInline() != tc.inline {
			t.Errorf("%v with fallback %v: inline %v", tc.role, tc.fallback, op.LocalInline())
		}
	}
}

// With the retry budget spent, a late read asks no spare: it waits for the late replica
// and is counted as denied.
func TestReadFallbackStopsWhenTheRetryBudgetIsSpent(t *testing.T) {
	const late = 300 * time.Millisecond
	m := &counts{}
	s := hetero(t, Config{Policy: coord.EngineAware{}, ReadSlowAfter: 10 * time.Millisecond, Metrics: m})
	s.writeSync("k", coord.Quorum)
	s.reps["n2"].readDelay = late
	for s.n.retries.Spend() {
	}
	if rd := s.readSync("k", coord.Quorum); !rd.reply.Found || rd.took != late || m.denied != 1 {
		t.Fatalf("with the budget spent the read took %v (found %v), %d denied retries; want %v and 1", rd.took, rd.reply.Found, m.denied, late)
	}
}

// With the retry budget spent, load-aware routing still retries a late read on a spare
// that has answered quickly of late (a saturated B+tree's read moves to an idle lsm
// node), and only then: a spare with no recent answer, or a slow one, is not asked.
func TestReadFallbackPastTheBudgetAsksOnlyQuickSpares(t *testing.T) {
	const late, fallback = 300 * time.Millisecond, 20 * time.Millisecond
	for _, tc := range []struct {
		name  string
		spare time.Duration // the spare's recent response time; 0: none known
		quick bool
	}{
		{"quick spare", time.Millisecond, true},
		{"slow spare", 15 * time.Millisecond, false},
		{"spare not heard from", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// n1 (the coordinator) is write-optimized, n2 read-optimized and late, n3
			// in-memory: load-aware reads ask n2 and n3, with n1 to spare.
			m := &counts{}
			s := hetero(t, Config{Policy: coord.LoadAware{}, ReadSlowAfter: fallback, Metrics: m})
			s.writeSync("k", coord.Quorum)
			s.advance(2*route.RecentWriteWindow + time.Millisecond) // "k" no longer written recently
			s.reps["n2"].readDelay = late
			if tc.spare > 0 {
				s.n.ReadAnswered("n1", tc.spare, s.now)
			}
			for s.n.retries.Spend() {
			}
			rd := s.readSync("k", coord.Quorum)
			if tc.quick && (rd.took != fallback || m.quick != 1 || m.denied != 0) {
				t.Fatalf("a quick spare: the read took %v, %d quick retries, %d denied; want %v, 1 and 0", rd.took, m.quick, m.denied, fallback)
			}
			if !tc.quick && (rd.took != late || m.quick != 0 || m.denied != 1) {
				t.Fatalf("no quick spare: the read took %v, %d quick retries, %d denied; want %v, 0 and 1", rd.took, m.quick, m.denied, late)
			}
		})
	}
}

// A read-optimized replica 150 ms late, under a fixed fallback of 400 ms: the read waits
// for it. With the threshold at the 90th percentile of recent reads (all quick, 1 ms),
// the read asks the write-optimized replica within a couple of milliseconds instead.
func TestReadFallbackAtAPercentileAsksASpareLongBeforeTheFixedThreshold(t *testing.T) {
	const late, fixed, quick = 150 * time.Millisecond, 400 * time.Millisecond, time.Millisecond
	for _, percentile := range []float64{0, 90} {
		s := hetero(t, Config{Policy: coord.EngineAware{}, ReadSlowAfter: fixed, ReadSlowPercentile: percentile})
		s.writeSync("k", coord.Quorum)
		for _, r := range s.reps {
			r.readDelay = quick
		}
		for range 200 { // quick reads over several windows of the percentile
			s.readSync("k", coord.Quorum)
			s.advance(50 * time.Millisecond)
		}
		s.reps["n2"].readDelay = late
		rd := s.readSync("k", coord.Quorum)
		if !rd.reply.Found {
			t.Fatal("the read found nothing")
		}
		t.Logf("percentile %g: the read took %v with the read-optimized replica %v late", percentile, rd.took, late)
		if percentile == 0 && rd.took != late {
			t.Fatalf("with a fixed %v fallback the read took %v: it did not wait for the %v late replica", fixed, rd.took, late)
		}
		if percentile > 0 && rd.took > 3*quick {
			t.Fatalf("at the %gth percentile of %v reads the read took %v", percentile, quick, rd.took)
		}
	}
}

// A write slower than the threshold is described with when each replica answered: here
// the slow one (n2, 300 ms), the quick local one (n1) and the one that is down (n3).
// Past the first, at most one a second, and the next one counts those skipped.
func TestSlowWritesAreDescribedWithEachReplicasAnswer(t *testing.T) {
	s := newSim(t, Config{SlowWriteAfter: 150 * time.Millisecond}, ring.RoleUnknown, ring.RoleUnknown, ring.RoleUnknown)
	s.setUp("n3", false)
	s.reps["n1"].writeDelay, s.reps["n2"].writeDelay = time.Millisecond, 300*time.Millisecond
	w := s.writeSync("a", coord.Quorum)
	want := &SlowWrite{Took: 300 * time.Millisecond, Replicas: "replica n1: 1ms, replica n2: 300ms, replica n3: down"}
	if w.slow == nil || *w.slow != *want {
		t.Fatalf("slow write %+v, want %+v", w.slow, want)
	}
	if w := s.writeSync("b", coord.Quorum); w.slow != nil {
		t.Fatalf("a slow write within the second was described: %+v", w.slow)
	}
	if w := s.writeSync("c", coord.Quorum); w.slow != nil {
		t.Fatalf("a slow write within the second was described: %+v", w.slow)
	}
	s.advance(time.Second)
	if w := s.writeSync("d", coord.Quorum); w.slow == nil || w.slow.NotLogged != 2 {
		t.Fatalf("after the second: %+v, want two not logged", w.slow)
	}
	s.advance(time.Second)
	s.reps["n2"].writeDelay = time.Millisecond
	if w := s.writeSync("e", coord.Quorum); w.slow != nil {
		t.Fatalf("a quick write was described: %+v", w.slow)
	}
	if errors.Is(w.reply.Err, coord.ErrTimeout) {
		t.Fatal("unreachable")
	}
}

// A read whose replicas answer after the deadline gets ErrTimeout at the deadline; so
// does a write at ALL with one replica that never answers in time, which then gets a
// hint; a write with too few live replicas is unavailable at once and sends nothing.
func TestRequestsTimeOutAtTheirDeadline(t *testing.T) {
	m := &counts{}
	s := newSim(t, Config{Timeout: time.Second, Metrics: m}, ring.RoleUnknown, ring.RoleUnknown, ring.RoleUnknown)
	for _, r := range s.reps {
		r.readDelay = 2 * time.Second
	}
	if rd := s.readSync("k", coord.Quorum); !errors.Is(rd.reply.Err, coord.ErrTimeout) || rd.took != time.Second {
		t.Fatalf("read: %v after %v, want a timeout after 1s", rd.reply.Err, rd.took)
	}
	s.reps["n3"].writeDelay = time.Hour
	w := s.writeSync("k", coord.All)
	if !errors.Is(w.reply.Err, coord.ErrTimeout) || w.took != time.Second || !w.op.Done() || s.hintsFor("n3") != 1 {
		t.Fatalf("write at ALL: %v after %v, done %v, hints for n3 %d", w.reply.Err, w.took, w.op.Done(), s.hintsFor("n3"))
	}
	s.setUp("n2", false)
	s.setUp("n3", false)
	sent := m.sent
	if w := s.writeSync("u", coord.Quorum); !errors.Is(w.reply.Err, coord.ErrUnavailable) || w.took != 0 || m.sent != sent {
		t.Fatalf("write with one live replica: %v after %v, %d sent", w.reply.Err, w.took, m.sent-sent)
	}
}
