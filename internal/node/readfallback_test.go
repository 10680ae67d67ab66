package node

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// slowLocal is a local replica whose reads take delay once it is set (a B+tree read
// waiting on its disk). It is installed before the first request, so that changing the
// delay races with no request in flight.
type slowLocal struct {
	localReplica
	delay atomic.Int64 // ns
}

func (s *slowLocal) Read(key []byte, digest bool) (wire.ReadResponse, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.localReplica.Read(key, digest)
}

// An engine-aware read whose read-optimized replica answers 400 ms late: with a read
// fallback of 20 ms the write-optimized replica is asked in its place and the read
// returns long before the late answer, counted as a replica_slow fallback; without one
// it waits. Both when the late replica is remote and when it is the coordinator's own
// (its read then runs beside the timer, not in its way).
func TestReadFallbackAsksAnotherReplicaWhenOneIsLate(t *testing.T) {
	const late = 400 * time.Millisecond
	for _, local := range []bool{false, true} {
		for _, fallback := range []time.Duration{20 * time.Millisecond, 0} {
			// n2 is read-optimized and late; or, with local, n1 (the coordinator) is.
			slowID, wrapped := ring.NodeID("n2"), ring.NodeID("n2")
			if local {
				slowID, wrapped = "n1", ""
			}
			c := heteroTestCluster(t, coord.EngineAware{}, wrapped, func(p caller) caller { return delayedCaller{p, late} })
			if local {
				c.setRoles(ring.ReadOptimized, ring.WriteOptimized, ring.InMemory)
			}
			c.store.metrics = newClusterMetrics(prometheus.NewRegistry(), nil, ring.WriteOptimized)
			c.store.readSlowAfter = fallback
			own := &slowLocal{localReplica: c.store.local}
			c.store.local = own
			if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * late) // every replica has it, the late one included
			if local {
				own.delay.Store(int64(late))
			}
			start := time.Now()
			r, found, err := c.store.Get([]byte("k"))
			took := time.Since(start)
			if err != nil || !found || string(r.Cells[0].Value) != "v" {
				t.Fatalf("local=%t fallback=%v: read %v %v %v", local, fallback, r, found, err)
			}
			var m dto.Metric
			if err := c.store.metrics.fallbacks.WithLabelValues("read", "replica_slow").Write(&m); err != nil {
				t.Fatal(err)
			}
			slowed := m.GetCounter().GetValue()
			t.Logf("local=%t fallback=%v: the read took %v with %s late; %v replicas asked in place of late ones",
				local, fallback, took.Round(time.Millisecond), slowID, slowed)
			if fallback > 0 && (took >= late/2 || slowed != 1) {
				t.Fatalf("local=%t: with a %v fallback the read took %v (the late replica answers after %v), %v replica_slow fallbacks",
					local, fallback, took, late, slowed)
			}
			if fallback == 0 && (took < late || slowed != 0) {
				t.Fatalf("local=%t: without a fallback the read took %v, %v replica_slow fallbacks: it did not wait for the late replica",
					local, took, slowed)
			}
		}
	}
}

// With the retry budget spent, a late read asks no spare: it waits for the late replica
// and is counted as denied.
func TestReadFallbackStopsWhenTheRetryBudgetIsSpent(t *testing.T) {
	const late = 300 * time.Millisecond
	c := heteroTestCluster(t, coord.EngineAware{}, "n2", func(p caller) caller { return delayedCaller{p, late} })
	c.store.metrics = newClusterMetrics(prometheus.NewRegistry(), nil, ring.WriteOptimized)
	c.store.readSlowAfter = 10 * time.Millisecond
	if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}}); err != nil {
		t.Fatal(err)
	}
	for c.store.retries.spend() {
	}
	start := time.Now()
	if _, found, err := c.store.Get([]byte("k")); err != nil || !found {
		t.Fatalf("read: %v %v", found, err)
	}
	took := time.Since(start)
	var m dto.Metric
	if err := c.store.metrics.overBudget.Write(&m); err != nil {
		t.Fatal(err)
	}
	if took < late || m.GetCounter().GetValue() != 1 {
		t.Fatalf("with the budget spent the read took %v (the late replica answers after %v), %v denied retries, want a wait and 1",
			took, late, m.GetCounter().GetValue())
	}
}

// With the retry budget spent, load-aware routing still retries a late read on a spare
// that has answered quickly of late (a saturated B+tree's read moves to an idle lsm
// node), and only then: a spare with no recent answer, or a slow one, is not asked.
func TestReadFallbackPastTheBudgetAsksOnlyQuickSpares(t *testing.T) {
	const late = 300 * time.Millisecond
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
			c := heteroTestCluster(t, coord.LoadAware{}, "n2", func(p caller) caller { return delayedCaller{p, late} })
			c.store.metrics = newClusterMetrics(prometheus.NewRegistry(), nil, ring.WriteOptimized)
			c.store.readSlowAfter = 20 * time.Millisecond
			if err := c.store.Apply([]row.Mutation{{Key: []byte("k"), Row: cell("v", 1)}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * late) // every replica has it, the late one included
			// A fresh tracker: no recent write of "k" and no slow sample of n2 from the
			// write, so that the read asks n2; the spare's latency is the case's.
			c.store.load = newLoadTracker(c.holds)
			if tc.spare > 0 {
				c.store.load.observe("n1", tc.spare, time.Now())
			}
			for c.store.retries.spend() {
			}
			start := time.Now()
			if _, found, err := c.store.Get([]byte("k")); err != nil || !found {
				t.Fatalf("read: %v %v", found, err)
			}
			took := time.Since(start)
			var quick, denied dto.Metric
			if err := c.store.metrics.quickSpares.Write(&quick); err != nil {
				t.Fatal(err)
			}
			if err := c.store.metrics.overBudget.Write(&denied); err != nil {
				t.Fatal(err)
			}
			q, d := quick.GetCounter().GetValue(), denied.GetCounter().GetValue()
			t.Logf("the read took %v; %v retries to quick spares, %v denied", took.Round(time.Millisecond), q, d)
			if tc.quick && (took >= late/2 || q != 1 || d != 0) {
				t.Fatalf("a quick spare: the read took %v (the late replica answers after %v), %v quick retries, %v denied; want no wait, 1 and 0",
					took, late, q, d)
			}
			if !tc.quick && (took < late || q != 0 || d != 1) {
				t.Fatalf("no quick spare: the read took %v (the late replica answers after %v), %v quick retries, %v denied; want a wait, 0 and 1",
					took, late, q, d)
			}
		})
	}
}
