package topo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// unit scales transcript tokens: "tokens=200" is token 200 × 10^16.
const unit = 10_000_000_000_000_000

// env is one transcript's cluster metadata. Commands:
//
//	bootstrap rf=N placement=NAME      input: "<id> host=H rack=R [role=R] tokens=T,..."
//	register id=ID host=H rack=R [role=R]
//	plan [join=IDs] [leave=IDs] [remove=IDs] [replace=OLD:NEW,...] [down=IDs]
//	     [level=L] [tokens=N] [alloc=balanced|random] [seed=S] [apply]
//	done transfers=all|I,J,...|to=ID   apply TransfersDone: transfers of the change completed
//	advance [times=N]                  propose (apply) what Advance returns, N times
//	cancel [down=IDs]                  apply PlanCancel's entry
//	joiners now=S window=S [quiet=S] [first=ID:S,...] [down=IDs] [staged=IDs]
//	state
type env struct {
	s *meta.State
}

func TestTopoTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &env{s: &meta.State{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.run(td)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			return out
		})
	})
}

func arg(td *datadriven.TestData, key string) string {
	if a, ok := td.Arg(key); ok {
		return strings.Join(a.Vals, ",")
	}
	return ""
}

func ids(s string) []ring.NodeID {
	var out []ring.NodeID
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			out = append(out, ring.NodeID(f))
		}
	}
	return out
}

func set(s string) map[ring.NodeID]bool {
	out := map[ring.NodeID]bool{}
	for _, id := range ids(s) {
		out[id] = true
	}
	return out
}

func (e *env) run(td *datadriven.TestData) (string, error) {
	switch td.Cmd {
	case "bootstrap":
		rf, _ := strconv.Atoi(arg(td, "rf"))
		b := meta.Bootstrap{Strategy: arg(td, "placement"), RF: rf}
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			m, err := parseMember(line)
			if err != nil {
				return "", err
			}
			b.Members = append(b.Members, m)
		}
		return e.apply(b), nil
	case "register":
		m, err := parseMember(arg(td, "id") + " host=" + arg(td, "host") + " rack=" + arg(td, "rack") + " role=" + arg(td, "role"))
		if err != nil {
			return "", err
		}
		return e.apply(meta.Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: "addr-" + string(m.ID)}), nil
	case "plan":
		return e.plan(td)
	case "done":
		return e.markDone(arg(td, "transfers"), arg(td, "to"))
	case "advance":
		times := 1
		if a := arg(td, "times"); a != "" {
			times, _ = strconv.Atoi(a)
		}
		var sb strings.Builder
		for range times {
			en := Advance(e.s)
			if en == nil {
				sb.WriteString("nothing to do\n")
				break
			}
			sb.WriteString(e.apply(en))
		}
		return sb.String(), nil
	case "joiners":
		return e.joiners(td)
	case "cancel":
		cc, err := PlanCancel(e.s, set(arg(td, "down")))
		if err != nil {
			return fmt.Sprintf("refused: %v\n", err), nil
		}
		var sb strings.Builder
		for i, tr := range cc.Transfers {
			fmt.Fprintf(&sb, "  %d: %s -> %s %d MiB\n", i, tr.Source, tr.Destination, tr.Bytes>>20)
		}
		return sb.String() + e.apply(cc) + describe(e.s), nil
	case "state":
		return describe(e.s), nil
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func (e *env) plan(td *datadriven.TestData) (string, error) {
	ops := Ops{Joins: ids(arg(td, "join")), Leaves: ids(arg(td, "leave")), Removes: ids(arg(td, "remove"))}
	for _, r := range strings.Split(arg(td, "replace"), ",") {
		if o, n, ok := strings.Cut(r, ":"); ok {
			ops.Replaces = append(ops.Replaces, meta.Replacement{Old: ring.NodeID(o), New: ring.NodeID(n)})
		}
	}
	cfg := Config{TokenAllocation: move.BalancedTokens, NumTokens: 1, Level: coord.Quorum}
	if a := arg(td, "alloc"); a != "" {
		cfg.TokenAllocation = a
	}
	if a := arg(td, "tokens"); a != "" {
		cfg.NumTokens, _ = strconv.Atoi(a)
	}
	if a := arg(td, "level"); a != "" {
		l, err := coord.ParseLevel(a)
		if err != nil {
			return "", err
		}
		cfg.Level = l
	}
	_, cfg.HandOff = td.Arg("handoff")
	for _, kv := range strings.Split(arg(td, "free"), ",") {
		if id, v, ok := strings.Cut(kv, ":"); ok {
			mib, _ := strconv.ParseInt(v, 10, 64)
			if cfg.Free == nil {
				cfg.Free = map[ring.NodeID]int64{}
			}
			cfg.Free[ring.NodeID(id)] = mib << 20
		}
	}
	seed, _ := strconv.ParseUint(arg(td, "seed"), 10, 64)
	sc, mv, err := Plan(e.s, ops, cfg, set(arg(td, "down")), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		return fmt.Sprintf("%s: refused: %v\n", ops, err), nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "change %d at epoch %d: %s; level %s; down [%s]\n", sc.ID, sc.Epoch, ops, sc.Level, joinIDs(sc.Down))
	for _, j := range sc.Joins {
		fmt.Fprintf(&sb, "  %s takes %d tokens\n", j.ID, len(j.Tokens))
	}
	minimum := "minimum"
	if mv.MovedBytes != mv.MinimumBytes {
		minimum = fmt.Sprintf("%d MiB minimum", mv.MinimumBytes>>20)
	}
	for _, h := range sc.Handoffs {
		fmt.Fprintf(&sb, "  token %d to %s\n", h.Token/unit, h.To)
	}
	fmt.Fprintf(&sb, "  %d transfers, %d MiB = %s\n", len(sc.Transfers), mv.MovedBytes>>20, minimum)
	for i, tr := range sc.Transfers {
		leaving := ""
		if tr.Leaving {
			leaving = " leaving"
		}
		fmt.Fprintf(&sb, "  %d: %s -> %s %d MiB%s\n", i, tr.Source, tr.Destination, tr.Bytes>>20, leaving)
	}
	if _, ok := td.Arg("apply"); ok {
		sb.WriteString(e.apply(sc))
	}
	return sb.String(), nil
}

