package coord

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// transcript drives one request at a time through the coordinator core. Rows are
// written as comma-separated cells "col:value@ts" (col defaults to c), "-" for none.
type transcript struct {
	replicas []Replica
	groups   [][]Replica // when set (groups), writes go to these groups of the replicas
	policy   Policy
	write    *Write
	read     *Read
	digestOf map[ring.NodeID]bool // replicas last asked for a digest
}

func TestCoordinatorTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := &transcript{policy: Uniform{}, digestOf: map[ring.NodeID]bool{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := tr.run(td)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			return out
		})
	})
}

func (tr *transcript) run(td *datadriven.TestData) (string, error) {
	arg := func(key string) string {
		for _, a := range td.CmdArgs {
			if a.Key == key && len(a.Vals) > 0 {
				return a.Vals[0]
			}
		}
		return ""
	}
	level := func() (Level, error) { return ParseLevel(arg("cl")) }
	switch td.Cmd {
	case "policy":
		switch name := arg("name"); name {
		case "uniform":
			tr.policy = Uniform{}
		case "engine-aware":
			tr.policy = EngineAware{}
		case "load-aware":
			tr.policy = LoadAware{}
		default:
			return "", fmt.Errorf("unknown policy %q", name)
		}
		return "", nil
	case "replicas":
		// One replica per line: its ID, then optionally its engine (lsm, btree, memory),
		// "down", "refilling", "lagging", "backlogged" and "latency=<duration>".
		tr.replicas, tr.groups = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			r := Replica{ID: ring.NodeID(f[0]), Up: !slices.Contains(f, "down"), Refilling: slices.Contains(f, "refilling"),
				Lagging: slices.Contains(f, "lagging"), Backlogged: slices.Contains(f, "backlogged")}
			for _, w := range f[1:] {
				if ms, ok := strings.CutPrefix(w, "latency="); ok {
					d, err := time.ParseDuration(ms)
					if err != nil {
						return "", err
					}
					r.Latency = d
				}
			}
			for name, role := range map[string]ring.Role{"lsm": ring.WriteOptimized, "btree": ring.ReadOptimized, "memory": ring.InMemory} {
				if slices.Contains(f, name) {
					r.Role = role
				}
			}
			tr.replicas = append(tr.replicas, r)
		}
		return "", nil
	case "groups":
		// One replica group per line: the IDs of replicas given by the last replicas
		// command. Writes go to the groups until the next replicas command.
		tr.groups = nil
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			var g []Replica
			for _, id := range strings.Fields(line) {
				i := slices.IndexFunc(tr.replicas, func(r Replica) bool { return r.ID == ring.NodeID(id) })
				if i < 0 {
					return "", fmt.Errorf("group member %s is not a replica", id)
				}
				g = append(g, tr.replicas[i])
			}
			tr.groups = append(tr.groups, g)
		}
		return "", nil
	case "write":
		l, err := level()
		if err != nil {
			return "", err
		}
		r, err := parseRow(arg("value"))
		if err != nil {
			return "", err
		}
		var fx []Effect
		m := row.Mutation{Key: []byte("k"), Row: r}
		if tr.groups != nil {
			tr.write, fx = StartWriteGroups(m, l, tr.groups, tr.policy)
		} else {
			tr.write, fx = StartWrite(m, l, tr.replicas, tr.policy)
		}
		tr.read = nil
		return tr.format(fx), nil
	case "read":
		l, err := level()
		if err != nil {
			return "", err
		}
		mode := RepairBackground
		if arg("repair") == "blocking" {
			mode = RepairBlocking
		}
		var fx []Effect
		tr.read, fx = StartRead([]byte("k"), l, tr.replicas, tr.policy, mode)
		tr.write = nil
		return tr.format(fx), nil
	case "respond":
		return tr.respond(ring.NodeID(td.CmdArgs[0].Key), arg("err"), arg("row"))
	case "repaired":
		var err error
		if e := arg("err"); e != "" {
			err = errors.New(e)
		}
		return tr.format(tr.read.OnRepairResponse(ring.NodeID(td.CmdArgs[0].Key), err)), nil
	case "spares":
		// The spares OnSlow would ask now, for the driver to judge first.
		return fmt.Sprintln(tr.read.SlowSpares()), nil
	case "slow":
		if tr.write != nil {
			return tr.format(tr.write.OnSlow()), nil
		}
		return tr.format(tr.read.OnSlow()), nil
	case "status":
		// How the request left its policy's first plan, as the driver's metrics see it.
		if tr.write != nil {
			return fmt.Sprintf("fell-back=%t slowed=%t", tr.write.FellBack(), tr.write.Slowed()), nil
		}
		return fmt.Sprintf("disagreed=%t failures=%d slowed=%d", tr.read.Disagreed(), tr.read.Failures(), tr.read.Slowed()), nil
	case "timeout":
		if tr.write != nil {
			return tr.format(tr.write.OnTimeout()), nil
		}
		return tr.format(tr.read.OnTimeout()), nil
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func (tr *transcript) respond(from ring.NodeID, errText, rowText string) (string, error) {
	var err error
	if errText != "" {
		err = errors.New(errText)
	}
	if tr.write != nil {
		return tr.format(tr.write.OnResponse(from, err)), nil
	}
	resp := ReadResponse{Err: err}
	if err == nil {
		r, perr := parseRow(rowText)
		if perr != nil {
			return "", perr
		}
		found := !r.IsEmpty()
		if tr.digestOf[from] {
			resp.Digest = row.Digest(r, found)
		} else {
			resp.Row, resp.Found = r, found
		}
	}
	return tr.format(tr.read.OnResponse(from, resp)), nil
}

