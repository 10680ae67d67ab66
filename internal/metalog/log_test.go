package metalog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

func TestNonVotersRegisterThroughTheLeaderAndLearnByPulling(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	st := c.bootstrap("n1", "n1")
	if st.Epoch != 1 || !hasMember(st, "n1", meta.Normal) {
		t.Fatalf("bootstrap gave %+v", st)
	}
	waitFor(t, "n1 recorded as the only voter", func() bool { return slices.Equal(c.node("n1").log.Voters(), ids("n1")) })

	// n2 and n3 are outside Raft's configuration: their proposals go to the leader, and
	// the answer is their state at once.
	if st := c.register("n2", "n2"); !hasMember(st, "n2", meta.Joining) {
		t.Fatalf("n2's registration gave %+v", st.Members)
	}
	if st := c.node("n2").log.State(); !hasMember(st, "n2", meta.Joining) {
		t.Fatalf("n2 does not see its own registration: %+v", st.Members)
	}
	c.register("n3", "n3")
	// Each learns the other's registration by pulling.
	for _, id := range ids("n1", "n2", "n3") {
		waitFor(t, string(id)+" sees both registrations", func() bool {
			st := c.node(id).log.State()
			return hasMember(st, "n2", meta.Joining) && hasMember(st, "n3", meta.Joining) && st.Epoch == 1
		})
	}
	// Joining members do not vote, and a node outside the configuration never campaigns.
	time.Sleep(5 * testConfig().ElectionTimeout)
	if cfg := c.configuration(); !slices.Equal(cfg, ids("n1")) {
		t.Fatalf("Raft's voters are %v, want n1 alone", cfg)
	}
	for _, id := range ids("n2", "n3") {
		s := c.node(id).log.Status()
		if s.Voter || s.RaftState != "Follower" || len(s.Configuration) != 0 || s.Quorum {
			t.Fatalf("%s, a non-voter: %+v", id, s)
		}
		if s.Leader != "n1" || s.LastPull.IsZero() {
			t.Fatalf("%s does not know the leader from its pulls: %+v", id, s)
		}
	}
	if s := c.node("n1").log.Status(); !s.Voter || !s.Quorum || s.Leader != "n1" || s.AppliedIndex == 0 {
		t.Fatalf("n1, the leader: %+v", s)
	}
}

// A node outside the configuration whose state's voters are all down still serves its
// state, and its proposals say why they cannot go through.
func TestProposalFromANodeThatKnowsNoVoterIsUnavailable(t *testing.T) {
	c := newCluster(t, "n1")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.node("n1").log.Propose(ctx, register("n1", c.addrOf("n1")))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "metadata unavailable: 0 of 0 voters reachable") {
		t.Fatalf("a proposal with no log anywhere: %v", err)
	}
}

func TestVotersGrowToTheChosenSetOneStepAtATime(t *testing.T) {
	all := ids("n1", "n2", "n3", "n4", "n5")
	c := newCluster(t, all...)
	c.bootstrap("n1", all...)
	waitFor(t, "five voters, recorded everywhere", func() bool {
		if !slices.Equal(c.configuration(), all) {
			return false
		}
		for _, id := range all {
			if !slices.Equal(c.node(id).log.Voters(), all) {
				return false
			}
		}
		return true
	})
	st := c.node("n1").log.State()
	if want := meta.ChooseVoters(st); !slices.Equal(want, all) {
		t.Fatalf("the test expects all five chosen, ChooseVoters says %v", want)
	}
	// The log holds a SetVoters after each step, and n1, the leader throughout, published
	// each state.
	want := [][]ring.NodeID{ids("n1"), ids("n1", "n2"), ids("n1", "n2", "n3"), ids("n1", "n2", "n3", "n4"), all}
	if got := c.leader().setVotersInLog(t); !equalHistories(got, want) {
		t.Fatalf("SetVoters entries %v, want %v", got, want)
	}
	if got := c.node("n1").voterHistory(); !equalHistories(got, append([][]ring.NodeID{nil}, want...)) {
		t.Fatalf("n1's OnState saw the voters %v, want %v", got, want)
	}
	// Every voter takes part: the log commits with any two of them down.
	c.node("n4").stop()
	c.node("n5").stop()
	c.register("n2", "n6")
}

