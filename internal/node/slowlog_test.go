package node

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// delayedEngine takes delay over every write.
type delayedEngine struct {
	engine.Engine
	delay time.Duration
}

func (e delayedEngine) Apply(batch []row.Mutation) error {
	time.Sleep(e.delay)
	return e.Engine.Apply(batch)
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// A write slower than the threshold is logged with when each replica answered: here the
// slow one (n2, 300 ms per write), the quick local one (n1) and the one that is down (n3).
// Past the first, at most one line per interval, and the next line counts those skipped.
func TestSlowWritesAreLoggedWithEachReplicasAnswer(t *testing.T) {
	c := newTestCluster(t, coord.Quorum)
	c.down["n3"] = true
	c.handlers["n2"].Engine = delayedEngine{c.handlers["n2"].Engine, 300 * time.Millisecond}
	var out syncBuffer
	c.store.slow = newSlowWrites(150*time.Millisecond, slog.New(slog.NewTextHandler(&out, nil)))
	c.store.slow.every = 0
	write := func(k string) {
		t.Helper()
		if err := c.store.Apply([]row.Mutation{{Key: []byte(k), Row: cell("v", 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	lines := out.lines()
	if len(lines) != 1 {
		t.Fatalf("one slow write logged %d lines: %q", len(lines), lines)
	}
	d := `([0-9.]+[µmn]?s)`
	m := regexp.MustCompile(`msg="slow write" took=` + d + ` replicas="replica n1: ` + d + `, replica n2: ` + d +
		`, replica n3: down" coordinator_own=` + d + ` err=<nil> slow_writes_not_logged=0`).FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("log line %q", lines[0])
	}
	var took, n1, n2 time.Duration
	for i, p := range []*time.Duration{&took, &n1, &n2} {
		var err error
		if *p, err = time.ParseDuration(m[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if n1 >= 150*time.Millisecond || n2 < 300*time.Millisecond || took < n2 {
		t.Errorf("took %v, n1 answered after %v, n2 after %v: want n1 quick, n2 after its 300 ms, the reply after both", took, n1, n2)
	}

	c.store.slow.every = time.Hour
	write("b")
	write("c")
	if lines := out.lines(); len(lines) != 1 {
		t.Fatalf("within the interval, slow writes were logged: %q", lines)
	}
	c.store.slow.every = 0
	write("d")
	if lines := out.lines(); len(lines) != 2 || !strings.Contains(lines[1], "slow_writes_not_logged=2") {
		t.Fatalf("after the interval: %q", lines)
	}
	c.handlers["n2"].Engine = c.handlers["n2"].Engine.(delayedEngine).Engine
	write("e")
	if lines := out.lines(); len(lines) != 2 {
		t.Fatalf("a quick write was logged: %q", lines)
	}
}
