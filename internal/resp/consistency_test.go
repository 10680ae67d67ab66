package resp

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

// leveledStore is the test store of a cluster: it records the level of every request.
type leveledStore struct {
	*memStore
	mu     sync.Mutex
	levels []string
}

func (l *leveledStore) Levels() []string { return []string{"ONE", "TWO", "QUORUM", "ALL"} }

func (l *leveledStore) record(level string) {
	l.mu.Lock()
	l.levels = append(l.levels, level)
	l.mu.Unlock()
}

func (l *leveledStore) Apply(batch []row.Mutation) error {
	l.record("default")
	return l.memStore.Apply(batch)
}

func (l *leveledStore) Get(key []byte) (row.Row, bool, error) {
	l.record("default")
	return l.memStore.Get(key)
}

func (l *leveledStore) ApplyAt(level string, batch []row.Mutation) error {
	l.record(level)
	return l.memStore.Apply(batch)
}

func (l *leveledStore) GetAt(level string, key []byte) (row.Row, bool, error) {
	l.record(level)
	return l.memStore.Get(key)
}

func TestConsistencyIsPerConnectionAndReachesTheStore(t *testing.T) {
	e := newHandlerEnv(t, Config{})
	ls := &leveledStore{memStore: e.store}
	h, err := NewHandler(Config{Store: ls, Clock: e.clock.hlc()})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	a, b := h.NewSession(), h.NewSession()
	do := func(s *Session, line string) string {
		args, _ := splitArgs(line)
		return e.do(t, s, args)
	}
	for _, step := range []struct {
		s          *Session
		line, want string
	}{
		{a, "KURA.CONSISTENCY", `"DEFAULT"`},
		{a, "KURA.CONSISTENCY all", "OK"},
		{a, "KURA.CONSISTENCY", `"ALL"`},
		{a, "SET k v", "OK"},
		{a, "GET k", `"v"`},
		{b, "GET k", `"v"`},
		{a, "KURA.CONSISTENCY SOME", "ERR unknown consistency level"},
		{a, "KURA.CONSISTENCY DEFAULT", "OK"},
		{a, "GET k", `"v"`},
	} {
		if got := do(step.s, step.line); !strings.Contains(got, step.want) {
			t.Errorf("%s: %q, want %q", step.line, got, step.want)
		}
	}
	if want := []string{"ALL", "ALL", "default", "default"}; !slices.Equal(ls.levels, want) {
		t.Errorf("store saw levels %v, want %v", ls.levels, want)
	}
	// A single node has no levels.
	single := newHandlerEnv(t, Config{})
	if got := single.do(t, single.h.NewSession(), [][]byte{[]byte("KURA.CONSISTENCY"), []byte("ONE")}); !strings.Contains(got, "not part of a cluster") {
		t.Errorf("single node: %q", got)
	}
}

// KURA.TOPOLOGY returns Config.Topology's JSON as one bulk string; a node without one (a
// single node) and a failing one answer errors, and the command takes no arguments.
func TestTopologyReturnsTheClusterLayout(t *testing.T) {
	e := newHandlerEnv(t, Config{})
	layout, fail := `{"replication_factor":3}`, error(nil)
	h, err := NewHandler(Config{Store: e.store, Clock: e.clock.hlc(), Topology: func() ([]byte, error) { return []byte(layout), fail }})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	s := h.NewSession()
	do := func(line string) string {
		args, _ := splitArgs(line)
		return e.do(t, s, args)
	}
	if got, want := do("KURA.TOPOLOGY"), `"{\"replication_factor\":3}"`; got != want {
		t.Errorf("KURA.TOPOLOGY: %s, want %s", got, want)
	}
	if got := do("KURA.TOPOLOGY extra"); !strings.Contains(got, "wrong number of arguments") {
		t.Errorf("KURA.TOPOLOGY extra: %s", got)
	}
	fail = errors.New("no ring yet")
	if got := do("KURA.TOPOLOGY"); !strings.Contains(got, "ERR KURA.TOPOLOGY: no ring yet") {
		t.Errorf("failing topology: %s", got)
	}
	single := newHandlerEnv(t, Config{})
	if got := single.do(t, single.h.NewSession(), [][]byte{[]byte("KURA.TOPOLOGY")}); !strings.Contains(got, "not part of a cluster") {
		t.Errorf("single node: %q", got)
	}
}
