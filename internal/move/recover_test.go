package move

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/ring"
)

// recoverEnv is one re-replication transcript's cluster.
//
//	fabric [read=RATE] [write=RATE] [nic=RATE] [free=SIZE]   (defaults for the nodes)
//	<id> host=H rack=R engine=lsm|btree|memory [read=RATE] [write=RATE] [send=RATE] [recv=RATE] [free=SIZE] [tokens=N]
//	uplink <rack> up=RATE down=RATE
//
// describes the nodes (one per line) and the racks' uplinks; rates and sizes are decimal
// (65MB is 65e6 bytes, 1.25GB/s... written 1.25GB). Every node draws random tokens (tokens,
// default 4) from one seeded generator, in order, as --token-allocation=random does.
//
//	lose <ids> rf=N placement=NAME data=SIZE [down=<ids>]
//
// takes the nodes out of the ring (removenode: they are dead) and prints the recovery: the
// copies, what each may go to, the bound.
//
//	schedule scheduler=kura|hdfs|ring|ring-priority [list]
//
// schedules the recovery and prints per-node loads in seconds at full rate against the
// bound, and with list every copy.
type recoverEnv struct {
	fabric   Fabric
	tokens   map[ring.NodeID]int
	recovery *Recovery
	change   Change
}

func TestRecoverTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/recover", func(t *testing.T, path string) {
		e := &recoverEnv{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.run(td)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (e *recoverEnv) run(td *datadriven.TestData) (string, error) {
	args := map[string]string{}
	var ids []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 {
			ids = append(ids, strings.Split(a.Key, ",")...)
			continue
		}
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	switch td.Cmd {
	case "fabric":
		return e.parseFabric(args, td.Input)
	case "lose":
		return e.lose(ids, args)
	case "schedule":
		return e.schedule(args, td.HasArg("list"))
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func (e *recoverEnv) parseFabric(defaults map[string]string, input string) (string, error) {
	e.fabric, e.tokens = Fabric{}, map[ring.NodeID]int{}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "uplink" {
			u := Uplink{Rack: f[1]}
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				x, err := parseDecimal(v)
				if err != nil {
					return "", err
				}
				switch k {
				case "up":
					u.UpBps = x
				case "down":
					u.DownBps = x
				default:
					return "", fmt.Errorf("uplink %s: unknown attribute %q", u.Rack, k)
				}
			}
			e.fabric.Uplinks = append(e.fabric.Uplinks, u)
			continue
		}
		h, tokens, err := parseHardware(f, defaults)
		if err != nil {
			return "", err
		}
		e.fabric.Nodes = append(e.fabric.Nodes, h)
		e.tokens[h.ID] = tokens
	}
	var sb strings.Builder
	for _, h := range e.fabric.Nodes {
		fmt.Fprintf(&sb, "%s %s/%s %s: read %s/s write %s/s send %s/s recv %s/s free %s\n", h.ID, h.Rack, h.Host, engineName(h.Role),
			fmtDecimal(h.DiskReadBps), fmtDecimal(h.DiskWriteBps), fmtDecimal(h.NICSendBps), fmtDecimal(h.NICRecvBps), fmtDecimal(float64(h.FreeBytes)))
	}
	for _, u := range e.fabric.Uplinks {
		fmt.Fprintf(&sb, "rack %s: up %s/s down %s/s\n", u.Rack, fmtDecimal(u.UpBps), fmtDecimal(u.DownBps))
	}
	return sb.String(), nil
}

// parseHardware reads "<id> host=H rack=R engine=E [read=..] [write=..] [send=..] [recv=..] [free=..] [tokens=N]".
func parseHardware(f []string, defaults map[string]string) (Hardware, int, error) {
	h := Hardware{ID: ring.NodeID(f[0]), Host: f[0], Rack: "r1", Role: ring.WriteOptimized}
	attrs := map[string]string{"read": "100MB", "write": "100MB", "nic": "125MB", "free": "1TB", "tokens": "4"}
	maps.Copy(attrs, defaults)
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		attrs[k] = v
	}
	for _, k := range []string{"send", "recv"} {
		if _, ok := attrs[k]; !ok {
			attrs[k] = attrs["nic"]
		}
	}
	tokens := 0
	for k, v := range attrs {
		var err error
		var x float64
		switch k {
		case "host":
			h.Host = v
		case "rack":
			h.Rack = v
		case "engine":
			role, ok := map[string]ring.Role{"lsm": ring.WriteOptimized, "btree": ring.ReadOptimized, "memory": ring.InMemory}[v]
			if !ok {
				return h, 0, fmt.Errorf("%s: unknown engine %q", h.ID, v)
			}
			h.Role = role
		case "tokens":
			tokens, err = strconv.Atoi(v)
		case "nic":
		default:
			x, err = parseDecimal(v)
			switch k {
			case "read":
				h.DiskReadBps = x
			case "write":
				h.DiskWriteBps = x
			case "send":
				h.NICSendBps = x
			case "recv":
				h.NICRecvBps = x
			case "free":
				h.FreeBytes = int64(x)
			default:
				return h, 0, fmt.Errorf("%s: unknown attribute %q", h.ID, k)
			}
		}
		if err != nil {
			return h, 0, fmt.Errorf("%s: %s: %w", h.ID, k, err)
		}
	}
	return h, tokens, nil
}

