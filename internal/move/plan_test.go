package move

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/ring"
)

// planEnv is one planner transcript's cluster: its nodes, placement and data size.
//
//	cluster rf=N placement=NAME tokens=N data=SIZE
//	<id> host=H rack=R engine=lsm|btree|memory [tokens=T,T,...]   (one line per node)
//
// builds the ring (tokens chosen together by ring.BalancedJoinTokens unless given) and
// prints it.
//
//	plan [join=IDs] [leave=IDs] [remove=IDs] [replace=OLD:NEW,...] [down=IDs] [strict]
//	     [shared] [limit=SIZE] [list=transfers|pairs|none] [commit]
//	<id> host=H rack=R engine=E [tokens=...]   (the joining and replacing nodes)
//
// plans the change (a replacement taking the replaced node's tokens, removed and replaced
// nodes down, the joiners' tokens chosen together against the ring the rest of the
// change leaves) and prints the movement as an operator's dry run; commit makes the
// target ring the cluster's.
//
//	compare joins=K [limit=SIZE] [long]
//
// plans adding 1 to K nodes (new hosts, racks in turn) three ways and prints a table: all
// at once; one after another (the same final tokens, each join planned when the one
// before completed); and each planned against the old ring alone, as Cassandra's
// simultaneous bootstrap did in seed 004. A long comparison is skipped under -short.
type planEnv struct {
	nodes     []ring.Node
	rf        int
	strategy  ring.Strategy
	numTokens int
	data      int64
}

func TestPlanTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/plan", func(t *testing.T, path string) {
		e := &planEnv{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.run(td)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			return out
		})
	})
}

