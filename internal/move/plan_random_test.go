package move

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

var strategies = []ring.Strategy{ring.Simple{}, ring.HostAware{}, ring.RackAware{}, ring.EngineDiverse{}}

// randomNodes returns n nodes named from first on, over a few hosts and racks (a host in
// one rack), with random roles and 1 to maxTokens random tokens not in taken (which it
// extends).
func randomNodes(rng *rand.Rand, first, n, maxTokens int, taken map[ring.Token]bool) []ring.Node {
	var out []ring.Node
	for i := range n {
		h := rng.IntN(5)
		nd := ring.Node{ID: ring.NodeID(fmt.Sprintf("n%02d", first+i)), Host: fmt.Sprintf("h%d", h), Rack: fmt.Sprintf("r%d", h%3),
			Role: ring.Role(1 + rng.IntN(3)), Tokens: ring.RandomTokens(rng, 1+rng.IntN(maxTokens), taken)}
		for _, t := range nd.Tokens {
			taken[t] = true
		}
		out = append(out, nd)
	}
	return out
}

// randomChange draws a cluster of 2 to 6 nodes and a change of it: some joins, leaves,
// removals and replacements (at least one of them), nodes down, a placement, an RF, sizes
// and a limit model.
func randomChange(t *testing.T, rng *rand.Rand) (Change, topology) {
	taken := map[ring.Token]bool{}
	nodes := randomNodes(rng, 1, 2+rng.IntN(5), 3, taken)
	var topo topology
	for {
		topo = topology{joins: randomNodes(rng, len(nodes)+1, rng.IntN(3), 3, taken)}
		for _, n := range nodes {
			switch rng.IntN(8) {
			case 0:
				topo.leaves = append(topo.leaves, n.ID)
			case 1:
				topo.removes = append(topo.removes, n.ID)
			case 2:
				if topo.replaces == nil {
					topo.replaces = map[ring.NodeID]ring.Node{}
				}
				r := randomNodes(rng, 50+len(topo.replaces), 1, 1, taken)[0]
				r.Tokens = nil
				topo.replaces[n.ID] = r
			}
		}
		if len(topo.apply(nodes)) > 0 && (len(topo.joins)+len(topo.leaves)+len(topo.removes)+len(topo.replaces) > 0) {
			break
		}
	}
	c := Change{Current: mustRing(t, nodes), Target: mustRing(t, topo.apply(nodes)), Strategy: strategies[rng.IntN(len(strategies))],
		RF: 1 + rng.IntN(3), Down: topo.down(), Strict: rng.IntN(4) == 0, SharedLimit: rng.IntN(2) == 0}
	for _, n := range nodes {
		if rng.IntN(6) == 0 {
			c.Down[n.ID] = true
		}
	}
	if rng.IntN(2) == 0 {
		c.Sizes = Uniform(1 + rng.Int64N(1<<40))
	} else {
		bytes := make([]int64, c.Current.RangeCount())
		for i := range bytes {
			bytes[i] = rng.Int64N(1 << 30)
		}
		p, err := NewPerRange(c.Current, bytes)
		if err != nil {
			t.Fatal(err)
		}
		c.Sizes = p
	}
	return c, topo
}