func (e *env) markDone(which, to string) (string, error) {
	c := e.s.Change
	if c == nil {
		return "", fmt.Errorf("no change in flight")
	}
	td := meta.TransfersDone{Change: c.ID}
	for i, tr := range c.Transfers {
		if which == "all" || to != "" && tr.Destination == ring.NodeID(to) {
			td.Transfers = append(td.Transfers, i)
		}
	}
	for _, f := range strings.Split(which, ",") {
		if i, err := strconv.Atoi(f); err == nil {
			td.Transfers = append(td.Transfers, i)
		}
	}
	out := e.apply(td)
	var done []int
	for i, d := range e.s.Change.Done {
		if d {
			done = append(done, i)
		}
	}
	return out + fmt.Sprintf("done: %v of %d\n", done, len(c.Transfers)), nil
}

func (e *env) joiners(td *datadriven.TestData) (string, error) {
	base := time.Unix(1_000_000, 0)
	at := func(s string) time.Time {
		v, _ := strconv.ParseFloat(s, 64)
		return base.Add(time.Duration(v * float64(time.Second)))
	}
	first := map[ring.NodeID]time.Time{}
	for _, f := range strings.Split(arg(td, "first"), ",") {
		if id, s, ok := strings.Cut(f, ":"); ok {
			first[ring.NodeID(id)] = at(s)
		}
	}
	window, _ := strconv.ParseFloat(arg(td, "window"), 64)
	quiet := window
	if q := arg(td, "quiet"); q != "" {
		quiet, _ = strconv.ParseFloat(q, 64)
	}
	got := Joiners(e.s, first, set(arg(td, "down")), set(arg(td, "staged")), at(arg(td, "now")),
		time.Duration(window*float64(time.Second)), time.Duration(quiet*float64(time.Second)))
	if got == nil {
		return "wait\n", nil
	}
	return "join " + joinIDs(got) + "\n", nil
}

// apply applies en, as the log would, and prints what happened.
func (e *env) apply(en meta.Entry) string {
	dec, err := meta.Decode(meta.Encode(en))
	if err != nil {
		return fmt.Sprintf("codec: %v\n", err)
	}
	if err := e.s.Apply(dec); err != nil {
		return fmt.Sprintf("%T refused: %v\n", en, err)
	}
	switch en := en.(type) {
	case meta.RangesMoved:
		return fmt.Sprintf("epoch %d: %d ranges moved\n", e.s.Epoch, len(en.Ranges))
	case meta.FinishChange:
		return fmt.Sprintf("epoch %d: change %d finished\n%s", e.s.Epoch, en.Change, describe(e.s))
	}
	return fmt.Sprintf("epoch %d: %T applied\n", e.s.Epoch, en)
}

func describe(s *meta.State) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "epoch %d", s.Epoch)
	if c := s.Change; c != nil {
		moved := 0
		for _, r := range c.Ranges {
			if r.Moved {
				moved++
			}
		}
		fmt.Fprintf(&sb, "; change %d: %d of %d ranges moved", c.ID, moved, len(c.Ranges))
		if c.Reverting {
			sb.WriteString(", reverting")
		}
	}
	sb.WriteString("\n")
	for _, m := range s.Members {
		fmt.Fprintf(&sb, "  %s %s tokens=%d\n", m.ID, m.State, len(m.Tokens))
	}
	return sb.String()
}

func parseMember(line string) (meta.Member, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return meta.Member{}, fmt.Errorf("empty member line")
	}
	m := meta.Member{ID: ring.NodeID(f[0]), Role: ring.WriteOptimized, Addr: "addr-" + f[0]}
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
			for _, t := range strings.Split(v, ",") {
				n, err := strconv.ParseInt(t, 10, 64)
				if err != nil {
					return m, err
				}
				m.Tokens = append(m.Tokens, ring.Token(n*unit))
			}
			slices.Sort(m.Tokens)
		default:
			return m, fmt.Errorf("unknown member field %q", k)
		}
	}
	return m, nil
}
