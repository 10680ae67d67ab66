package metalog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

func TestPositionOrdersByEpochThenIndex(t *testing.T) {
	for _, c := range []struct {
		p, q  position
		after bool
	}{
		{position{2, 5}, position{1, 9}, true},
		{position{1, 9}, position{2, 5}, false},
		{position{1, 6}, position{1, 5}, true},
		{position{1, 5}, position{1, 5}, false},
		{position{1, 0}, position{0, 0}, true},
	} {
		if got := c.p.after(c.q); got != c.after {
			t.Errorf("%v after %v = %v", c.p, c.q, got)
		}
	}
}

// applyAll applies entries to a fresh state, failing the test on a refusal.
func applyAll(t *testing.T, es ...meta.Entry) *meta.State {
	t.Helper()
	st := &meta.State{}
	for _, e := range es {
		if err := st.Apply(e); err != nil {
			t.Fatalf("%T: %v", e, err)
		}
	}
	return st
}

func bootstrapOf(ms ...ring.NodeID) meta.Bootstrap {
	b := meta.Bootstrap{Strategy: "simple", RF: 1}
	for i, id := range ms {
		m := member(id, i)
		m.Addr = "addr-" + string(id)
		b.Members = append(b.Members, m)
	}
	return b
}

func TestSavedStateRoundTripsAndEveryCutIsAnError(t *testing.T) {
	st := applyAll(t, bootstrapOf("n1", "n2"), register("n3", "a3"), meta.SetVoters{Voters: ids("n1")})
	b := encodeSaved(st, 42)
	got, index, err := decodeSaved(b)
	if err != nil || index != 42 || !bytes.Equal(meta.EncodeState(got), meta.EncodeState(st)) {
		t.Fatalf("round trip: %+v %d %v", got, index, err)
	}
	for i := range b {
		if _, _, err := decodeSaved(b[:i]); !errors.Is(err, errSaved) {
			t.Fatalf("cut to %d bytes: %v", i, err)
		}
	}
	if _, _, err := decodeSaved(append([]byte{savedVersion + 1}, b[1:]...)); !errors.Is(err, errSaved) {
		t.Fatalf("another version: %v", err)
	}
}

func TestOpenRefusesADamagedStateFileAndSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	st := applyAll(t, bootstrapOf("n1"))
	b := encodeSaved(st, 3)
	if err := os.WriteFile(filepath.Join(dir, StateFile), b[:len(b)-2], 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.ID, cfg.Addr, cfg.Listener, cfg.Call = "n1", ln.Addr().String(), ln, (&caller{}).call
	_, err = Open(dir, cfg)
	if !errors.Is(err, errSaved) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("Open with a damaged state file: %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Fatal("a failed Open left its listener open")
	}
}