// Random changes of small clusters, under every placement: every plan has the properties
// checkMovement checks (no copy to a node that holds the range, no dead or foreign source,
// bytes moved equal to the minimum, which matches a per-node computation of it); the
// bound equals the enumeration over node sets of MinMaxLoad's formula, and no choice of
// one source per copy (tried exhaustively where there are at most 20,000) beats it; and
// unless strict, the plan's load is the bound. Logs how far strict plans are from it and
// how much whole-range choices lose against split ones.
func TestPlanMatchesBruteForce(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	trials := 600
	if testing.Short() {
		trials = 150
	}
	var worstStrict, worstWhole, sumWhole float64
	var exhaustive, split, transfers int
	for trial := range trials {
		c, _ := randomChange(t, rng)
		m, err := Plan(c)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if err := checkMovement(c, m); err != nil {
			t.Fatalf("trial %d (%s rf %d): %v", trial, c.Strategy.Name(), c.RF, err)
		}
		copies := copiesOf(c, m)
		if want := boundBySubsets(copies, c.SharedLimit); want != m.Bound {
			t.Fatalf("trial %d: bound %+v, by enumeration of node sets %+v", trial, m.Bound, want)
		}
		if !c.Strict && m.Load != m.Bound.Bytes {
			t.Fatalf("trial %d (%s rf %d, shared %v): load %d, bound %d", trial, c.Strategy.Name(), c.RF, c.SharedLimit, m.Load, m.Bound.Bytes)
		}
		if c.Strict && m.Bound.Bytes > 0 {
			worstStrict = max(worstStrict, ratio(m.Load, m.Bound.Bytes))
		}
		split += len(m.Transfers) - len(copies)
		transfers += len(m.Transfers)
		if opt, ok := bestChoice(copies, c.SharedLimit); ok {
			if opt < m.Bound.Bytes {
				t.Fatalf("trial %d: a choice of sources has load %d, below the bound %d", trial, opt, m.Bound.Bytes)
			}
			if m.Bound.Bytes > 0 {
				r := ratio(opt, m.Bound.Bytes)
				worstWhole, sumWhole = max(worstWhole, r), sumWhole+r
				exhaustive++
			}
		}
	}
	t.Logf("%d trials: %d transfers, %d of them from splitting a copy among sources; strict plans up to %.2fx the bound; "+
		"the best whole-range choice up to %.2fx the bound (mean %.3f over %d exhausted)",
		trials, transfers, split, worstStrict, worstWhole, sumWhole/float64(exhaustive), exhaustive)
}

// copiesOf returns the copies m makes, with every live old replica of the range as a
// candidate source: a copy's transfers (consecutive, contiguous, to one destination,
// with the same replica sets before and after: one piece of the planner, split among
// sources) are joined again.
func copiesOf(c Change, m *Movement) []Demand {
	sets := func(tr Transfer) ([]ring.NodeID, []ring.NodeID) {
		return c.Strategy.Replicas(c.Current, tr.Range.End, c.RF), c.Strategy.Replicas(c.Target, tr.Range.End, c.RF)
	}
	var out []Demand
	for k, tr := range m.Transfers {
		old, next := sets(tr)
		if k > 0 {
			prev := m.Transfers[k-1]
			po, pn := sets(prev)
			if prev.Destination == tr.Destination && prev.Range.End == tr.Range.Start && slices.Equal(po, old) && slices.Equal(pn, next) {
				out[len(out)-1].Bytes += tr.Bytes
				continue
			}
		}
		d := Demand{Bytes: tr.Bytes, Destination: tr.Destination}
		for _, id := range old {
			if !c.Down[id] {
				d.Sources = append(d.Sources, id)
			}
		}
		out = append(out, d)
	}
	return out
}

// boundBySubsets computes MinMaxLoad by enumeration: the largest, over sets S of source
// nodes, of the bytes of the demands whose sources all lie in S (plus S's receives when
// shared) over |S|, rounded up, and no less than the largest receive.
func boundBySubsets(demands []Demand, shared bool) Bound {
	var srcs []ring.NodeID
	recv := map[ring.NodeID]int64{}
	for _, d := range demands {
		recv[d.Destination] += d.Bytes
		for _, s := range d.Sources {
			if !slices.Contains(srcs, s) {
				srcs = append(srcs, s)
			}
		}
	}
	var b Bound
	for _, r := range recv {
		b.ReceiveBytes = max(b.ReceiveBytes, r)
	}
	sendOnly, withRecv := int64(0), b.ReceiveBytes
	for mask := 1; mask < 1<<len(srcs); mask++ {
		in := func(id ring.NodeID) bool {
			i := slices.Index(srcs, id)
			return i >= 0 && mask&(1<<i) != 0
		}
		var inside, received int64
		for _, d := range demands {
			if !slices.ContainsFunc(d.Sources, func(id ring.NodeID) bool { return !in(id) }) {
				inside += d.Bytes
			}
		}
		for id, r := range recv {
			if in(id) {
				received += r
			}
		}
		n := int64(bits.OnesCount(uint(mask)))
		sendOnly = max(sendOnly, (inside+n-1)/n)
		withRecv = max(withRecv, (inside+received+n-1)/n)
	}
	b.SendBytes = sendOnly
	b.Bytes = max(sendOnly, b.ReceiveBytes)
	if shared {
		b.Bytes = withRecv
	}
	return b
}

