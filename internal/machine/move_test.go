package machine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

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

// metaCluster plays membership changes through the cluster metadata's state machine, as
// a proposer would: strict transfers (each copy from the replica it replaces), nobody
// down.
type metaCluster struct {
	tb       testing.TB
	s        *meta.State
	strategy ring.Strategy
}

func bootstrapMeta(tb testing.TB, strategy string, rf int, members []meta.Member) *metaCluster {
	c := &metaCluster{tb: tb, s: &meta.State{}}
	c.apply(meta.Bootstrap{Strategy: strategy, RF: rf, Members: members})
	var err error
	if c.strategy, err = ring.StrategyByName(strategy); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c *metaCluster) apply(e meta.Entry) {
	c.tb.Helper()
	if err := c.s.Apply(e); err != nil {
		c.tb.Fatalf("%T: %v", e, err)
	}
}

// start registers the joiners and starts change id: they join with their tokens, leaves
// decommission.
func (c *metaCluster) start(id uint64, joins []meta.Member, leaves []ring.NodeID) {
	c.tb.Helper()
	sc := meta.StartChange{ID: id, Epoch: c.s.Epoch, Leaves: leaves, Level: coord.Quorum}
	for _, m := range joins {
		c.apply(meta.Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: m.Addr})
		sc.Joins = append(sc.Joins, meta.Join{ID: m.ID, Tokens: m.Tokens})
	}
	sc.Epoch = c.s.Epoch
	cur, err := c.s.CurrentRing()
	if err != nil {
		c.tb.Fatal(err)
	}
	target, err := c.s.Target(sc)
	if err != nil {
		c.tb.Fatal(err)
	}
	mv, err := move.Plan(move.Change{Current: cur, Target: target, Strategy: c.strategy, RF: c.s.RF, Sizes: move.Uniform(1 << 30), Strict: true})
	if err != nil {
		c.tb.Fatal(err)
	}
	sc.Transfers = mv.Transfers
	c.apply(sc)
}

func (c *metaCluster) placement() *meta.Placement {
	c.tb.Helper()
	p, err := meta.NewPlacement(c.s)
	if err != nil {
		c.tb.Fatal(err)
	}
	return p
}

// moveSim is one coordinator, n1, writing and reading through a membership change
// against a model of what each replica holds. Writes' keys are unique; a replica holds a
// write once it applied it (answered or not), or once a stream copied it there.
type moveSim struct {
	t      *testing.T
	rng    *rand.Rand
	c      *metaCluster
	n      *Node
	now    time.Time
	roles  map[ring.NodeID]ring.Role
	down   map[ring.NodeID]bool
	holds  map[ring.NodeID]map[int]bool
	taken  map[ring.Token]bool // tokens members own
	writes []moveWrite
	moving int // writes that went to two groups
}

type moveWrite struct {
	key   []byte
	level coord.Level
	acked bool
}

// view gives the node the members of the state with the failure detector's opinion
// (down) and the current ring, and the state's placement.
func (ms *moveSim) view() {
	var members []cluster.Member
	for _, m := range ms.c.s.Members {
		if m.State == meta.Left || m.State == meta.Removed {
			continue
		}
		members = append(members, cluster.Member{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Up: !ms.down[m.ID],
			Status: cluster.Normal, Tokens: m.Tokens})
	}
	r, err := ms.c.s.CurrentRing()
	if err != nil {
		ms.t.Fatal(err)
	}
	ms.n.SetView(members, r)
	if err := ms.n.SetPlacement(ms.c.s.Epoch, ms.c.placement()); err != nil {
		ms.t.Fatal(err)
	}
	if ms.n.Epoch() != ms.c.s.Epoch {
		ms.t.Fatalf("node at epoch %d, placement at %d", ms.n.Epoch(), ms.c.s.Epoch)
	}
}

// fail marks a random few members down (never the coordinator) for the next writes.
func (ms *moveSim) fail() {
	ms.down = map[ring.NodeID]bool{}
	for _, m := range ms.c.s.Members {
		if m.ID != "n1" && ms.rng.IntN(8) == 0 {
			ms.down[m.ID] = true
		}
	}
	ms.view()
}