func equalHistories(a, b [][]ring.NodeID) bool {
	return slices.EqualFunc(a, b, func(x, y []ring.NodeID) bool { return slices.Equal(x, y) })
}

// The voters the state calls for leave out the node that bootstrapped the log, its first
// leader: it adds the chosen voters, hands leadership over, and is removed by the new
// leader; then it is a non-voter like any other.
func TestLeaderLeavingTheVotersHandsLeadershipOver(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3", "n4")
	c.bootstrap("n4", "n1", "n2", "n3", "n4") // four members: three voters, the lowest IDs
	chosen := ids("n1", "n2", "n3")
	waitFor(t, "the voters n1 n2 n3", func() bool {
		return slices.Equal(c.configuration(), chosen) && slices.Equal(c.node("n4").log.Voters(), chosen)
	})
	if l := c.leader(); l == nil || l.id == "n4" {
		t.Fatalf("leader %v", l)
	}
	// While the configuration is no larger than the chosen set, additions come first; the
	// leader leaves last, once the three it hands over to are voters.
	want := [][]ring.NodeID{ids("n4"), ids("n1", "n4"), ids("n1", "n2", "n4"), ids("n1", "n2", "n3", "n4"), chosen}
	if got := c.leader().setVotersInLog(t); !equalHistories(got, want) {
		t.Fatalf("SetVoters entries %v, want %v", got, want)
	}
	s := c.node("n4").log.Status()
	if s.Voter || s.RaftState == "Leader" {
		t.Fatalf("n4 after leaving the voters: %+v", s)
	}
	// n4 proposes through the new leader and keeps learning by pulling.
	c.register("n4", "n7")
	c.register("n1", "n8")
	waitFor(t, "n4 pulls n8's registration", func() bool { return hasMember(c.node("n4").log.State(), "n8", meta.Joining) })
}

func TestQuorumLossMakesProposalsUnavailableUntilTheVotersReturn(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3", "n4")
	c.bootstrap("n1", "n1", "n2", "n3")
	voters := ids("n1", "n2", "n3")
	waitFor(t, "three voters", func() bool { return slices.Equal(c.node("n3").log.Voters(), voters) })
	c.register("n4", "n4")
	before := c.node("n4").log.State()

	// Stop two voters at once: whichever leads, n1 is left alone. A proposal racing with
	// the stop could reach a leader that loses its quorum while committing it (ErrTimeout:
	// it may apply); once n1 sees no quorum, nothing can be appended.
	var wg sync.WaitGroup
	for _, id := range ids("n2", "n3") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.node(id).stop()
		}()
	}
	wg.Wait()
	waitFor(t, "n1 to see it has no quorum", func() bool { return !c.node("n1").log.Status().Quorum })
	for _, id := range ids("n1", "n4") {
		const budget = 1500 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		start := time.Now()
		_, err := c.node(id).log.Propose(ctx, register("x-"+id, "127.0.0.1:1"))
		cancel()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "metadata unavailable: 1 of 3 voters reachable") {
			t.Fatalf("a proposal through %s without a quorum: %v", id, err)
		}
		if took := time.Since(start); took > budget+time.Second {
			t.Fatalf("a proposal through %s took %v with a %v context", id, took, budget)
		}
	}
	// Every node, stopped or not, still answers with the state it last applied (a stopped
	// follower may not have applied the last entry yet: a follower learns an entry was
	// committed after the leader does).
	for _, id := range ids("n1", "n2", "n3", "n4") {
		if st := c.node(id).log.State(); st.Epoch != before.Epoch || !hasMember(st, "n3", meta.Normal) {
			t.Fatalf("%s's state without a quorum: %+v", id, st)
		}
	}
	for _, id := range ids("n1", "n4") {
		if st := c.node(id).log.State(); !hasMember(st, "n4", meta.Joining) {
			t.Fatalf("%s's state lost a committed entry: %+v", id, st.Members)
		}
	}
	if s := c.node("n1").log.Status(); s.Quorum {
		t.Fatalf("n1 alone says it sees a quorum: %+v", s)
	}

	// The voters come back, knowing at once from their disks the state they had.
	for _, id := range ids("n2", "n3") {
		had := c.node(id).log.Status()
		n := c.restart(id)
		if s := n.log.Status(); s.Epoch != had.Epoch || s.Index != had.Index {
			t.Fatalf("%s restarted at %d/%d, had %d/%d", id, s.Epoch, s.Index, had.Epoch, had.Index)
		}
	}
	c.register("n4", "n9")
	for _, id := range ids("n1", "n2", "n3", "n4") {
		waitFor(t, string(id)+" sees everything committed", func() bool {
			st := c.node(id).log.State()
			return hasMember(st, "n4", meta.Joining) && hasMember(st, "n9", meta.Joining)
		})
	}
	for _, id := range ids("x-n1", "x-n4") {
		if _, ok := c.node("n2").log.State().Member(id); ok {
			t.Fatalf("the proposal registering %s was unavailable, and yet applied", id)
		}
	}
}