// bestChoice returns the least largest load over every choice of one source per demand,
// when there are at most 20,000 choices.
func bestChoice(demands []Demand, shared bool) (int64, bool) {
	choices := 1
	for _, d := range demands {
		if choices *= len(d.Sources); choices > 20000 {
			return 0, false
		}
	}
	recv := map[ring.NodeID]int64{}
	for _, d := range demands {
		recv[d.Destination] += d.Bytes
	}
	best := int64(-1)
	pick := make([]int, len(demands))
	for {
		send := map[ring.NodeID]int64{}
		for i, d := range demands {
			send[d.Sources[pick[i]]] += d.Bytes
		}
		if l := load(send, recv, shared); best < 0 || l < best {
			best = l
		}
		i := 0
		for ; i < len(pick); i++ {
			if pick[i]++; pick[i] < len(demands[i].Sources) {
				break
			}
			pick[i] = 0
		}
		if i == len(pick) {
			return max(best, 0), true
		}
	}
}

// Random demands, apart from any ring: MinMaxLoad's max-flow agrees with the enumeration
// of node sets under both limit models.
func TestMinMaxLoadMatchesEnumeration(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	for trial := range 2000 {
		nodes := 1 + rng.IntN(7)
		var demands []Demand
		for range rng.IntN(14) {
			d := Demand{Bytes: rng.Int64N(1000), Destination: ring.NodeID(fmt.Sprint(rng.IntN(nodes)))}
			for n := range nodes {
				if rng.IntN(3) == 0 {
					d.Sources = append(d.Sources, ring.NodeID(fmt.Sprint(n)))
				}
			}
			demands = append(demands, d)
		}
		shared := rng.IntN(2) == 0
		var usable []Demand // MinMaxLoad ignores demands without sources
		for _, d := range demands {
			if len(d.Sources) > 0 {
				usable = append(usable, d)
			}
		}
		if got, want := MinMaxLoad(demands, shared), boundBySubsets(usable, shared); got != want {
			t.Fatalf("trial %d (shared %v): %+v, by enumeration %+v, demands %+v", trial, shared, got, want, demands)
		}
	}
}

