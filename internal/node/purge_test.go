package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/ring"
)

// A replica that was down during a delete, whose hint was lost, comes back after the
// grace period. Under --tombstone-purge grace (Cassandra's rule) the other replicas'
// reads drop the tombstone and a read at ALL brings the deleted value back; under
// repaired, the default, they keep it until a repair of the range with all its replicas
// has run since the delete, and the key stays deleted. After that repair every replica
// holds the tombstone and may purge it.
func TestADeleteMissedByADownReplicaStaysDeletedPastTheGracePeriod(t *testing.T) {
	defer func(m int64) { repairHorizonMargin = m }(repairHorizonMargin)
	repairHorizonMargin = 0
	for _, mode := range []string{"grace", "repaired"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			nodeConfig := func(host, seed string) (c config.Config) {
				c = clusterConfig(t, host, seed)
				c.Engine, c.TombstoneGrace, c.TombstonePurge = "lsm", time.Second, mode
				return c
			}
			n1, n2, n3, cfg3 := startTrio(t, nodeConfig)
			defer n1.Shutdown(ctx)
			defer n2.Shutdown(ctx)
			c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
			defer c1.Close()
			key := []byte("doomed")
			ekey := ring.EngineKey(key)
			if err := c1.Set(ctx, string(key), "alive", 0).Err(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "n3 holds the value", func() bool {
				_, found, _ := n3.cluster.handler.Engine.Get(ekey)
				return found
			})
			id3 := takeDown(t, n1, n3)
			if err := c1.Del(ctx, string(key)).Err(); err != nil {
				t.Fatal(err)
			}
			deleted, _, _ := n1.cluster.handler.Engine.Get(ekey)
			dropHints(t, n1, id3)
			time.Sleep(1500 * time.Millisecond) // past the grace period
			var err error
			if n3, err = Start(cfg3, quiet()); err != nil {
				t.Fatal(err)
			}
			defer n3.Shutdown(ctx)
			eventually(t, "n3 is up again", func() bool { return n1.cluster.member(id3).Up })
			all := c1.Conn()
			defer all.Close()
			if err := all.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			// A timeout says nothing of the value (n3 has just come back, and the machine may
			// be loaded): read again; only an answer counts.
			var v string
			for try := 0; ; try++ {
				v, err = all.Get(ctx, string(key)).Result()
				if err == nil || err == redis.Nil || try == 10 ||
					!strings.HasPrefix(err.Error(), "TIMEOUT") && !strings.HasPrefix(err.Error(), "UNAVAILABLE") {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if mode == "grace" {
				if err != nil || v != "alive" {
					t.Fatalf("under the grace rule a read at ALL gave %q, %v: the scenario did not bring the value back", v, err)
				}
				return
			}
			if err != redis.Nil {
				t.Fatalf("a read at ALL of the deleted key: %q, %v", v, err)
			}
			r, found, _ := n1.cluster.handler.Engine.Get(ekey)
			if !found || r.Deleted == 0 {
				t.Fatalf("n1 no longer holds the tombstone: %+v %v", r, found)
			}
			if code, body := postRepair(t, n1, admin.RepairRequest{}); code != 200 {
				t.Fatalf("POST /repair: %d %s", code, body)
			}
			if pr := repairDone(t, n1); pr.Failed != 0 {
				t.Fatalf("repair: %+v", pr)
			}
			for _, n := range []*Node{n1, n2, n3} {
				eventually(t, n.ID()+" records the range repaired past the delete", func() bool {
					return n.purge.horizon(ekey) > deleted.Deleted
				})
			}
			// Past both the grace period and the repair, the tombstone may go: reads hide
			// it, and the key stays deleted.
			if _, found, _ := n1.cluster.handler.Engine.Get(ekey); found {
				t.Fatal("n1 still reads the tombstone past its range's repair")
			}
			if v, err := all.Get(ctx, string(key)).Result(); err != redis.Nil {
				t.Fatalf("a read at ALL after the repair: %q, %v", v, err)
			}
			// The history survives a restart.
			h, err := openPurgeHistory(n2.dir.Path())
			if err != nil || h.horizon(ekey) <= deleted.Deleted {
				t.Fatalf("n2's repair history on disk: %v, horizon %d", err, h.horizon(ekey))
			}
		})
	}
}