// write writes a new key at a random level, each replica applying it and answering or
// not at random, in a random order, with the fallback timer and the deadline among them.
func (ms *moveSim) write() {
	level := []coord.Level{coord.One, coord.Quorum, coord.Quorum, coord.All}[ms.rng.IntN(4)]
	id := len(ms.writes)
	key := fmt.Appendf(nil, "w%d", id)
	ms.writes = append(ms.writes, moveWrite{key: key, level: level})
	if groups := ms.c.placement().WriteGroups(ring.TokenOf(key)); len(groups) > 1 {
		ms.moving++
	}
	m := row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: int64(id + 1)}}}}
	wr := &moveWriteRun{ms: ms, id: id, op: &WriteOp{}}
	wr.take(ms.n.StartWrite(wr.op, ms.now, m, level))
	for !wr.op.Done() {
		next := wr.op.Next()
		if len(wr.answers) == 0 || ms.rng.IntN(6) == 0 || !ms.now.Add(time.Millisecond).Before(next) {
			ms.now = next // a timer first: the fallback, or the deadline
			wr.take(wr.op.Timer(ms.now))
			continue
		}
		i := ms.rng.IntN(len(wr.answers))
		a := wr.answers[i]
		wr.answers = slices.Delete(wr.answers, i, i+1)
		ms.now = ms.now.Add(time.Millisecond)
		wr.take(wr.op.Answer(ms.now, a.from, a.err))
	}
	if !wr.replied {
		ms.t.Fatalf("write %d done without a reply", id)
	}
	ms.now = ms.now.Add(time.Second)
}

// moveWriteRun is one write in progress: the answers its replicas will send.
type moveWriteRun struct {
	ms      *moveSim
	id      int
	op      *WriteOp
	answers []moveAnswer
	replied bool
}

type moveAnswer struct {
	from ring.NodeID
	err  error
}

// take carries out r: each write sent is applied and answered, fails, is applied with
// its answer lost, or is neither applied nor answered, at random.
func (wr *moveWriteRun) take(r Ready) {
	ms := wr.ms
	for _, e := range r.Effects {
		s, ok := e.(coord.SendWrite)
		if !ok {
			continue
		}
		switch k := ms.rng.IntN(10); {
		case k < 7:
			ms.apply(s.To, wr.id)
			wr.answers = append(wr.answers, moveAnswer{from: s.To})
		case k < 8:
			wr.answers = append(wr.answers, moveAnswer{from: s.To, err: fmt.Errorf("boom")})
		case k < 9:
			ms.apply(s.To, wr.id)
		}
	}
	if r.Replied {
		if wr.replied {
			ms.t.Fatalf("write %d replied twice", wr.id)
		}
		wr.replied = true
		ms.writes[wr.id].acked = r.Reply.Err == nil
	}
}

func (ms *moveSim) apply(id ring.NodeID, w int) {
	if ms.holds[id] == nil {
		ms.holds[id] = map[int]bool{}
	}
	ms.holds[id][w] = true
}

// stream runs the transfers into range r of the change: each destination gets what its
// source holds in the transfer's tokens now.
func (ms *moveSim) stream(r move.Range) {
	for _, tr := range ms.c.s.Change.Transfers {
		if ms.c.s.Change.RangeOf(tr.Range) < 0 || ms.c.s.Change.Ranges[ms.c.s.Change.RangeOf(tr.Range)].Range != r {
			continue
		}
		for w := range ms.holds[tr.Source] {
			if inRange(tr.Range, ring.TokenOf(ms.writes[w].key)) {
				ms.apply(tr.Destination, w)
			}
		}
	}
}

// inRange reports whether (r.Start, r.End] holds t, wrapping.
func inRange(r move.Range, t ring.Token) bool {
	return uint64(t)-uint64(r.Start)-1 <= uint64(r.End)-uint64(r.Start)-1
}

// readLevel is the level whose reads meet every write at level l: ONE's writes are read
// at ALL, ALL's at ONE, QUORUM's at QUORUM.
func readLevel(l coord.Level) coord.Level {
	switch l {
	case coord.One:
		return coord.All
	case coord.All:
		return coord.One
	}
	return l
}

