package resp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/engine"
)

// handlerEnv is one transcript's world: a reference store, a controllable clock, a
// handler and named sessions.
type handlerEnv struct {
	store    *memStore
	clock    *testClock
	h        *Handler
	sessions map[string]*Session
	// nodes are more handlers on the same store, as other nodes of a cluster are, each
	// with its own counter shard (run node=NAME); h is node "0".
	cfg   Config
	nodes map[string]*Handler
}

func newHandlerEnv(t testing.TB, cfg Config) *handlerEnv {
	e := &handlerEnv{store: newMemStore(), clock: newTestClock(), sessions: map[string]*Session{}}
	cfg.Store, cfg.Clock, cfg.KeysEstimate = e.store, e.clock.hlc(), e.store.keys
	cfg.Version = "test"
	cfg.Rand = rand.New(rand.NewPCG(1, 2)) // HRANDFIELD's picks, the same every run
	cfg.Ticks = e.clock.read               // commands take the time the clock is advanced
	cfg.Info = func() []InfoSection {
		return []InfoSection{{Name: "Engine", Fields: []InfoField{{"engine", "memstore"}, {"role", "in-memory"}}}}
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.h, e.cfg, e.nodes = h, cfg, map[string]*Handler{"0": h}
	return e
}

// node returns the handler of the named node, created on first use.
func (e *handlerEnv) node(t testing.TB, name string) *Handler {
	if h, ok := e.nodes[name]; ok {
		return h
	}
	cfg := e.cfg
	cfg.ShardID = name
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.nodes[name] = h
	return h
}

func (e *handlerEnv) session(name string) *Session {
	s, ok := e.sessions[name]
	if !ok {
		s = e.h.NewSession()
		e.sessions[name] = s
	}
	return s
}

// do runs one command line and returns the rendered reply, checking that the handler
// wrote exactly one well-formed reply.
func (e *handlerEnv) do(t testing.TB, s *Session, args [][]byte) string {
	out := e.h.Do(nil, args, s)
	r, rest, err := parseReply(out)
	if err != nil || len(rest) != 0 {
		t.Fatalf("%q: reply %q is not one well-formed reply: %v", args, out, err)
	}
	return render(r)
}

func TestHandlerTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/handler", func(t *testing.T, path string) {
		var e *handlerEnv
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if e == nil || td.Cmd == "new" {
				e = newHandlerEnv(t, transcriptConfig(t, td))
			}
			return e.directive(t, td)
		})
	})
}

// transcriptConfig reads the limits and password of a "new" directive.
func transcriptConfig(t *testing.T, td *datadriven.TestData) Config {
	var cfg Config
	if td.Cmd != "new" {
		return cfg
	}
	td.MaybeScanArgs(t, "password", &cfg.Password)
	td.MaybeScanArgs(t, "max-key-bytes", &cfg.MaxKeyBytes)
	td.MaybeScanArgs(t, "max-value-bytes", &cfg.MaxValueBytes)
	td.MaybeScanArgs(t, "max-args", &cfg.MaxArgs)
	td.MaybeScanArgs(t, "keys-limit", &cfg.KeysLimit)
	td.MaybeScanArgs(t, "slowlog-max-len", &cfg.SlowlogMaxLen)
	if td.HasArg("slowlog-threshold") {
		var d string
		td.ScanArgs(t, "slowlog-threshold", &d)
		var err error
		if cfg.SlowlogThreshold, err = time.ParseDuration(d); err != nil {
			td.Fatalf(t, "slowlog-threshold: %v", err)
		}
	}
	return cfg
}

func (e *handlerEnv) directive(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "new":
		return ""
	case "run":
		name, node := "default", "0"
		td.MaybeScanArgs(t, "session", &name)
		td.MaybeScanArgs(t, "node", &node)
		if node != "0" {
			h, s := e.node(t, node), e.sessions[node+"/"+name]
			if s == nil {
				s = h.NewSession()
				e.sessions[node+"/"+name] = s
			}
			saved := e.h
			e.h = h
			defer func() { e.h = saved }()
			return e.run(t, s, td.Input)
		}
		return e.run(t, e.session(name), td.Input)
	case "advance":
		var ms int64
		td.ScanArgs(t, "ms", &ms)
		e.clock.advance(ms * microsPerMilli)
		return ""
	case "dump":
		var key string
		td.ScanArgs(t, "key", &key)
		return e.store.dump(key, testEpoch)
	case "slow-store":
		var ms int64
		td.ScanArgs(t, "ms", &ms)
		e.store.setDelay(func() { e.clock.advance(ms * microsPerMilli) })
		return ""
	case "fail-store":
		var kind string
		td.ScanArgs(t, "err", &kind)
		e.store.setFail(storeErrors[kind])
		return ""
	}
	td.Fatalf(t, "unknown directive %q", td.Cmd)
	return ""
}

var storeErrors = map[string]error{
	"none":    nil,
	"closed":  fmt.Errorf("memstore: %w", engine.ErrClosed),
	"corrupt": fmt.Errorf("memstore: %w", engine.ErrCorrupt),
	"io":      errors.New("memstore: disk on fire"),
}

// run executes each input line (lines starting with # are comments) and prints the line
// and its reply.
func (e *handlerEnv) run(t *testing.T, s *Session, input string) string {
	var b strings.Builder
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args, err := splitArgs(line)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "> %s\n%s\n", line, e.do(t, s, args))
	}
	return b.String()
}
