package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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

// delayedCaller answers through next after a delay.
type delayedCaller struct {
	next  caller
	delay time.Duration
}

func (d delayedCaller) Call(ctx context.Context, m uint16, p []byte) ([]byte, error) {
	time.Sleep(d.delay)
	return d.next.Call(ctx, m, p)
}

func (d delayedCaller) Go(ctx context.Context, m uint16, p []byte, done func([]byte, error)) {
	p = append([]byte(nil), p...)
	go func() { done(d.Call(ctx, m, p)) }()
}

// An engine-aware read whose read-optimized replica answers 400 ms late, with a read
// fallback of 20 ms: the driver's timer fires beside the late read, the write-optimized
// replica is asked in its place and the read returns long before the late answer. Both
// when the late replica is remote and when it is the coordinator's own, whose read then
// runs beside the timer, not in its way. (What the machine decides is tested in virtual
// time in package machine; this is its driver.)
func TestReadFallbackAsksAnotherReplicaWhenOneIsLate(t *testing.T) {
	const late = 400 * time.Millisecond
	for _, local := range []bool{false, true} {
		// n2 is read-optimized and late; or, with local, n1 (the coordinator) is.
		wrapped := ring.NodeID("n2")
		if local {
			wrapped = ""
		}
		c := heteroTestCluster(t, coord.EngineAware{}, wrapped, func(p caller) caller { return delayedCaller{p, late} })
		if local {
			c.roles = map[ring.NodeID]ring.Role{"n1": ring.ReadOptimized, "n2": ring.WriteOptimized, "n3": ring.InMemory}
		}
		c.cfg.ReadSlowAfter = 20 * time.Millisecond
		c.configure()
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
			t.Fatalf("local=%t: read %v %v %v", local, r, found, err)
		}
		t.Logf("local=%t: the read took %v with a replica %v late", local, took.Round(time.Millisecond), late)
		if took >= late/2 {
			t.Fatalf("local=%t: with a 20ms fallback the read took %v (the late replica answers after %v)", local, took, late)
		}
	}
}