// lose builds the ring (random tokens, in fabric order, from one seed), takes ids out of it
// and prints the recovery.
func (e *recoverEnv) lose(ids []string, args map[string]string) (string, error) {
	rf, err := strconv.Atoi(args["rf"])
	if err != nil {
		return "", fmt.Errorf("rf: %w", err)
	}
	strategy, err := ring.StrategyByName(args["placement"])
	if err != nil {
		return "", err
	}
	data, err := parseDecimal(args["data"])
	if err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	taken := map[ring.Token]bool{}
	var current, target []ring.Node
	lost := map[ring.NodeID]bool{}
	for _, id := range ids {
		lost[ring.NodeID(id)] = true
	}
	for _, h := range e.fabric.Nodes {
		n := ring.Node{ID: h.ID, Host: h.Host, Rack: h.Rack, Role: h.Role, Tokens: ring.RandomTokens(rng, e.tokens[h.ID], taken)}
		for _, tk := range n.Tokens {
			taken[tk] = true
		}
		current = append(current, n)
		if !lost[h.ID] {
			target = append(target, n)
		}
	}
	cur, err := ring.New(current)
	if err != nil {
		return "", err
	}
	tgt, err := ring.New(target)
	if err != nil {
		return "", err
	}
	down := map[ring.NodeID]bool{}
	for id := range lost {
		down[id] = true
	}
	for _, id := range strings.Split(args["down"], ",") {
		if id != "" {
			down[ring.NodeID(id)] = true
		}
	}
	e.change = Change{Current: cur, Target: tgt, Strategy: strategy, RF: rf, Sizes: Uniform(int64(data)), Down: down}
	r, err := RecoveryFromChange(e.change, e.fabric)
	if err != nil {
		return "", err
	}
	e.recovery = r
	return describeRecovery(r)
}

func describeRecovery(r *Recovery) (string, error) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d copies, %s", len(r.Copies), fmtDecimal(float64(r.CopyBytes())))
	for _, nd := range r.Short {
		fmt.Fprintf(&sb, "; %s short of %d (no live peer, or no node may take it)", nd.Range, nd.Missing)
	}
	sb.WriteString("\n")
	// Which destinations the rules allow, summarized: copies by their number of candidates.
	for i, c := range r.Copies {
		mark := ""
		if c.Relaxed {
			mark = " (rack/role rule dropped)"
		}
		fmt.Fprintf(&sb, "copy %d %s %s: from %s to %s%s\n", i, c.Range, fmtDecimal(float64(c.Bytes)), names(c.Sources), names(r.Candidates(i)), mark)
	}
	b, err := BoundRecovery(r)
	if err != nil {
		return "", err
	}
	exact := "exact"
	if !b.Exact {
		exact = "a lower bound on the relaxation"
	}
	fmt.Fprintf(&sb, "bound %.2f s (%s), whole ranges %.2f s; set by %s\n", b.Seconds, exact, b.WholeSeconds, strings.Join(b.Limits, ", "))
	return sb.String(), nil
}

