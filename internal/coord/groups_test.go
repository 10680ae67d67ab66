package coord

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// groupRun is one write to replica groups driven by a random schedule of answers,
// failures, OnSlow and the deadline, with what it did.
type groupRun struct {
	log     strings.Builder // every input and the effects it returned, for comparison
	sent    map[ring.NodeID]int
	hinted  map[ring.NodeID]int
	acked   map[ring.NodeID]bool
	failed  map[ring.NodeID]bool
	replies []Reply
	early   bool // the reply came before the deadline
}

// runGroups drives a write of level to groups under p, its schedule drawn from rng.
func runGroups(groups [][]Replica, level Level, p Policy, rng *rand.Rand) *groupRun {
	out := &groupRun{sent: map[ring.NodeID]int{}, hinted: map[ring.NodeID]int{}, acked: map[ring.NodeID]bool{}, failed: map[ring.NodeID]bool{}}
	var pending []ring.NodeID
	take := func(what string, fx []Effect) {
		fmt.Fprintf(&out.log, "%s:", what)
		for _, e := range fx {
			switch e := e.(type) {
			case SendWrite:
				out.sent[e.To]++
				pending = append(pending, e.To)
				fmt.Fprintf(&out.log, " send %s async=%t;", e.To, e.Async)
			case StoreHint:
				out.hinted[e.For]++
				fmt.Fprintf(&out.log, " hint %s deferred=%t;", e.For, e.Deferred)
			case Reply:
				out.replies = append(out.replies, e)
				// The class of error: an unavailable write's message names its group.
				fmt.Fprintf(&out.log, " reply unavailable=%t timeout=%t;", errors.Is(e.Err, ErrUnavailable), errors.Is(e.Err, ErrTimeout))
			}
		}
		out.log.WriteString("\n")
	}
	w, fx := StartWriteGroups(row.Mutation{Key: []byte("k")}, level, groups, p)
	take("start", fx)
	for len(pending) > 0 && rng.IntN(30) > 0 {
		if rng.IntN(10) == 0 {
			take("slow", w.OnSlow())
			continue
		}
		i := rng.IntN(len(pending))
		id := pending[i]
		pending = slices.Delete(pending, i, i+1)
		var err error
		if rng.IntN(5) == 0 {
			err, out.failed[id] = fmt.Errorf("boom"), true
		} else {
			out.acked[id] = true
		}
		take(fmt.Sprintf("answer %s err=%v", id, err), w.OnResponse(id, err))
	}
	out.early = len(out.replies) > 0
	take("timeout", w.OnTimeout())
	if !w.Done() {
		out.log.WriteString("not done after the deadline\n")
	}
	return out
}

// A write to replica groups, whatever the groups, roles, liveness, policy, level and
// order of answers: replies exactly once; succeeds only when every group has its level's
// worth of acknowledgements among its own replicas; before the deadline fails only when
// some group has too few live replicas left that have not failed; sends each replica the
// write at most once and hints each at most once; and, with every group the same, does
// exactly what a single-group write does. Randomized; KURA_SEED repeats a run.
func TestWriteGroupsCountEachGroupAtItsLevel(t *testing.T) {
	rng := seededRand(t)
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory, ring.RoleUnknown}
	policies := []Policy{Uniform{}, EngineAware{}, LoadAware{}}
	for trial := range 20000 {
		nodes := make([]Replica, 2+rng.IntN(5))
		for i := range nodes {
			nodes[i] = Replica{ID: ring.NodeID(fmt.Sprint("n", i)), Up: rng.IntN(6) > 0, Role: roles[rng.IntN(len(roles))],
				Backlogged: rng.IntN(4) == 0}
		}
		groups := make([][]Replica, 1+rng.IntN(3))
		for g := range groups {
			perm := rng.Perm(len(nodes))[:1+rng.IntN(min(len(nodes), 4))]
			for _, i := range perm {
				groups[g] = append(groups[g], nodes[i])
			}
		}
		level := []Level{One, Two, Quorum, All}[rng.IntN(4)]
		p := policies[rng.IntN(len(policies))]
		seed := rng.Uint64()
		run := runGroups(groups, level, p, rand.New(rand.NewPCG(seed, 0)))
		where := fmt.Sprintf("trial %d (%s at %s, groups %v)", trial, p.Name(), level, groups)
		if err := checkGroupRun(run, groups, level); err != nil {
			t.Fatalf("%s: %v\n%s", where, err, run.log.String())
		}
		// The same group twice is that group: the same effects for the same inputs.
		one := runGroups(groups[:1], level, p, rand.New(rand.NewPCG(seed, 0)))
		twice := runGroups([][]Replica{groups[0], groups[0]}, level, p, rand.New(rand.NewPCG(seed, 0)))
		if one.log.String() != twice.log.String() {
			t.Fatalf("%s: one group\n%s\nthe same group twice\n%s", where, one.log.String(), twice.log.String())
		}
	}
}

// checkGroupRun checks a run against what the groups and the level allow.
func checkGroupRun(run *groupRun, groups [][]Replica, level Level) error {
	if len(run.replies) != 1 {
		return fmt.Errorf("%d replies", len(run.replies))
	}
	for id, n := range run.sent {
		if n > 1 {
			return fmt.Errorf("%s sent the write %d times", id, n)
		}
	}
	for id, n := range run.hinted {
		if n > 1 {
			return fmt.Errorf("%s hinted %d times", id, n)
		}
	}
	err := run.replies[0].Err
	short := false // some group has fewer live replicas than it needs
	for _, g := range groups {
		short = short || live(g) < level.Required(len(g))
	}
	if short != errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("replied %v, with a group short of live replicas: %t", err, short)
	}
	for i, g := range groups {
		need := level.Required(len(g))
		acked, left := 0, 0
		for _, r := range g {
			if run.acked[r.ID] {
				acked++
			}
			if r.Up && !run.failed[r.ID] {
				left++
			}
		}
		if err == nil && acked < need {
			return fmt.Errorf("acknowledged with %d of group %d's replicas, %d needed", acked, i+1, need)
		}
		if err != nil && run.early && left < need {
			return nil // this group could no longer meet its need: failing was right
		}
	}
	if err != nil && run.early && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("failed early (%v) though every group still had enough replicas", err)
	}
	return nil
}

// A write to one group fits the 192-byte allocation a write had before groups: the later
// groups are allocated apart (Write's comment).
func TestASingleGroupWriteKeepsItsAllocationSize(t *testing.T) {
	if size := unsafe.Sizeof(Write{}); size > 192 {
		t.Fatalf("a Write is %d bytes, over 192", size)
	}
}