// The history's step function: a token's horizon is the latest repair of a range that
// holds it, a range's last repair the oldest horizon of its tokens (0 while any token
// was never repaired), and both survive reopening.
func TestPurgeHistoryHorizonsAndLastRepairs(t *testing.T) {
	dir := t.TempDir()
	h, err := openPurgeHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := func(tok ring.Token) []byte { return append(ring.AppendTokenPrefix(nil, tok), 'k') }
	if h.horizon(key(5)) != 0 || h.last(0, 10) != 0 {
		t.Fatal("an empty history has horizons")
	}
	for _, a := range []repairedArc{{0, 100, 10}, {50, 200, 20}, {150, -100, 30}} { // the last one wraps
		if err := h.record(ring.Token(a.Start), ring.Token(a.End), a.At); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.record(0, 100, 5); err != nil { // older than what is recorded: ignored
		t.Fatal(err)
	}
	for _, hh := range []*purgeHistory{h, must(openPurgeHistory(dir))} {
		for _, c := range []struct {
			tok  ring.Token
			want int64
		}{{0, 0}, {1, 10}, {50, 10}, {51, 20}, {150, 20}, {151, 30}, {ring.MaxToken, 30}, {ring.MinToken + 1, 30}, {-100, 30}, {-99, 0}} {
			if got := hh.horizon(key(c.tok)); got != c.want {
				t.Errorf("horizon of token %d: %d, want %d", c.tok, got, c.want)
			}
		}
		for _, c := range []struct {
			start, end ring.Token
			want       int64
		}{{0, 100, 10}, {60, 140, 20}, {160, 1000, 30}, {0, 250, 10}, {-150, -120, 30}, {-120, -50, 0}, {1000, 0, 0}} {
			if got := hh.last(c.start, c.end); got != c.want {
				t.Errorf("last repair of (%d, %d]: %d, want %d", c.start, c.end, got, c.want)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A repair's passes (repairPasses) end when the ring after a pass has the ranges, first
// replicas and members of the one its tasks came from: a rebuilt but equal ring is the
// same, a moved token or a new member is not.
func TestSameRingComparesRangesAndMembers(t *testing.T) {
	build := func(nodes ...ring.Node) *ring.Ring {
		r, err := ring.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := build(ring.Node{ID: "n1", Host: "h1", Tokens: []ring.Token{-100, 50}}, ring.Node{ID: "n2", Host: "h2", Tokens: []ring.Token{0}})
	same := build(ring.Node{ID: "n1", Host: "h1", Tokens: []ring.Token{-100, 50}}, ring.Node{ID: "n2", Host: "h2", Tokens: []ring.Token{0}})
	moved := build(ring.Node{ID: "n1", Host: "h1", Tokens: []ring.Token{-100, 60}}, ring.Node{ID: "n2", Host: "h2", Tokens: []ring.Token{0}})
	joined := build(ring.Node{ID: "n1", Host: "h1", Tokens: []ring.Token{-100, 50}}, ring.Node{ID: "n2", Host: "h2", Tokens: []ring.Token{0}},
		ring.Node{ID: "n3", Host: "h3", Tokens: []ring.Token{200}})
	rehosted := build(ring.Node{ID: "n1", Host: "h1", Tokens: []ring.Token{-100, 50}}, ring.Node{ID: "n2", Host: "h1", Tokens: []ring.Token{0}})
	if !sameRing(a, same) || !sameRing(a, a) || !sameRing(nil, nil) {
		t.Error("equal rings differ")
	}
	for name, b := range map[string]*ring.Ring{"a moved token": moved, "a new member": joined, "a member on another host": rehosted, "no ring": nil} {
		if sameRing(a, b) {
			t.Errorf("%s: the rings compare the same", name)
		}
	}
}