// Joining k nodes as one change moves no more than joining them one after another (with
// the same tokens), because for every range |C\A| <= |C\B| + |B\A|; and it is what seed
// 004's simultaneous bootstrap, each joiner planned against the old ring, over-fetches.
func TestJoiningTogetherMovesNoMoreThanOneAfterAnother(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	var overSeq, overAlone float64
	for trial := range 200 {
		taken := map[ring.Token]bool{}
		nodes := randomNodes(rng, 1, 2+rng.IntN(4), 4, taken)
		joiners := randomNodes(rng, len(nodes)+1, 2+rng.IntN(3), 4, taken)
		strategy, rf, sizes := strategies[rng.IntN(len(strategies))], 1+rng.IntN(3), Uniform(1<<40)
		plan := func(from, to []ring.Node) *Movement {
			m, err := Plan(Change{Current: mustRing(t, from), Target: mustRing(t, to), Strategy: strategy, RF: rf, Sizes: sizes})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		all := append(slices.Clone(nodes), joiners...)
		together := plan(nodes, all).MovedBytes
		var seq, alone int64
		for j := range joiners {
			seq += plan(all[:len(nodes)+j], all[:len(nodes)+j+1]).MovedBytes
			alone += plan(nodes, append(slices.Clone(nodes), joiners[j])).MovedBytes
		}
		if together > seq {
			t.Fatalf("trial %d (%s rf %d): together %d bytes, one after another %d", trial, strategy.Name(), rf, together, seq)
		}
		if together > 0 {
			overSeq, overAlone = max(overSeq, ratio(seq, together)), max(overAlone, ratio(alone, together))
		}
	}
	t.Logf("worst one after another / together %.2f; worst each against the old ring / together %.2f", overSeq, overAlone)
}

// Sizes are additive: cut anywhere, a range's pieces sum to it; PerRange gives each of
// its ring's ranges exactly its bytes, and the ring its total.
func TestSizesAreAdditive(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	for trial := range 300 {
		nodes := randomNodes(rng, 1, 1+rng.IntN(4), 3, map[ring.Token]bool{})
		r := mustRing(t, nodes)
		bytes := make([]int64, r.RangeCount())
		var total int64
		for i := range bytes {
			bytes[i] = rng.Int64N(1 << 40)
			total += bytes[i]
		}
		p, err := NewPerRange(r, bytes)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range bytes {
			rg := Range{Start: r.RangeStart(i), End: r.RangeEnd(i)}
			if got := p.Bytes(rg); got != b {
				t.Fatalf("trial %d: range %d %s has %d bytes, want %d", trial, i, rg, got, b)
			}
		}
		for _, s := range []Sizes{p, Uniform(rng.Int64N(1 << 50))} {
			cuts := ring.RandomTokens(rng, 1+rng.IntN(6), nil)
			if rng.IntN(3) == 0 {
				cuts = append(cuts, ring.MinToken, ring.MaxToken)
			}
			slices.Sort(cuts)
			cuts = slices.Compact(cuts)
			var sum int64
			for i, end := range cuts {
				sum += s.Bytes(Range{Start: cuts[(i+len(cuts)-1)%len(cuts)], End: end})
			}
			if whole := s.Bytes(Range{Start: cuts[0], End: cuts[0]}); sum != whole {
				t.Fatalf("trial %d: %T cut at %v sums to %d, whole ring %d", trial, s, cuts, sum, whole)
			}
		}
		if whole := p.Bytes(Range{Start: 5, End: 5}); whole != total {
			t.Fatalf("trial %d: whole ring %d, want %d", trial, whole, total)
		}
	}
}

// onto is a Rehome that gives a departing node's ranges to one chosen node in its place.
type onto struct{ to ring.NodeID }

func (o onto) NewReplicas(_ Range, old, target []ring.NodeID) []ring.NodeID {
	var out []ring.NodeID
	for _, id := range target {
		if slices.Contains(old, id) {
			out = append(out, id)
		}
	}
	if !slices.Contains(out, o.to) {
		out = append(out, o.to)
	}
	return out
}

// The Rehome seam decides where a removed node's ranges go: here all to one node, which
// then receives every copy; the bound is computed for those destinations.
func TestRehomeChoosesWhereARemovedNodesRangesGo(t *testing.T) {
	nodes := []ring.Node{{ID: "a", Host: "a", Tokens: []ring.Token{-6000, 0, 6000}}, {ID: "b", Host: "b", Tokens: []ring.Token{-4000, 2000}},
		{ID: "c", Host: "c", Tokens: []ring.Token{-2000, 4000}}, {ID: "d", Host: "d", Tokens: []ring.Token{-1000, 3000}}}
	c := Change{Current: mustRing(t, nodes), Target: mustRing(t, nodes[1:]), Strategy: ring.Simple{}, RF: 2, Sizes: Uniform(1 << 30),
		Down: map[ring.NodeID]bool{"a": true}, Rehome: onto{"d"}}
	m, err := Plan(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMovement(c, m); err != nil {
		t.Fatal(err)
	}
	if len(m.Transfers) == 0 || m.Receive["d"] != m.MovedBytes || m.Bound.ReceiveBytes != m.MovedBytes {
		t.Fatalf("rehomed onto d: transfers %+v, receives %v, bound %+v", m.Transfers, m.Receive, m.Bound)
	}
	c.Rehome = onto{"a"} // not in the target ring
	if _, err := Plan(c); !errors.Is(err, ErrInvalidChange) {
		t.Fatalf("rehomed onto a removed node: %v, want ErrInvalidChange", err)
	}
}

func TestPlanRefusesAnIncompleteChange(t *testing.T) {
	r := mustRing(t, []ring.Node{{ID: "a", Tokens: []ring.Token{1}}})
	for _, c := range []Change{
		{Target: r, Strategy: ring.Simple{}, RF: 1, Sizes: Uniform(1)},
		{Current: r, Target: r, RF: 1, Sizes: Uniform(1)},
		{Current: r, Target: r, Strategy: ring.Simple{}, Sizes: Uniform(1)},
		{Current: r, Target: r, Strategy: ring.Simple{}, RF: 1},
	} {
		if _, err := Plan(c); !errors.Is(err, ErrInvalidChange) {
			t.Errorf("%+v: %v, want ErrInvalidChange", c, err)
		}
	}
}

// Vnode-sized clusters (6 to 11 nodes of 16 random tokens, one per host, three racks, RF
// 3) and one change each (1-4 joins, a decommission, a removal, a replacement), under
// both limit models: unless strict, the plan's largest load is the bound. Logs how far
// strict plans are from it (a decommissioned node sends every copy itself) and how many
// copies were split among sources.
func TestPlanReachesTheBoundAtScale(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	trials := 40
	if testing.Short() {
		trials = 10
	}
	for _, strict := range []bool{false, true} {
		for _, shared := range []bool{false, true} {
			worst, sum := 0.0, 0.0
			var kinds [4]float64
			var copies, transfers int
			for range trials {
				c, kind := vnodeChange(t, rng)
				c.Strict, c.SharedLimit = strict, shared
				m, err := Plan(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkMovement(c, m); err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				r := ratio(m.Load, m.Bound.Bytes)
				if !strict && m.Load != m.Bound.Bytes {
					t.Fatalf("%s (%s, shared %v): load %d, bound %d", kind, c.Strategy.Name(), shared, m.Load, m.Bound.Bytes)
				}
				worst, sum = max(worst, r), sum+r
				kinds[kindIndex(kind)] = max(kinds[kindIndex(kind)], r)
				copies, transfers = copies+len(copiesOf(c, m)), transfers+len(m.Transfers)
			}
			t.Logf("strict %v, shared limit %v: plan/bound worst %.3f, mean %.3f (worst by change: join %.2f, decommission %.2f, remove %.2f, replace %.2f); %d copies in %d transfers",
				strict, shared, worst, sum/float64(trials), kinds[0], kinds[1], kinds[2], kinds[3], copies, transfers)
		}
	}
}

var changeKinds = []string{"join", "decommission", "remove", "replace"}

func kindIndex(kind string) int { return slices.Index(changeKinds, kind) }

// vnodeChange draws a vnode-sized cluster and one change of it.
func vnodeChange(t *testing.T, rng *rand.Rand) (Change, string) {
	taken := map[ring.Token]bool{}
	node := func(id string, i int) ring.Node {
		n := ring.Node{ID: ring.NodeID(id), Host: "h" + id, Rack: fmt.Sprint("r", i%3), Role: ring.Role(1 + i%3), Tokens: ring.RandomTokens(rng, 16, taken)}
		for _, tk := range n.Tokens {
			taken[tk] = true
		}
		return n
	}
	var nodes []ring.Node
	for i := range 6 + rng.IntN(6) {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i+1), i))
	}
	var topo topology
	kind := changeKinds[rng.IntN(len(changeKinds))]
	switch kind {
	case "join":
		for j := range 1 + rng.IntN(4) {
			topo.joins = append(topo.joins, node(fmt.Sprintf("j%d", j+1), j))
		}
	case "decommission":
		topo.leaves = []ring.NodeID{nodes[0].ID}
	case "remove":
		topo.removes = []ring.NodeID{nodes[0].ID}
	case "replace":
		r := node("x1", 0)
		r.Tokens = nil
		topo.replaces = map[ring.NodeID]ring.Node{nodes[0].ID: r}
	}
	return Change{Current: mustRing(t, nodes), Target: mustRing(t, topo.apply(nodes)), Strategy: strategies[rng.IntN(len(strategies))],
		RF: 3, Down: topo.down(), Sizes: Uniform(1 << 40)}, kind
}

