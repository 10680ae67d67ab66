package meta

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// unit scales transcript tokens: "tokens=200" is token 200 × 10^16, so that a few nodes
// spread over the token space (±922 units) with numbers a reader can follow.
const unit = 10_000_000_000_000_000

// metaEnv is one transcript's state machine. Commands (tokens in units):
//
//	bootstrap rf=N placement=NAME            the first entry; input: one node a line,
//	<id> host=H rack=R [role=R] tokens=T,... the first members
//	register id=ID host=H rack=R [role=R] [addr=A]
//	start id=N [join=ID:T;T,...] [leave=IDs] [remove=IDs] [replace=OLD:NEW,...]
//	      [down=IDs] [level=L] [transfers=plan|none|drop-last] [epoch=E]
//	moved [id=N] ranges=all|I,J,...|S..E     ranges of the change by index, or (S,E]
//	finish [id=N]
//	cancel [id=N] [down=IDs] [transfers=plan|none]
//	placement tokens=T,...                   read set and write groups of each token
//	voters                                   the voters chosen and the steps to them
//	set-voters ids=IDs
//	state
//
// Every entry goes through Encode and Decode before Apply, as it would through the log.
// An entry prints the epoch and what changed, or "refused:" and why.
type metaEnv struct {
	s *State
}

func TestMetaTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &metaEnv{s: &State{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.run(td)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			return out
		})
	})
}

func (e *metaEnv) run(td *datadriven.TestData) (string, error) {
	arg := func(key string) string {
		if a, ok := td.Arg(key); ok && len(a.Vals) > 0 {
			return strings.Join(a.Vals, ",")
		}
		return ""
	}
	switch td.Cmd {
	case "bootstrap":
		rf, err := strconv.Atoi(arg("rf"))
		if err != nil {
			return "", err
		}
		b := Bootstrap{Strategy: arg("placement"), RF: rf}
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			m, err := parseMember(line)
			if err != nil {
				return "", err
			}
			b.Members = append(b.Members, m)
		}
		return e.apply(b), nil
	case "register":
		m, err := parseMember(fmt.Sprintf("%s host=%s rack=%s role=%s", arg("id"), arg("host"), arg("rack"), arg("role")))
		if err != nil {
			return "", err
		}
		return e.apply(Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: arg("addr")}), nil
	case "start":
		sc, err := e.startEntry(arg)
		if err != nil {
			return "", err
		}
		return e.apply(sc), nil
	case "moved":
		return e.moved(arg)
	case "finish":
		return e.apply(FinishChange{Change: e.changeID(arg)}), nil
	case "cancel":
		return e.cancel(arg)
	case "placement":
		return e.placement(ids(arg("tokens")))
	case "voters":
		to := ChooseVoters(e.s)
		var sb strings.Builder
		fmt.Fprintf(&sb, "recorded %v, chosen %v\n", e.s.Voters, to)
		for _, st := range VoterSteps(e.s.Voters, to) {
			fmt.Fprintf(&sb, "%s %s\n", map[bool]string{true: "add", false: "remove"}[st.Add], st.ID)
		}
		return sb.String(), nil
	case "set-voters":
		return e.apply(SetVoters{Voters: ids(arg("ids"))}), nil
	case "state":
		return describe(e.s), nil
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

// apply sends en through the codec and applies it.
func (e *metaEnv) apply(en Entry) string {
	dec, err := Decode(Encode(en))
	if err != nil {
		return fmt.Sprintf("codec: %v\n", err)
	}
	before := e.s.Epoch
	if err := e.s.Apply(dec); err != nil {
		return fmt.Sprintf("refused: %v\n", err)
	}
	out := fmt.Sprintf("epoch %d\n", e.s.Epoch)
	if e.s.Epoch == before {
		out = fmt.Sprintf("epoch %d (unchanged)\n", e.s.Epoch)
	}
	out += describeChange(e.s.Change)
	switch en.(type) {
	case StartChange, CancelChange:
		if c := e.s.Change; c != nil {
			for _, t := range c.Transfers {
				leaving := ""
				if t.Leaving {
					leaving = " leaving"
				}
				out += fmt.Sprintf("  copy %s %s -> %s%s\n", fmtRange(t.Range), t.Source, t.Destination, leaving)
			}
		}
	}
	return out
}

func (e *metaEnv) changeID(arg func(string) string) uint64 {
	if v := arg("id"); v != "" {
		id, _ := strconv.ParseUint(v, 10, 64)
		return id
	}
	if e.s.Change != nil {
		return e.s.Change.ID
	}
	return 0
}