func TestNextVoterAction(t *testing.T) {
	four := applyAll(t, bootstrapOf("n1", "n2", "n3", "n4"), meta.SetVoters{Voters: ids("n1")})
	for _, c := range []struct {
		name   string
		st     *meta.State
		config []ring.NodeID
		self   ring.NodeID
		want   voterAction
	}{
		{"before the bootstrap entry", &meta.State{}, ids("n1"), "n1", voterAction{}},
		{"the first voter is recorded", applyAll(t, bootstrapOf("n1")), ids("n1"), "n1",
			voterAction{kind: voterRecord, set: ids("n1")}},
		{"then nothing to do", applyAll(t, bootstrapOf("n1"), meta.SetVoters{Voters: ids("n1")}), ids("n1"), "n1", voterAction{}},
		{"add the next chosen voter", four, ids("n1"), "n1", voterAction{kind: voterAdd, id: "n2", addr: "addr-n2"}},
		{"record an addition", four, ids("n1", "n2"), "n1", voterAction{kind: voterRecord, set: ids("n1", "n2")}},
		{"configuration order does not matter", applyAll(t, bootstrapOf("n1", "n2"), meta.SetVoters{Voters: ids("n1", "n2")}),
			ids("n2", "n1"), "n1", voterAction{}},
		{"remove a voter not chosen",
			applyAll(t, bootstrapOf("n1", "n2", "n3", "n4"), meta.SetVoters{Voters: ids("n1", "n2", "n3", "n4")}),
			ids("n1", "n2", "n3", "n4"), "n1", voterAction{kind: voterRemove, id: "n4"}},
		{"the leader to be removed hands over first",
			applyAll(t, bootstrapOf("n1", "n2", "n3", "n4"), meta.SetVoters{Voters: ids("n1", "n2", "n3", "n4")}),
			ids("n1", "n2", "n3", "n4"), "n4", voterAction{kind: voterTransfer, id: "n4"}},
		{"a record the state machine would refuse is skipped (two steps at once)",
			applyAll(t, bootstrapOf("n1", "n2", "n3", "n4", "n5"), meta.SetVoters{Voters: ids("n1")}), ids("n1", "n2", "n3"), "n1",
			voterAction{kind: voterAdd, id: "n4", addr: "addr-n4"}},
		{"a record the state machine would refuse is skipped (a joining voter)",
			applyAll(t, bootstrapOf("n1"), meta.SetVoters{Voters: ids("n1")}, register("n9", "a9")), ids("n1", "n9"), "n1",
			voterAction{kind: voterRemove, id: "n9"}},
	} {
		if got := nextVoterAction(c.st, c.config, c.self); !equalActions(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func equalActions(a, b voterAction) bool {
	return a.kind == b.kind && a.id == b.id && a.addr == b.addr && slices.Equal(a.set, b.set)
}

// metaSentinels are package meta's exported error values by name: the test below fails
// when meta gains one this package does not number.
var metaSentinels = map[string]error{
	"ErrNotBootstrapped": meta.ErrNotBootstrapped, "ErrBootstrapped": meta.ErrBootstrapped,
	"ErrInvalid": meta.ErrInvalid, "ErrMember": meta.ErrMember, "ErrStaleEpoch": meta.ErrStaleEpoch,
	"ErrChangeInFlight": meta.ErrChangeInFlight, "ErrOverlap": meta.ErrOverlap, "ErrNoChange": meta.ErrNoChange,
	"ErrTooFewLive": meta.ErrTooFewLive, "ErrNoSource": meta.ErrNoSource, "ErrTransfers": meta.ErrTransfers,
	"ErrNotMoved": meta.ErrNotMoved, "ErrVoters": meta.ErrVoters, "ErrCorrupt": meta.ErrCorrupt, "ErrACLChanged": meta.ErrACLChanged,
}

func TestEveryMetaErrorHasACode(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../meta", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs["meta"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for _, name := range vs.Names {
					if strings.HasPrefix(name.Name, "Err") && name.IsExported() {
						if _, ok := metaSentinels[name.Name]; !ok {
							t.Errorf("meta.%s has no code in errorCodes (and no entry in metaSentinels)", name.Name)
						}
					}
				}
			}
			return true
		})
	}
	seen := map[uint16]bool{}
	for _, c := range errorCodes {
		if seen[c.code] {
			t.Errorf("code %d is used twice", c.code)
		}
		seen[c.code] = true
	}
	for name, sentinel := range metaSentinels {
		if !slices.ContainsFunc(errorCodes, func(c struct {
			code uint16
			err  error
		}) bool {
			return c.err == sentinel
		}) {
			t.Errorf("meta.%s has no code", name)
		}
	}
}