// check checks every acknowledged write against the node's read sets: every read at the
// level that meets the write's (readLevel) finds it, however the read picks its
// replicas, because too few replicas of the read set lack it. A sample is read through
// the node, answering from the model.
func (ms *moveSim) check(step string) {
	ms.down = nil // every member up, so that reads at ALL can be made
	ms.view()
	for i, w := range ms.writes {
		if !w.acked {
			continue
		}
		set := ms.n.Replicas(w.key)
		lacking := 0
		for _, r := range set {
			if !ms.holds[r.ID][i] {
				lacking++
			}
		}
		if need := readLevel(w.level).Required(len(set)); lacking >= need {
			ms.t.Fatalf("%s: write %d (%s at %s, token %d) is missing from %d of the read set %v: a read at %s may miss it\n%s",
				step, i, w.key, w.level, ring.TokenOf(w.key), lacking, set, readLevel(w.level), ms.describe())
		}
		if ms.rng.IntN(10) == 0 {
			ms.read(step, i)
		}
	}
}

// read reads write i through the node at the level that meets it, every replica asked
// answering from the model (repairs are not applied), and checks that it is found.
func (ms *moveSim) read(step string, i int) {
	w := ms.writes[i]
	set := ms.n.Replicas(w.key)
	op := &ReadOp{}
	var reply *coord.Reply
	var queue []coord.SendRead
	take := func(r Ready) {
		for _, e := range r.Effects {
			if s, ok := e.(coord.SendRead); ok {
				if !slices.ContainsFunc(set, func(o coord.Replica) bool { return o.ID == s.To }) {
					ms.t.Fatalf("%s: the read of write %d asked %s, outside the read set %v", step, i, s.To, set)
				}
				queue = append(queue, s)
			}
		}
		if r.Replied && reply == nil {
			reply = &r.Reply
		}
	}
	take(ms.n.StartRead(op, ms.now, w.key, readLevel(w.level)))
	for reply == nil && len(queue) > 0 {
		k := ms.rng.IntN(len(queue))
		s := queue[k]
		queue = slices.Delete(queue, k, k+1)
		var got row.Row
		found := ms.holds[s.To][i]
		if found {
			got = row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: int64(i + 1)}}}
		}
		resp := coord.ReadResponse{Row: got, Found: found}
		if s.Digest {
			resp = coord.ReadResponse{Digest: row.Digest(got, found)}
		}
		take(op.Answer(ms.now, s.To, resp))
	}
	if reply == nil || reply.Err != nil || !reply.Found {
		ms.t.Fatalf("%s: a read at %s of write %d (%s at %s) over %v: %+v", step, readLevel(w.level), i, w.key, w.level, set, reply)
	}
}

func (ms *moveSim) describe() string {
	s := fmt.Sprintf("epoch %d, down %v\n", ms.c.s.Epoch, ms.down)
	if ch := ms.c.s.Change; ch != nil {
		for _, r := range ch.Ranges {
			s += fmt.Sprintf("  %s %v -> %v moved=%t\n", r.Range, r.Old, r.New, r.Moved)
		}
		for _, tr := range ch.Transfers {
			s += fmt.Sprintf("  transfer %s %s -> %s\n", tr.Range, tr.Source, tr.Destination)
		}
	}
	return s
}

// writes writes a few keys after failing a few members.
func (ms *moveSim) writeSome() {
	ms.fail()
	for range 5 + ms.rng.IntN(10) {
		ms.write()
	}
}

// A simulated membership change (joins, a decommission, or both) through the cluster
// metadata's placements, before, at the start (writes to both sets), range by range
// (each streamed from the replica it replaces at a random moment, then switched) and at
// the finish, with writes at random levels throughout, random replica failures, lost
// answers, down members and answer orders. After each step every acknowledged write is
// held by enough of its key's read set that every read at the level that meets the
// write's (QUORUM for QUORUM; ALL for ONE; ONE for ALL) finds it, and a sample of reads
// through the node does. Randomized; KURA_SEED repeats a run.
func TestAcknowledgedWritesStayReadableThroughAMove(t *testing.T) {
	rng := seededRand(t)
	runs := 40
	if testing.Short() {
		runs = 10
	}
	moving := 0
	for run := range runs {
		ms, members := newMoveSim(t, rng)
		ms.writeSome()
		ms.check(fmt.Sprintf("run %d before", run))
		ms.playChange(fmt.Sprintf("run %d", run), members)
		moving += ms.moving
	}
	t.Logf("%d writes went to two replica groups", moving)
	if moving == 0 {
		t.Fatal("no write went to two replica groups: the test does not reach a move")
	}
}