func TestRestartedNodeKnowsItsStateFromDiskBeforeAnyNetwork(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.bootstrap("n1", "n1")
	c.register("n2", "n2")
	waitFor(t, "n1 recorded as voter", func() bool { return slices.Equal(c.node("n1").log.Voters(), ids("n1")) })
	waitFor(t, "n2 pulls the voter record", func() bool { return slices.Equal(c.node("n2").log.Voters(), ids("n1")) })
	want := map[ring.NodeID]Status{}
	for _, id := range ids("n1", "n2") {
		want[id] = c.node(id).log.Status()
		c.node(id).stop()
	}

	// Each alone, with no peer to ask: the state is there on Open.
	for _, id := range ids("n2", "n1") {
		n := c.restart(id)
		st, s := n.log.State(), n.log.Status()
		if st.Epoch != 1 || !hasMember(st, "n1", meta.Normal) || !hasMember(st, "n2", meta.Joining) ||
			s.Epoch != want[id].Epoch || s.Index != want[id].Index || !slices.Equal(st.Voters, ids("n1")) {
			t.Fatalf("%s after restart: %+v, status %+v (was %+v)", id, st, s, want[id])
		}
		n.stop()
	}

	// The voter, restarted alone, elects itself again and replays its log, whose older
	// states are never published over the newer one it loaded.
	n1 := c.restart("n1")
	c.register("n1", "n5")
	n1.mu.Lock()
	defer n1.mu.Unlock()
	for _, st := range n1.states {
		if !hasMember(st, "n2", meta.Joining) {
			t.Fatalf("after a restart OnState got a state older than the saved one: %+v", st.Members)
		}
	}
}

func TestRefusedEntriesReachTheProposerWhereverItIs(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.bootstrap("n1", "n1")
	c.register("n2", "n2")
	stale := meta.StartChange{ID: 1, Epoch: 99, Joins: []meta.Join{{ID: "n2", Tokens: []ring.Token{5}}}, Level: coord.One}
	var msgs []string
	for _, id := range ids("n1", "n2") {
		ctx, cancel := context.WithTimeout(context.Background(), eventually)
		_, err := c.node(id).log.Propose(ctx, stale)
		cancel()
		if !errors.Is(err, meta.ErrStaleEpoch) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("a stale StartChange through %s: %v", id, err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("the leader says %q, the forwarded refusal %q", msgs[0], msgs[1])
	}
	if st := c.node("n1").log.State(); st.Epoch != 1 || st.Change != nil {
		t.Fatalf("a refused entry changed the state: %+v", st)
	}
	// Bootstrapping a cluster this node already knows is refused before Raft sees it.
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	b := meta.Bootstrap{Strategy: "simple", RF: 1, Members: []meta.Member{member("n2", 0)}}
	if _, err := c.node("n2").log.Bootstrap(ctx, b); !errors.Is(err, meta.ErrBootstrapped) {
		t.Fatalf("a second bootstrap: %v", err)
	}
}