func (e *metaEnv) startEntry(arg func(string) string) (StartChange, error) {
	id, err := strconv.ParseUint(arg("id"), 10, 64)
	if err != nil {
		return StartChange{}, fmt.Errorf("id: %w", err)
	}
	sc := StartChange{ID: id, Epoch: e.s.Epoch, Leaves: ids(arg("leave")), Removes: ids(arg("remove")), Down: ids(arg("down")), Level: coord.Quorum}
	if v := arg("epoch"); v != "" {
		sc.Epoch, _ = strconv.ParseUint(v, 10, 64)
	}
	if v := arg("level"); v != "" {
		if sc.Level, err = coord.ParseLevel(v); err != nil {
			return sc, err
		}
	}
	for _, j := range splitList(arg("join")) {
		name, toks, _ := strings.Cut(j, ":")
		tokens, err := parseTokens(strings.ReplaceAll(toks, ";", ","))
		if err != nil {
			return sc, err
		}
		sc.Joins = append(sc.Joins, Join{ID: ring.NodeID(name), Tokens: tokens})
	}
	for _, r := range splitList(arg("replace")) {
		old, nw, _ := strings.Cut(r, ":")
		sc.Replaces = append(sc.Replaces, Replacement{Old: ring.NodeID(old), New: ring.NodeID(nw)})
	}
	for _, h := range splitList(arg("handoff")) {
		tok, to, _ := strings.Cut(h, ":")
		v, err := parseTokens(tok)
		if err != nil || len(v) != 1 {
			return sc, fmt.Errorf("handoff %q: %v", h, err)
		}
		sc.Handoffs = append(sc.Handoffs, move.Handoff{Token: v[0], To: ring.NodeID(to)})
	}
	if mode := arg("transfers"); mode != "none" {
		sc.Transfers = planStart(e.s, sc)
		if mode == "drop-last" && len(sc.Transfers) > 0 {
			sc.Transfers = sc.Transfers[:len(sc.Transfers)-1]
		}
	}
	return sc, nil
}

func (e *metaEnv) moved(arg func(string) string) (string, error) {
	rm := RangesMoved{Change: e.changeID(arg)}
	c := e.s.Change
	for _, v := range splitList(arg("ranges")) {
		switch {
		case v == "all" && c != nil:
			for _, r := range c.Ranges {
				if !r.Moved {
					rm.Ranges = append(rm.Ranges, r.Range)
				}
			}
		case strings.Contains(v, ".."):
			var s, en int64
			if _, err := fmt.Sscanf(strings.Replace(v, "..", " ", 1), "%d %d", &s, &en); err != nil {
				return "", fmt.Errorf("range %q: want S..E in units", v)
			}
			rm.Ranges = append(rm.Ranges, move.Range{Start: ring.Token(s * unit), End: ring.Token(en * unit)})
		default:
			i, err := strconv.Atoi(v)
			if err != nil || c == nil || i >= len(c.Ranges) {
				return "", fmt.Errorf("range index %q", v)
			}
			rm.Ranges = append(rm.Ranges, c.Ranges[i].Range)
		}
	}
	return e.apply(rm), nil
}

func (e *metaEnv) cancel(arg func(string) string) (string, error) {
	cc := CancelChange{Change: e.changeID(arg), Down: ids(arg("down"))}
	if arg("transfers") != "none" && e.s.Change != nil {
		cc.Transfers = planCancel(e.s, toSet(cc.Down))
	}
	return e.apply(cc), nil
}

func (e *metaEnv) placement(tokens []ring.NodeID) (string, error) {
	p, err := NewPlacement(e.s)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "epoch %d\n", p.Epoch)
	for _, v := range tokens {
		u, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return "", err
		}
		t := ring.Token(u * unit)
		var groups []string
		for _, g := range p.WriteGroups(t) {
			groups = append(groups, joinIDs(g))
		}
		fmt.Fprintf(&sb, "%d: read %s; write %s\n", u, joinIDs(p.ReadSet(t)), strings.Join(groups, " + "))
	}
	return sb.String(), nil
}

// planStart plans sc's transfers with move.Plan against the ring State.Target gives, as
// a proposer does.
func planStart(s *State, sc StartChange) []move.Transfer {
	cur, err := s.CurrentRing()
	if err != nil {
		return nil
	}
	target, err := s.Target(sc)
	if err != nil {
		return nil
	}
	return plan(s, cur, target, toSet(sc.Down), nil)
}