func TestRefusalsKeepTheirSentinelsAndTextAcrossTheWire(t *testing.T) {
	st := applyAll(t, bootstrapOf("n1"))
	refusal := st.Apply(meta.StartChange{ID: 1, Epoch: 7})
	corrupt := func() error { _, err := meta.Decode([]byte{9}); return err }()
	for _, err := range []error{refusal, corrupt, errNotLeader, ErrTimeout, ErrClosed} {
		wireErr := wireError(err)
		resp, derr := wire.DecodeMetaResponse(wire.AppendMetaResponse(nil, &wire.MetaResponse{Err: wireErr}))
		if derr != nil {
			t.Fatal(derr)
		}
		got := fromWire(resp.Err)
		if got.Error() != err.Error() {
			t.Errorf("%v arrives as %q", err, got)
		}
		for _, c := range errorCodes {
			if errors.Is(err, c.err) != errors.Is(got, c.err) {
				t.Errorf("%v: errors.Is %v is %v here and %v there", err, c.err, errors.Is(err, c.err), errors.Is(got, c.err))
			}
		}
	}
	if !errors.Is(fromWire(wireError(refusal)), meta.ErrStaleEpoch) {
		t.Fatal("a stale-epoch refusal lost its sentinel")
	}
	if got := fromWire(&wire.MetaError{Codes: []uint16{60000}, Message: "from a newer node"}); got.Error() != "from a newer node" {
		t.Fatalf("an unknown code: %v", got)
	}
}

func TestRaftLoggingLevels(t *testing.T) {
	for _, c := range []struct {
		level hclog.Level
		msg   string
		want  slog.Level
	}{
		{hclog.Trace, "anything", slog.LevelDebug},
		{hclog.Info, "entering follower state", slog.LevelDebug},
		{hclog.Info, "entering leader state", slog.LevelInfo},
		{hclog.Warn, "no known peers, aborting election", slog.LevelDebug},
		{hclog.Warn, "failed to contact quorum of nodes, stepping down", slog.LevelWarn},
		{hclog.Error, "failed to heartbeat to", slog.LevelDebug},
		{hclog.Error, "failed to restore snapshot", slog.LevelError},
	} {
		if got := levelOf(c.level, c.msg); got != c.want {
			t.Errorf("%v %q: %v, want %v", c.level, c.msg, got, c.want)
		}
	}
	var buf bytes.Buffer
	l := (&raftLogger{log: slog.New(slog.NewTextHandler(&buf, nil))}).Named("raft").With("peer", "n2")
	l.Warn("failed to contact", "server-id", "n3")
	l.Info("pipelining replication") // Debug: below the handler's level
	if out := buf.String(); !strings.Contains(out, "failed to contact") || !strings.Contains(out, "peer=n2") ||
		!strings.Contains(out, "server-id=n3") || strings.Contains(out, "pipelining") {
		t.Fatalf("logged %q", out)
	}
}

// sink is a raft.SnapshotSink in memory.
type sink struct{ bytes.Buffer }

func (*sink) ID() string    { return "test" }
func (*sink) Cancel() error { return nil }
func (*sink) Close() error  { return nil }

func TestStateMachineAppliesRefusesAndSnapshots(t *testing.T) {
	var published []position
	f := newFSM(func(st *meta.State, index uint64) { published = append(published, position{st.Epoch, index}) })
	apply := func(index uint64, data []byte) applied {
		return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(applied)
	}
	if r := apply(3, meta.Encode(bootstrapOf("n1"))); r.err != nil || r.index != 3 || r.state.Epoch != 1 {
		t.Fatalf("bootstrap: %+v", r)
	}
	if r := apply(4, meta.Encode(meta.StartChange{ID: 1, Epoch: 9})); !errors.Is(r.err, meta.ErrStaleEpoch) || r.state != nil {
		t.Fatalf("a stale change: %+v", r)
	}
	if r := apply(5, []byte{1, 99}); !errors.Is(r.err, meta.ErrCorrupt) {
		t.Fatalf("a corrupt entry: %+v", r)
	}
	if r := apply(6, meta.Encode(register("n2", "a2"))); r.err != nil || r.index != 6 {
		t.Fatalf("register: %+v", r)
	}
	if want := []position{{1, 3}, {1, 6}}; !slices.Equal(published, want) {
		t.Fatalf("published %v, want %v (refused entries publish nothing)", published, want)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	apply(7, meta.Encode(register("n3", "a3"))) // after the snapshot: not in it
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	g := newFSM(func(st *meta.State, index uint64) { published = append(published, position{st.Epoch, index}) })
	if err := g.Restore(io.NopCloser(&s)); err != nil {
		t.Fatal(err)
	}
	st, index := g.current()
	if _, ok := st.Member("n2"); !ok || index != 6 {
		t.Fatalf("restored %+v at %d", st.Members, index)
	}
	if _, ok := st.Member("n3"); ok {
		t.Fatal("the snapshot holds an entry applied after it was taken")
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte{savedVersion}))); !errors.Is(err, errSaved) {
		t.Fatalf("a damaged snapshot: %v", err)
	}
}