func (e *planEnv) run(td *datadriven.TestData) (string, error) {
	arg := func(key string) string {
		if a, ok := td.Arg(key); ok && len(a.Vals) > 0 {
			return a.Vals[0]
		}
		return ""
	}
	list := func(key string) []string {
		var out []string
		if a, ok := td.Arg(key); ok {
			for _, v := range a.Vals {
				out = append(out, strings.Split(v, ",")...)
			}
		}
		return out
	}
	switch td.Cmd {
	case "cluster":
		return e.cluster(td.Input, arg)
	case "plan":
		return e.plan(td, arg, list)
	case "compare":
		if td.HasArg("long") && testing.Short() {
			return td.Expected, nil // a few seconds of token allocation: skipped under -short
		}
		return e.compare(arg)
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func (e *planEnv) cluster(input string, arg func(string) string) (string, error) {
	var err error
	if e.rf, err = strconv.Atoi(arg("rf")); err != nil {
		return "", fmt.Errorf("rf: %w", err)
	}
	if e.strategy, err = ring.StrategyByName(arg("placement")); err != nil {
		return "", err
	}
	if e.numTokens, err = strconv.Atoi(arg("tokens")); err != nil {
		return "", fmt.Errorf("tokens: %w", err)
	}
	if e.data, err = parseSize(arg("data")); err != nil {
		return "", err
	}
	nodes, err := parseNodes(input)
	if err != nil {
		return "", err
	}
	e.nodes = e.allocate(nil, nodes)
	r, err := ring.New(e.nodes)
	if err != nil {
		return "", err
	}
	return e.describe(r), nil
}

// allocate gives the nodes without tokens numTokens each, chosen together against r.
func (e *planEnv) allocate(r *ring.Ring, nodes []ring.Node) []ring.Node {
	var need []ring.Node
	for _, n := range nodes {
		if len(n.Tokens) == 0 {
			need = append(need, n)
		}
	}
	tokens, err := JoinTokens(BalancedTokens, r, need, e.numTokens, e.strategy, e.rf, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	out := slices.Clone(nodes)
	k := 0
	for i := range out {
		if len(out[i].Tokens) == 0 {
			out[i].Tokens = tokens[k]
			k++
		}
	}
	return out
}

// describe prints a ring: each node's replicated share of the data.
func (e *planEnv) describe(r *ring.Ring) string {
	var sb strings.Builder
	shares := ring.ReplicatedOwnership(r, e.strategy, e.rf)
	hi, lo := 0.0, 2.0
	for _, n := range r.Nodes() {
		if len(n.Tokens) == 0 {
			continue
		}
		s := shares[n.ID]
		hi, lo = max(hi, s), min(lo, s)
		fmt.Fprintf(&sb, "%s %s/%s %s: tokens %d, holds %s\n", n.ID, n.Rack, n.Host, engineName(n.Role), len(n.Tokens), fmtBytes(int64(s*float64(e.data)*float64(e.rf))))
	}
	fmt.Fprintf(&sb, "%d ranges, rf %d %s, replicated ownership max/min %.3f\n", r.RangeCount(), e.rf, e.strategy.Name(), hi/lo)
	return sb.String()
}

func (e *planEnv) plan(td *datadriven.TestData, arg func(string) string, list func(string) []string) (string, error) {
	cur, err := ring.New(e.nodes)
	if err != nil {
		return "", err
	}
	extra, err := parseNodes(td.Input)
	if err != nil {
		return "", err
	}
	byID := map[ring.NodeID]ring.Node{}
	for _, n := range extra {
		byID[n.ID] = n
	}
	var topo topology
	var joiners []ring.Node
	for _, id := range list("join") {
		n, ok := byID[ring.NodeID(id)]
		if !ok {
			return "", fmt.Errorf("joining node %s is not described", id)
		}
		joiners = append(joiners, n)
	}
	for _, id := range list("leave") {
		topo.leaves = append(topo.leaves, ring.NodeID(id))
	}
	for _, id := range list("remove") {
		topo.removes = append(topo.removes, ring.NodeID(id))
	}
	for _, pair := range list("replace") {
		old, repl, ok := strings.Cut(pair, ":")
		n, described := byID[ring.NodeID(repl)]
		if !ok || !described {
			return "", fmt.Errorf("replace %q: want OLD:NEW with NEW described", pair)
		}
		if topo.replaces == nil {
			topo.replaces = map[ring.NodeID]ring.Node{}
		}
		topo.replaces[ring.NodeID(old)] = n
	}
	// The joiners' tokens are chosen against the ring the rest of the change leaves.
	rest, err := ring.New(topo.apply(e.nodes))
	if err != nil {
		return "", err
	}
	topo.joins = e.allocate(rest, joiners)
	target, err := ring.New(topo.apply(e.nodes))
	if err != nil {
		return "", err
	}
	down := topo.down()
	for _, id := range list("down") {
		down[ring.NodeID(id)] = true
	}
	c := Change{Current: cur, Target: target, Strategy: e.strategy, RF: e.rf, Sizes: Uniform(e.data), Down: down,
		Strict: td.HasArg("strict"), SharedLimit: td.HasArg("shared")}
	m, err := Plan(c)
	if err != nil {
		return "", err
	}
	if err := checkMovement(c, m); err != nil {
		return "", err
	}
	limit := int64(16 << 20)
	if l := arg("limit"); l != "" {
		if limit, err = parseSize(l); err != nil {
			return "", err
		}
	}
	out := e.describeTarget(target) + formatMovement(c, m, limit, arg("list"))
	if td.HasArg("commit") {
		e.nodes = topo.apply(e.nodes)
	}
	return out, nil
}

// describeTarget prints the target ring's spread of replicated ownership (how well the
// joiners' tokens were chosen).
func (e *planEnv) describeTarget(target *ring.Ring) string {
	shares := ring.ReplicatedOwnership(target, e.strategy, e.rf)
	hi, lo := 0.0, 2.0
	for _, n := range target.Nodes() {
		hi, lo = max(hi, shares[n.ID]), min(lo, shares[n.ID])
	}
	return fmt.Sprintf("target: %d nodes, %d ranges, replicated ownership max/min %.3f\n", len(target.Nodes()), target.RangeCount(), hi/lo)
}

// formatMovement prints a movement as an operator's dry run.
func formatMovement(c Change, m *Movement, limit int64, list string) string {
	var sb strings.Builder
	if m.MovedBytes == m.MinimumBytes {
		fmt.Fprintf(&sb, "moves %s = minimum, in %s\n", fmtBytes(m.MovedBytes), plural(len(m.Transfers), "transfer"))
	} else {
		fmt.Fprintf(&sb, "moves %s of minimum %s, in %s; the rest has no live source\n", fmtBytes(m.MovedBytes), fmtBytes(m.MinimumBytes), plural(len(m.Transfers), "transfer"))
	}
	model := "send or receive"
	if c.SharedLimit {
		model = "send+receive"
	}
	fmt.Fprintf(&sb, "largest %s %s; bound %s (send %s, receive %s): %.3fx the bound; bound %.0f s at %s/s\n",
		model, fmtBytes(m.Load), fmtBytes(m.Bound.Bytes), fmtBytes(m.Bound.SendBytes), fmtBytes(m.Bound.ReceiveBytes),
		ratio(m.Load, m.Bound.Bytes), m.BoundSeconds(float64(limit)), fmtBytes(limit))
	leaving := 0
	for _, tr := range m.Transfers {
		if tr.Leaving {
			leaving++
		}
	}
	fmt.Fprintf(&sb, "%d of %d transfers from the replica that leaves the range\n", leaving, len(m.Transfers))
	for _, s := range m.Shortfalls {
		fmt.Fprintf(&sb, "no live source: %s -> %s %s each (data at risk)\n", s.Range, names(s.Destinations), fmtBytes(s.Bytes))
	}
	if list == "" {
		list = "pairs"
		if len(m.Transfers) <= 24 {
			list = "transfers"
		}
	}
	switch list {
	case "transfers":
		for _, tr := range m.Transfers {
			mark := ""
			if tr.Leaving {
				mark = " leaving"
			}
			fmt.Fprintf(&sb, "%s %s -> %s %s%s\n", tr.Range, tr.Source, tr.Destination, fmtBytes(tr.Bytes), mark)
		}
	case "pairs": // source -> destination, bytes in so many transfers
		type pair struct{ from, to ring.NodeID }
		count, bytes := map[pair]int{}, map[pair]int64{}
		for _, tr := range m.Transfers {
			p := pair{tr.Source, tr.Destination}
			count[p]++
			bytes[p] += tr.Bytes
		}
		pairs := slices.SortedFunc(maps.Keys(count), func(a, b pair) int {
			return strings.Compare(string(a.from)+" "+string(a.to), string(b.from)+" "+string(b.to))
		})
		for _, p := range pairs {
			fmt.Fprintf(&sb, "%s -> %s %s in %s\n", p.from, p.to, fmtBytes(bytes[p]), plural(count[p], "transfer"))
		}
	}
	ids := slices.Sorted(maps.Keys(m.Send))
	for id := range m.Receive {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	fmt.Fprintf(&sb, "node send receive\n")
	for _, id := range ids {
		mark := ""
		if c.Down[id] {
			mark = " (down)"
		}
		fmt.Fprintf(&sb, "%s %s %s%s\n", id, fmtBytes(m.Send[id]), fmtBytes(m.Receive[id]), mark)
	}
	return sb.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// compare prints seed 004's comparison: adding k nodes at once, one after another, and
// each against the old ring.
func (e *planEnv) compare(arg func(string) string) (string, error) {
	k, err := strconv.Atoi(arg("joins"))
	if err != nil {
		return "", fmt.Errorf("joins: %w", err)
	}
	limit := int64(16 << 20)
	if l := arg("limit"); l != "" {
		if limit, err = parseSize(l); err != nil {
			return "", err
		}
	}
	cur, err := ring.New(e.nodes)
	if err != nil {
		return "", err
	}
	plan := func(from, to []ring.Node) (*Movement, error) {
		c := Change{Current: mustRingErr(from), Target: mustRingErr(to), Strategy: e.strategy, RF: e.rf, Sizes: Uniform(e.data)}
		m, err := Plan(c)
		if err == nil {
			err = checkMovement(c, m)
		}
		return m, err
	}
	// steps plans joining nodes[base:] one at a time and returns the bytes and the sum of
	// the bounds.
	steps := func(nodes []ring.Node, base int) (int64, float64, error) {
		var bytes int64
		var seconds float64
		for j := base; j < len(nodes); j++ {
			m, err := plan(nodes[:j], nodes[:j+1])
			if err != nil {
				return 0, 0, err
			}
			bytes, seconds = bytes+m.MovedBytes, seconds+m.BoundSeconds(float64(limit))
		}
		return bytes, seconds, nil
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\tat once\t\t\t\tone after another\t\t\t\teach against the old ring\n")
	fmt.Fprintf(w, "\t\t\t\t\tsame tokens\t\ttokens chosen then\t\t\n")
	fmt.Fprintf(w, "joins\tmoved\tbound\tper new node\tmax/min\tmoved\tbounds\tmoved\tbounds\tfetched\n")
	then := slices.Clone(e.nodes) // joiners whose tokens were chosen as each joined
	for n := 1; n <= k; n++ {
		var joiners []ring.Node
		for j := range n {
			id := len(e.nodes) + j + 1
			joiners = append(joiners, ring.Node{ID: ring.NodeID(fmt.Sprintf("n%d", id)), Host: fmt.Sprintf("h%d", id),
				Rack: fmt.Sprintf("r%d", 1+(id-1)%3), Role: ring.Role(1 + (id-1)%3)})
		}
		all := append(slices.Clone(e.nodes), e.allocate(cur, joiners)...)
		together, err := plan(e.nodes, all)
		if err != nil {
			return "", err
		}
		var newMax int64
		for _, j := range joiners {
			newMax = max(newMax, together.Receive[j.ID])
		}
		shares := ring.ReplicatedOwnership(mustRingErr(all), e.strategy, e.rf)
		hi, lo := 0.0, 2.0
		for _, v := range shares {
			hi, lo = max(hi, v), min(lo, v)
		}
		sameBytes, sameSeconds, err := steps(all, len(e.nodes))
		if err != nil {
			return "", err
		}
		for len(then) < len(e.nodes)+n { // the joiners before the nth chose theirs the same way
			then = append(then, e.allocate(mustRingErr(then), joiners[len(then)-len(e.nodes):][:1])...)
		}
		thenBytes, thenSeconds, err := steps(then, len(e.nodes))
		if err != nil {
			return "", err
		}
		var alone int64
		for _, j := range all[len(e.nodes):] {
			m, err := plan(e.nodes, append(slices.Clone(e.nodes), j))
			if err != nil {
				return "", err
			}
			alone += m.MovedBytes
		}
		fmt.Fprintf(w, "%d\t%s\t%.0f s\t%s\t%.2f\t%s (%.2fx)\t%.0f s\t%s (%.2fx)\t%.0f s\t%s (%.2fx)\n", n,
			fmtBytes(together.MovedBytes), together.BoundSeconds(float64(limit)), fmtBytes(newMax), hi/lo,
			fmtBytes(sameBytes), ratio(sameBytes, together.MovedBytes), sameSeconds,
			fmtBytes(thenBytes), ratio(thenBytes, together.MovedBytes), thenSeconds,
			fmtBytes(alone), ratio(alone, together.MovedBytes))
	}
	w.Flush()
	fmt.Fprintf(&sb, "(bounds at %s/s per node; moved x: against at once)\n", fmtBytes(limit))
	return sb.String(), nil
}

func mustRingErr(nodes []ring.Node) *ring.Ring {
	r, err := ring.New(nodes)
	if err != nil {
		panic(err)
	}
	return r
}

// parseNodes reads node lines: "<id> host=H rack=R engine=lsm|btree|memory [tokens=T,...]".
func parseNodes(input string) ([]ring.Node, error) {
	var out []ring.Node
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		n := ring.Node{ID: ring.NodeID(f[0])}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "host":
				n.Host = v
			case "rack":
				n.Rack = v
			case "engine":
				n.Role = map[string]ring.Role{"lsm": ring.WriteOptimized, "btree": ring.ReadOptimized, "memory": ring.InMemory}[v]
			case "tokens":
				for _, s := range strings.Split(v, ",") {
					tk, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						return nil, fmt.Errorf("%s: token %q: %w", n.ID, s, err)
					}
					n.Tokens = append(n.Tokens, ring.Token(tk))
				}
			default:
				return nil, fmt.Errorf("%s: unknown attribute %q", n.ID, k)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

func engineName(r ring.Role) string {
	switch r {
	case ring.WriteOptimized:
		return "lsm"
	case ring.ReadOptimized:
		return "btree"
	case ring.InMemory:
		return "memory"
	}
	return "-"
}

// parseSize reads 12GiB, 512MiB, 64KiB or bytes.
func parseSize(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}, {"", 0}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("size %q: %w", s, err)
			}
			return n << u.shift, nil
		}
	}
	return 0, fmt.Errorf("size %q", s)
}

// fmtBytes prints bytes in GiB, MiB or KiB with three significant digits or so.
func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
