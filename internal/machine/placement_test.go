package machine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// The cluster metadata's placement is a Placement.
var _ Placement = (*meta.Placement)(nil)

// fakePlacement is a placement written range by range, as a transcript gives it.
type fakePlacement struct{ ranges []fakeRange } // in order of their ends

// fakeRange is one range: its last token, its replica set and, while it moves, the set
// it moves to and whether it has moved (as meta.RangeState).
type fakeRange struct {
	end      ring.Token
	old, new []ring.NodeID
	moved    bool
}

func (p *fakePlacement) at(t ring.Token) fakeRange {
	i, _ := slices.BinarySearchFunc(p.ranges, t, func(r fakeRange, t ring.Token) int { return cmp.Compare(r.end, t) })
	return p.ranges[i%len(p.ranges)]
}

func (p *fakePlacement) WriteGroups(t ring.Token) [][]ring.NodeID {
	switch r := p.at(t); {
	case r.new == nil:
		return [][]ring.NodeID{slices.Clone(r.old)}
	case r.moved:
		return [][]ring.NodeID{slices.Clone(r.new)}
	default:
		return [][]ring.NodeID{slices.Clone(r.old), slices.Clone(r.new)}
	}
}

func (p *fakePlacement) ReadSet(t ring.Token) []ring.NodeID { return p.WriteGroups(t)[0] }

func (p *fakePlacement) RangeEnds() []ring.Token {
	var out []ring.Token
	for _, r := range p.ranges {
		out = append(out, r.end)
	}
	return out
}

// placementTranscript drives one node, n1, through membership views, placements and
// requests, one request at a time.
type placementTranscript struct {
	n       *Node
	members []cluster.Member
	write   *WriteOp
}

// Transcripts of writes, reads, scans' spans and leaders under a placement: a range
// moving between replica sets is written to both and acknowledged once the level is met
// in each, read from its current set, and a down replica of either set gets a hint.
func TestPlacementTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := &placementTranscript{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := tr.run(td)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			return out
		})
	})
}