// JoinTokens gives every joiner as many tokens as asked, none held by the ring or by
// another joiner, the same for one seed, by either method; an unknown method is an error.
func TestJoinTokensGiveJoinersDistinctTokens(t *testing.T) {
	seed := testSeed(t)
	r := mustRing(t, []ring.Node{{ID: "a", Host: "h1", Tokens: []ring.Token{-100, 100}}, {ID: "b", Host: "h2", Tokens: []ring.Token{0, 200}}})
	joiners := []ring.Node{{ID: "c", Host: "h3"}, {ID: "d", Host: "h4"}, {ID: "e", Host: "h5"}}
	for _, method := range []string{RandomTokens, BalancedTokens} {
		choose := func() [][]ring.Token {
			got, err := JoinTokens(method, r, joiners, 4, ring.HostAware{}, 3, rand.New(rand.NewPCG(seed, 8)))
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		first := choose()
		seen := map[ring.Token]bool{-100: true, 100: true, 0: true, 200: true}
		for k, tokens := range first {
			if len(tokens) != 4 {
				t.Fatalf("%s: joiner %d got %v, want 4 tokens", method, k, tokens)
			}
			for _, tk := range tokens {
				if seen[tk] {
					t.Fatalf("%s: token %d chosen twice", method, tk)
				}
				seen[tk] = true
			}
		}
		if again := choose(); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("%s: one seed chose %v, then %v", method, first, again)
		}
	}
	if _, err := JoinTokens("even", r, joiners, 4, ring.HostAware{}, 3, rand.New(rand.NewPCG(seed, 8))); err == nil {
		t.Fatal("an unknown method chose tokens")
	}
}