func (e *recoverEnv) schedule(args map[string]string, list bool) (string, error) {
	if e.recovery == nil {
		return "", fmt.Errorf("no recovery: lose a node first")
	}
	s, err := schedulerByName(args["scheduler"], 7)
	if err != nil {
		return "", err
	}
	sch, err := s.Schedule(e.recovery)
	if err != nil {
		return "", err
	}
	if err := Check(e.recovery, sch); err != nil {
		return "", err
	}
	if err := checkRestores(e.change, e.fabric, e.recovery, sch); err != nil {
		return "", err
	}
	return formatSchedule(e.recovery, sch, list)
}

// schedulerByName returns a scheduler of the tests; hdfs draws from a generator of seed.
func schedulerByName(name string, seed uint64) (Scheduler, error) {
	switch name {
	case "kura":
		return Kura{}, nil
	case "hdfs":
		return HDFSDefault{Rand: rand.New(rand.NewPCG(seed, 1))}, nil
	case "ring":
		return RingScheme{}, nil
	case "ring-priority":
		return RingScheme{Priority: true}, nil
	}
	return nil, fmt.Errorf("unknown scheduler %q", name)
}

func formatSchedule(r *Recovery, s *Schedule, list bool) (string, error) {
	b, err := BoundRecovery(r)
	if err != nil {
		return "", err
	}
	l := LoadOf(r, s)
	var sb strings.Builder
	fmt.Fprintf(&sb, "load %.2f s = %.3fx the bound %.2f s\n", l.Seconds, l.Seconds/b.Seconds, b.Seconds)
	if list {
		for k, a := range s.Order {
			c := r.Copies[a.Copy]
			fmt.Fprintf(&sb, "%d: copy %d %s %s -> %s %s\n", k, a.Copy, c.Range, a.Source, a.Destination, fmtDecimal(float64(c.Bytes)))
		}
	}
	sb.WriteString("node send receive streams\n")
	for _, h := range r.Fabric.Nodes {
		if r.Down[h.ID] {
			continue
		}
		st := s.NodeStreams(h.ID)
		fmt.Fprintf(&sb, "%s %s %.2f s, %s %.2f s, %s/%s\n", h.ID, fmtDecimal(float64(l.Sent[h.ID])), l.Send[h.ID],
			fmtDecimal(float64(l.Received[h.ID])), l.Receive[h.ID], limit(st.Send), limit(st.Receive))
	}
	for _, rk := range slices.Sorted(maps.Keys(l.Up)) {
		fmt.Fprintf(&sb, "rack %s up %.2f s, streams %s\n", rk, l.Up[rk], limit(s.RackStreams[rk].Send))
	}
	for _, rk := range slices.Sorted(maps.Keys(l.Down)) {
		fmt.Fprintf(&sb, "rack %s down %.2f s, streams %s\n", rk, l.Down[rk], limit(s.RackStreams[rk].Receive))
	}
	return sb.String(), nil
}

func limit(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// parseDecimal reads 65MB, 1.25GB, 1TB, 12KB or a plain number (decimal units).
func parseDecimal(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}, {"", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			x, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("size %q: %w", s, err)
			}
			return x * u.scale, nil
		}
	}
	return 0, fmt.Errorf("size %q", s)
}

// fmtDecimal prints bytes in decimal units with three significant digits.
func fmtDecimal(x float64) string {
	for _, u := range []struct {
		unit  string
		scale float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if x >= u.scale {
			return strconv.FormatFloat(x/u.scale, 'g', 3, 64) + " " + u.unit
		}
	}
	return strconv.FormatFloat(x, 'g', 3, 64) + " B"
}
