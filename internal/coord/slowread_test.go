package coord

import (
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// A QUORUM read sees every write a quorum acknowledged, whatever the order of the
// replicas' answers, with one replica failing and the driver calling OnSlow at random
// points: OnSlow lets a read decide without the late replicas, never with fewer answers
// than the level needs. Every read replies exactly once. Randomized; KURA_SEED repeats a
// run.
func TestReadWithSlowRepliesSeesQuorumWrites(t *testing.T) {
	rng := seededRand(t)
	old, err := parseRow("c:v1@10")
	if err != nil {
		t.Fatal(err)
	}
	acked, err := parseRow("c:v2@20")
	if err != nil {
		t.Fatal(err)
	}
	ids := []ring.NodeID{"l1", "b1", "m1"}
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	for i := range 20000 {
		var replicas []Replica
		stored := map[ring.NodeID]row.Row{}
		missing := rng.IntN(4) // replica missing the acknowledged write; 3: none
		failing := ring.NodeID("")
		if rng.IntN(2) == 0 {
			failing = ids[rng.IntN(3)]
		}
		for j, id := range ids {
			replicas = append(replicas, Replica{ID: id, Up: true, Role: roles[j]})
			stored[id] = row.Merge(old, acked)
			if j == missing {
				stored[id] = old
			}
		}
		var p Policy = EngineAware{}
		if rng.IntN(2) == 0 {
			p = Uniform{}
		}
		rd, fx := StartRead([]byte("k"), Quorum, replicas, p, RepairBackground)
		var pending []SendRead
		replies := 0
		var reply Reply
		take := func(fx []Effect) {
			for _, e := range fx {
				switch e := e.(type) {
				case SendRead:
					pending = append(pending, e)
				case Reply:
					replies++
					reply = e
				}
			}
		}
		take(fx)
		for len(pending) > 0 {
			if rng.IntN(4) == 0 {
				take(rd.OnSlow())
				continue
			}
			k := rng.IntN(len(pending))
			sr := pending[k]
			pending = append(pending[:k], pending[k+1:]...)
			resp := ReadResponse{}
			r := stored[sr.To]
			switch {
			case sr.To == failing:
				resp.Err = errors.New("boom")
			case sr.Digest:
				resp.Digest = row.Digest(r, true)
			default:
				resp.Row, resp.Found = r.Clone(), true
			}
			take(rd.OnResponse(sr.To, resp))
		}
		if replies != 1 {
			t.Fatalf("read %d (policy %T, missing %d, failing %q): %d replies", i, p, missing, failing, replies)
		}
		if reply.Err != nil {
			t.Fatalf("read %d (policy %T, missing %d, failing %q): %v", i, p, missing, failing, reply.Err)
		}
		if got := row.Merge(reply.Row, acked); !reply.Found || row.Digest(got, true) != row.Digest(reply.Row, true) {
			t.Fatalf("read %d (policy %T, missing %d, failing %q): replied %v, lacking the acknowledged %v", i, p, missing, failing, reply.Row, acked)
		}
	}
}

// seededRand returns a generator seeded from KURA_SEED, or at random, and logs the seed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}