// planCancel plans the copies back of the change's moved ranges.
func planCancel(s *State, down map[ring.NodeID]bool) []move.Transfer {
	cur, err1 := s.CurrentRing()
	target, err2 := s.TargetRing()
	if err1 != nil || err2 != nil {
		return nil
	}
	var back []RangeState
	for _, r := range s.Change.Ranges {
		if r.Moved {
			back = append(back, r)
		}
	}
	if len(back) == 0 {
		return nil
	}
	return plan(s, target, cur, down, back)
}

// plan runs move.Plan from one ring to another; with only, it keeps the transfers in
// those ranges.
func plan(s *State, from, to *ring.Ring, down map[ring.NodeID]bool, only []RangeState) []move.Transfer {
	strategy, _ := s.strategy()
	m, err := move.Plan(move.Change{Current: from, Target: to, Strategy: strategy, RF: s.RF, Sizes: move.Uniform(1 << 40), Down: down})
	if err != nil {
		return nil
	}
	if only == nil {
		return m.Transfers
	}
	var out []move.Transfer
	for _, t := range m.Transfers {
		if rangeFor(only, t.Range.End) >= 0 {
			out = append(out, t)
		}
	}
	return out
}

func parseMember(line string) (Member, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Member{}, fmt.Errorf("empty member line")
	}
	m := Member{ID: ring.NodeID(f[0]), Role: ring.WriteOptimized}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			m.Host = v
		case "rack":
			m.Rack = v
		case "role":
			switch v {
			case "", "lsm":
			case "btree":
				m.Role = ring.ReadOptimized
			case "memory":
				m.Role = ring.InMemory
			default:
				return m, fmt.Errorf("role %q", v)
			}
		case "tokens":
			tokens, err := parseTokens(v)
			if err != nil {
				return m, err
			}
			m.Tokens = tokens
		default:
			return m, fmt.Errorf("unknown member field %q", k)
		}
	}
	m.Addr = string(m.ID) + ":7000"
	return m, nil
}

func parseTokens(s string) ([]ring.Token, error) {
	var out []ring.Token
	for _, v := range splitList(s) {
		u, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("token %q: %w", v, err)
		}
		out = append(out, ring.Token(u*unit))
	}
	return out, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func ids(s string) []ring.NodeID {
	var out []ring.NodeID
	for _, v := range splitList(s) {
		out = append(out, ring.NodeID(v))
	}
	return out
}

func joinIDs(g []ring.NodeID) string {
	s := make([]string, len(g))
	for i, id := range g {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// fmtToken prints a token in units, marked ~ when it is not a whole number of them.
func fmtToken(t ring.Token) string {
	if t%unit == 0 {
		return strconv.FormatInt(int64(t/unit), 10)
	}
	return fmt.Sprintf("~%.2f", float64(t)/unit)
}

func fmtRange(r move.Range) string {
	return "(" + fmtToken(r.Start) + "," + fmtToken(r.End) + "]"
}

func describeChange(c *Change) string {
	if c == nil {
		return ""
	}
	var sb strings.Builder
	what := "change"
	if c.Reverting {
		what = "reverting change"
	}
	done := 0
	for _, d := range c.Done {
		if d {
			done++
		}
	}
	fmt.Fprintf(&sb, "%s %d: %d transfers", what, c.ID, len(c.Transfers))
	if done > 0 {
		fmt.Fprintf(&sb, ", %d done", done)
	}
	sb.WriteString("\n")
	for i, r := range c.Ranges {
		status := "pending"
		if r.Moved {
			status = "moved"
		}
		fmt.Fprintf(&sb, "  %d %s %s -> %s %s\n", i, fmtRange(r.Range), joinIDs(r.Old), joinIDs(r.New), status)
	}
	return sb.String()
}

func describe(s *State) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "epoch %d, %s rf %d, voters %v\n", s.Epoch, s.Strategy, s.RF, s.Voters)
	for _, m := range s.Members {
		toks := make([]string, len(m.Tokens))
		for i, t := range m.Tokens {
			toks[i] = fmtToken(t)
		}
		fmt.Fprintf(&sb, "%s %s/%s %s %s tokens [%s]\n", m.ID, m.Rack, m.Host, m.Role, m.State, strings.Join(toks, " "))
	}
	if s.ACLVersion > 0 || s.ACL != nil {
		fmt.Fprintf(&sb, "users version %d: %q\n", s.ACLVersion, s.ACL)
	}
	return sb.String() + describeChange(s.Change)
}