func (tr *transcript) format(fx []Effect) string {
	var b strings.Builder
	for _, e := range fx {
		switch e := e.(type) {
		case SendWrite:
			fmt.Fprintf(&b, "send-write %s %s", e.To, formatRow(e.Mutation.Row))
			if e.Repair {
				b.WriteString(" (repair)")
			}
			if e.Async {
				b.WriteString(" (async)")
			}
		case SendRead:
			kind := "data"
			if e.Digest {
				kind = "digest"
			}
			tr.digestOf[e.To] = e.Digest
			fmt.Fprintf(&b, "send-read %s %s", e.To, kind)
		case StoreHint:
			fmt.Fprintf(&b, "hint %s %s", e.For, formatRow(e.Mutation.Row))
			if e.Deferred {
				b.WriteString(" (deferred)")
			}
		case Reply:
			switch {
			case e.Err != nil:
				fmt.Fprintf(&b, "reply error: %v", e.Err)
			case tr.read != nil && !e.Found:
				b.WriteString("reply not found")
			case tr.read != nil:
				fmt.Fprintf(&b, "reply %s", formatRow(e.Row))
			default:
				b.WriteString("reply ok")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func parseRow(s string) (row.Row, error) {
	var r row.Row
	if s == "" || s == "-" {
		return r, nil
	}
	for _, c := range strings.Split(s, ",") {
		name, rest, ok := strings.Cut(c, ":")
		if !ok {
			name, rest = "c", c
		}
		val, ts, ok := strings.Cut(rest, "@")
		n, err := strconv.ParseInt(ts, 10, 64)
		if !ok || err != nil {
			return r, fmt.Errorf("cell %q: want [col:]value@ts", c)
		}
		r = row.Merge(r, row.Row{Cells: []row.Cell{{Name: []byte(name), Value: []byte(val), Timestamp: n}}})
	}
	return r, nil
}

func formatRow(r row.Row) string {
	if r.IsEmpty() {
		return "-"
	}
	var parts []string
	for _, c := range r.Cells {
		parts = append(parts, fmt.Sprintf("%s:%s@%d", c.Name, c.Value, c.Timestamp))
	}
	return strings.Join(parts, ",")
}

func TestParseLevelAndRequired(t *testing.T) {
	for _, tc := range []struct {
		s    string
		rf   int
		want int
	}{{"one", 3, 1}, {"TWO", 3, 2}, {"quorum", 3, 2}, {"QUORUM", 5, 3}, {"QUORUM", 4, 3}, {"all", 3, 3}} {
		l, err := ParseLevel(tc.s)
		if err != nil || l.Required(tc.rf) != tc.want {
			t.Errorf("%s at RF %d: %v requires %d, want %d", tc.s, tc.rf, err, l.Required(tc.rf), tc.want)
		}
	}
	if _, err := ParseLevel("LOCAL_QUORUM"); err == nil {
		t.Error("LOCAL_QUORUM accepted")
	}
}