// newMoveSim returns a cluster of four to six members of random roles and tokens, RF 3
// under a random strategy, coordinated by n1 under a random policy, and its members.
func newMoveSim(t *testing.T, rng *rand.Rand) (*moveSim, []meta.Member) {
	var members []meta.Member
	ms := &moveSim{t: t, rng: rng, now: t0, holds: map[ring.NodeID]map[int]bool{}, taken: map[ring.Token]bool{}}
	for i := range 4 + rng.IntN(3) {
		members = append(members, ms.member(i+1))
	}
	policies := []coord.Policy{coord.Uniform{}, coord.EngineAware{}, coord.LoadAware{}}
	cfg := Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: policies[rng.IntN(len(policies))], Timeout: time.Second}
	if rng.IntN(2) == 0 {
		cfg.WriteSlowAfter = 20 * time.Millisecond
	}
	ms.n = New(cfg)
	ms.c = bootstrapMeta(t, []string{"simple", "host-aware", "rack-aware"}[rng.IntN(3)], 3, members)
	ms.view()
	return ms, members
}

// member returns member n{i} with a random role and one to three new tokens.
func (ms *moveSim) member(i int) meta.Member {
	id := ring.NodeID(fmt.Sprint("n", i))
	roles := []ring.Role{ring.WriteOptimized, ring.ReadOptimized, ring.InMemory}
	m := meta.Member{ID: id, Host: "h" + strconv.Itoa(i), Rack: "r" + strconv.Itoa(i%3), Role: roles[ms.rng.IntN(3)],
		Addr: string(id) + ":7000", Tokens: ring.RandomTokens(ms.rng, 1+ms.rng.IntN(3), ms.taken)}
	for _, tok := range m.Tokens {
		ms.taken[tok] = true
	}
	return m
}

// playChange starts a random change (joins, a decommission or both), moves its ranges
// one by one in a random order (each streamed, then switched, with writes before, between
// and after) and finishes it, checking after each step.
func (ms *moveSim) playChange(run string, members []meta.Member) {
	var joins []meta.Member
	var leaves []ring.NodeID
	switch k := ms.rng.IntN(3); {
	case k < 2:
		for i := range 1 + ms.rng.IntN(2) {
			joins = append(joins, ms.member(len(members)+1+i))
		}
		if k == 1 {
			leaves = []ring.NodeID{members[ms.rng.IntN(len(members))].ID}
		}
	default:
		leaves = []ring.NodeID{members[ms.rng.IntN(len(members))].ID}
	}
	ms.c.start(1, joins, leaves)
	ms.view()
	step := fmt.Sprintf("%s (%s, %s, joins %d, leaves %v) started", run, ms.n.cfg.Policy.Name(), ms.c.s.Strategy, len(joins), leaves)
	ms.writeSome()
	ms.check(step)
	ranges := slices.Clone(ms.c.s.Change.Ranges)
	ms.rng.Shuffle(len(ranges), func(i, j int) { ranges[i], ranges[j] = ranges[j], ranges[i] })
	for k, r := range ranges {
		ms.writeSome()
		ms.stream(r.Range)
		ms.writeSome()
		ms.c.apply(meta.RangesMoved{Change: 1, Ranges: []move.Range{r.Range}})
		ms.view()
		ms.check(fmt.Sprintf("%s, range %d of %d %s moved", step, k+1, len(ranges), r.Range))
		ms.writeSome()
		ms.check(fmt.Sprintf("%s, after range %d of %d %s moved", step, k+1, len(ranges), r.Range))
	}
	ms.c.apply(meta.FinishChange{Change: 1})
	ms.view()
	ms.check(step + ", finished")
	ms.writeSome()
	ms.check(step + ", after the finish")
}