// BenchmarkPlan plans a change of a cluster of random 16-token nodes (one per host, three
// racks, host-aware placement, RF 3).
func BenchmarkPlan(b *testing.B) {
	for _, nodes := range []int{12, 100} {
		for _, kind := range []string{"join5", "decommission", "remove"} {
			b.Run(fmt.Sprintf("nodes=%d/change=%s/tokens=16", nodes, kind), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				taken := map[ring.Token]bool{}
				node := func(i int) ring.Node {
					n := ring.Node{ID: ring.NodeID(fmt.Sprintf("n%03d", i)), Host: fmt.Sprint("h", i), Rack: fmt.Sprint("r", i%3), Tokens: ring.RandomTokens(rng, 16, taken)}
					for _, tk := range n.Tokens {
						taken[tk] = true
					}
					return n
				}
				var cur []ring.Node
				for i := range nodes {
					cur = append(cur, node(i))
				}
				var topo topology
				switch kind {
				case "join5":
					for j := range 5 {
						topo.joins = append(topo.joins, node(nodes+j))
					}
				case "decommission":
					topo.leaves = []ring.NodeID{cur[0].ID}
				case "remove":
					topo.removes = []ring.NodeID{cur[0].ID}
				}
				c := Change{Current: mustRing(b, cur), Target: mustRing(b, topo.apply(cur)), Strategy: ring.HostAware{}, RF: 3,
					Sizes: Uniform(1 << 40), Down: topo.down()}
				for b.Loop() {
					if _, err := Plan(c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