func parseToken(s string) (ring.Token, error) {
	switch s {
	case "max":
		return ring.MaxToken, nil
	case "min":
		return ring.MinToken, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return ring.Token(v), err
}

// keyIn returns a key whose token is in the range ending at end of p's ranges.
func keyIn(ends []ring.Token, end ring.Token) []byte {
	for i := 0; ; i++ {
		key := fmt.Appendf(nil, "k%d", i)
		j, _ := slices.BinarySearch(ends, ring.TokenOf(key))
		if ends[j%len(ends)] == end {
			return key
		}
	}
}

func (tr *placementTranscript) run(td *datadriven.TestData) (string, error) {
	arg := func(key string) string {
		for _, a := range td.CmdArgs {
			if a.Key == key && len(a.Vals) > 0 {
				return a.Vals[0]
			}
		}
		return ""
	}
	lines := func() [][]string {
		var out [][]string
		for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				out = append(out, f)
			}
		}
		return out
	}
	switch td.Cmd {
	case "node":
		// A new node n1 under a routing policy (uniform unless policy=), RF 3 by the
		// gossip ring.
		name := arg("policy")
		if name == "" {
			name = "uniform"
		}
		p, err := coord.PolicyByName(name)
		if err != nil {
			return "", err
		}
		tr.n = New(Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: p, Timeout: time.Second})
		return "", nil
	case "members":
		// One member per line: its ID, then "down", an engine (lsm, btree, memory). Each
		// owns one token on the gossip ring, 1000 apart in the order given.
		return "", tr.setMembers(lines())
	case "placement":
		// One range per line: "<end>: <replicas>", or "<end>: <old> -> <new>" for a
		// range moving, with "moved" at the end once it has; ends in order. With no
		// lines, placement by the gossip ring again.
		if strings.TrimSpace(td.Input) == "" {
			return "", tr.n.SetPlacement(0, nil)
		}
		p, err := parsePlacement(lines())
		if err != nil {
			return "", err
		}
		epoch, err := strconv.ParseUint(arg("epoch"), 10, 64)
		if err != nil {
			return "", err
		}
		return "", tr.n.SetPlacement(epoch, p)
	case "write":
		key, err := tr.key(arg("range"))
		if err != nil {
			return "", err
		}
		level, err := coord.ParseLevel(arg("cl"))
		if err != nil {
			return "", err
		}
		tr.write = &WriteOp{}
		m := row.Mutation{Key: key, Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}}
		return format(tr.n.StartWrite(tr.write, t0, m, level)), nil
	case "answer":
		var err error
		if e := arg("err"); e != "" {
			err = errors.New(e)
		}
		return format(tr.write.Answer(t0, ring.NodeID(td.CmdArgs[0].Key), err)), nil
	case "timeout":
		return format(tr.write.Timer(tr.write.Deadline())), nil
	case "read":
		key, err := tr.key(arg("range"))
		if err != nil {
			return "", err
		}
		level, err := coord.ParseLevel(arg("cl"))
		if err != nil {
			return "", err
		}
		return format(tr.n.StartRead(&ReadOp{}, t0, key, level)), nil
	case "sets":
		// What the node gives a key of the range: its epoch, its replica set (the read
		// set) with the failure detector's opinion, and its leaders.
		key, err := tr.key(arg("range"))
		if err != nil {
			return "", err
		}
		var set []string
		for _, r := range tr.n.Replicas(key) {
			s := string(r.ID)
			if !r.Up {
				s += "(down)"
			}
			set = append(set, s)
		}
		return fmt.Sprintf("epoch %d\nreplicas %s\nleaders %s\n", tr.n.Epoch(), strings.Join(set, " "), joinIDs(tr.n.Leaders(key))), nil
	case "spans":
		// The ranges a scan reads one by one (RingView), with each one's replica set.
		var b strings.Builder
		rv := tr.n.RingView()
		r := rv.Ring()
		for i := range r.RangeCount() {
			fmt.Fprintf(&b, "(%s, %s] %s\n", tokenName(r.RangeStart(i)), tokenName(r.RangeEnd(i)), joinIDs(idsOf(rv.Replicas(i))))
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

// setMembers gives the node a view of members, one per line as the members command
// takes them.
func (tr *placementTranscript) setMembers(lines [][]string) error {
	tr.members = nil
	var nodes []ring.Node
	for i, f := range lines {
		m := cluster.Member{ID: ring.NodeID(f[0]), Up: !slices.Contains(f, "down"), Status: cluster.Normal,
			Tokens: []ring.Token{ring.Token(1000 * i)}, Host: "h-" + f[0]}
		for name, role := range map[string]ring.Role{"lsm": ring.WriteOptimized, "btree": ring.ReadOptimized, "memory": ring.InMemory} {
			if slices.Contains(f, name) {
				m.Role = role
			}
		}
		tr.members = append(tr.members, m)
		nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Role: m.Role, Tokens: m.Tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		return err
	}
	tr.n.SetView(tr.members, r)
	return nil
}

// parsePlacement parses ranges, one per line as the placement command takes them.
func parsePlacement(lines [][]string) (*fakePlacement, error) {
	p := &fakePlacement{}
	for _, f := range lines {
		end, err := parseToken(strings.TrimSuffix(f[0], ":"))
		if err != nil {
			return nil, err
		}
		r := fakeRange{end: end, moved: f[len(f)-1] == "moved"}
		ids := f[1:]
		if r.moved {
			ids = ids[:len(ids)-1]
		}
		arrow := slices.Index(ids, "->")
		if arrow < 0 {
			arrow = len(ids)
		} else {
			r.new = toIDs(ids[arrow+1:])
		}
		r.old = toIDs(ids[:arrow])
		p.ranges = append(p.ranges, r)
	}
	return p, nil
}

// key returns a key in the range ending at end, of the node's current ranges.
func (tr *placementTranscript) key(end string) ([]byte, error) {
	t, err := parseToken(end)
	if err != nil {
		return nil, err
	}
	r := tr.n.RingView().Ring()
	var ends []ring.Token
	for i := range r.RangeCount() {
		ends = append(ends, r.RangeEnd(i))
	}
	if !slices.Contains(ends, t) {
		return nil, fmt.Errorf("no range ends at %s (ends %v)", end, ends)
	}
	return keyIn(ends, t), nil
}

func tokenName(t ring.Token) string {
	switch t {
	case ring.MaxToken:
		return "max"
	case ring.MinToken:
		return "min"
	}
	return strconv.FormatInt(int64(t), 10)
}

func toIDs(fields []string) []ring.NodeID {
	out := make([]ring.NodeID, len(fields))
	for i, f := range fields {
		out[i] = ring.NodeID(f)
	}
	return out
}

func joinIDs(ids []ring.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// format writes a Ready as a transcript shows it.
func format(r Ready) string {
	var b strings.Builder
	for _, e := range r.Effects {
		switch e := e.(type) {
		case coord.SendWrite:
			fmt.Fprintf(&b, "send-write %s", e.To)
			if e.Async {
				b.WriteString(" (async)")
			}
		case coord.SendRead:
			kind := "data"
			if e.Digest {
				kind = "digest"
			}
			fmt.Fprintf(&b, "send-read %s %s", e.To, kind)
		case coord.StoreHint:
			fmt.Fprintf(&b, "hint %s", e.For)
			if e.Deferred {
				b.WriteString(" (deferred)")
			}
		}
		b.WriteString("\n")
	}
	if r.Replied {
		if r.Reply.Err != nil {
			fmt.Fprintf(&b, "reply error: %v\n", r.Reply.Err)
		} else {
			b.WriteString("reply ok\n")
		}
	}
	return b.String()
}

// Placements and membership views replaced on two goroutines while others run requests:
// neither replacement loses the other's part, a request sees an epoch no older than one
// it saw before, and a key's replica set is the placement's or the ring's. Run with
// -race.
func TestPlacementsAndViewsReplaceEachOtherUnderLoad(t *testing.T) {
	n := New(Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: coord.Uniform{}, Timeout: time.Second})
	r := fourNodeRing(t)
	n.SetView(fourMembers(true), r)
	ref := New(Config{Self: "n1", Strategy: ring.Simple{}, ReplicationFactor: 3, Policy: coord.Uniform{}})
	ref.SetView(fourMembers(true), r) // the gossip ring's sets
	moving, err := parsePlacement([][]string{{"0:", "n1", "n2", "n3", "->", "n2", "n3", "n4"}, {"max:", "n1", "n2", "n3"}})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for e := range uint64(rounds) {
			if err := n.SetPlacement(e+1, moving); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range rounds {
			n.SetView(fourMembers(i%2 == 1), r)
		}
	}()
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var last uint64
			var op WriteOp
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := n.Epoch()
				if e < last {
					t.Errorf("epoch went back from %d to %d", last, e)
					return
				}
				last = e
				key := fmt.Appendf(nil, "k%d", i%64)
				got, placed, gossip := joinIDs(idsOf(n.Replicas(key))), "n1 n2 n3", joinIDs(idsOf(ref.Replicas(key)))
				if got != placed && (e > 0 || got != gossip) {
					t.Errorf("key %s at epoch %d: replicas %s, want %s (or, before a placement, %s)", key, e, got, placed, gossip)
					return
				}
				n.StartWrite(&op, t0, row.Mutation{Key: key}, coord.One)
				n.RingView().Replicas(0)
				n.Leaders(key)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if e := n.Epoch(); e != rounds {
		t.Fatalf("epoch %d after the last placement, %d", e, rounds)
	}
	if m, _ := n.Member("n4"); !m.Up {
		t.Fatal("the last view (n4 up) was lost")
	}
}

func idsOf(set []coord.Replica) []ring.NodeID {
	out := make([]ring.NodeID, len(set))
	for i, r := range set {
		out[i] = r.ID
	}
	return out
}

// fourMembers are n1 to n4, up but for n4 unless n4Up, a token each 1000 apart.
func fourMembers(n4Up bool) []cluster.Member {
	var out []cluster.Member
	for i, id := range []ring.NodeID{"n1", "n2", "n3", "n4"} {
		out = append(out, cluster.Member{ID: id, Up: id != "n4" || n4Up, Status: cluster.Normal, Tokens: []ring.Token{ring.Token(1000 * i)}})
	}
	return out
}

// fourNodeRing is fourMembers' ring.
func fourNodeRing(t *testing.T) *ring.Ring {
	var nodes []ring.Node
	for _, m := range fourMembers(true) {
		nodes = append(nodes, ring.Node{ID: m.ID, Tokens: m.Tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