var seedFlag = flag.Int64("seed", 0, "the randomized tests' seed (0: from the clock)")

// Carrying out nextVoterAction from random voter sets to the chosen ones: every record is
// accepted by the state machine, the configuration never holds more than one voter over
// the larger of the two sets nor fewer than the smaller, only normal members with an
// address are added, and it ends at ChooseVoters, recorded.
func TestVoterActionsReachTheChosenSetOneRecordedStepAtATime(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := range 300 {
		n := 1 + rng.IntN(9)
		var members []ring.NodeID
		for i := range n {
			members = append(members, ring.NodeID(fmt.Sprintf("n%d", i)))
		}
		b := bootstrapOf(members...)
		for i := range b.Members { // share racks and hosts sometimes
			b.Members[i].Rack = fmt.Sprintf("r%d", rng.IntN(3))
			b.Members[i].Host = fmt.Sprintf("h%d", rng.IntN(n))
		}
		st := applyAll(t, b)
		perm := rng.Perm(n)
		var config []ring.NodeID
		for _, i := range perm[:1+rng.IntN(min(n, meta.MaxVoters))] {
			config = append(config, members[i])
		}
		config = slices.Sorted(slices.Values(config))
		if err := st.Apply(meta.SetVoters{Voters: config}); err != nil {
			t.Fatal(err)
		}
		target := meta.ChooseVoters(st)
		lo, hi := min(len(config), len(target)), max(len(config), len(target))+1
		leader := config[0]
		for step := 0; ; step++ {
			if step > maxVoterActions {
				t.Fatalf("round %d: no end after %d actions (config %v, target %v)", round, step, config, target)
			}
			a := nextVoterAction(st, config, leader)
			switch a.kind {
			case voterNone:
			case voterRecord:
				if err := st.Apply(meta.SetVoters{Voters: a.set}); err != nil {
					t.Fatalf("round %d: recording %v: %v", round, a.set, err)
				}
			case voterTransfer:
				leader = slices.DeleteFunc(slices.Clone(config), func(id ring.NodeID) bool { return id == leader })[0]
			case voterAdd:
				if m, ok := st.Member(a.id); !ok || m.State != meta.Normal || a.addr != m.Addr || slices.Contains(config, a.id) {
					t.Fatalf("round %d: adds %s (%s)", round, a.id, a.addr)
				}
				config = slices.Sorted(slices.Values(append(config, a.id)))
			case voterRemove:
				if a.id == leader || !slices.Contains(config, a.id) {
					t.Fatalf("round %d: removes %s, leader %s, config %v", round, a.id, leader, config)
				}
				config = slices.DeleteFunc(config, func(id ring.NodeID) bool { return id == a.id })
			}
			if len(config) < lo || len(config) > hi {
				t.Fatalf("round %d: %d voters %v, want %d to %d", round, len(config), config, lo, hi)
			}
			if a.kind == voterNone {
				break
			}
		}
		if !slices.Equal(config, target) || !slices.Equal(st.Voters, target) {
			t.Fatalf("round %d: ends at %v recorded %v, want %v", round, config, st.Voters, target)
		}
	}
}
