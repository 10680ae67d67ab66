package stream

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replicaOn returns a replica handler over a new engine of kind, closed with the test.
func replicaOn(t *testing.T, kind string) *replica.Handler {
	t.Helper()
	eng, err := catalog.Open(kind, t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return &replica.Handler{Engine: eng}
}

// seeded returns a generator from a fresh seed, printed so that a failure can be re-run.
func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// fill writes n rows to h, keys key00000..., one cell of 40 to 400 random bytes at ts, and
// returns them.
func fill(t *testing.T, h *replica.Handler, rng *rand.Rand, n int, ts int64) []row.Mutation {
	t.Helper()
	var ms []row.Mutation
	for i := range n {
		v := make([]byte, 40+rng.IntN(360))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		ms = append(ms, row.Mutation{Key: fmt.Appendf(nil, "key%05d", i),
			Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: v, Timestamp: ts}}}})
	}
	for len(ms) > 0 {
		k := min(len(ms), 500)
		if err := h.Write(ms[:k]); err != nil {
			t.Fatal(err)
		}
		ms = ms[k:]
	}
	ms = ms[:0:0]
	for i := range n {
		r, err := h.Read(fmt.Appendf(nil, "key%05d", i), false)
		if err != nil || !r.Found {
			t.Fatalf("key%05d not written: %v", i, err)
		}
		ms = append(ms, row.Mutation{Key: fmt.Appendf(nil, "key%05d", i), Row: r.Row})
	}
	return ms
}

// inRange reports whether key's token lies in r, (Start, End], wrapping.
func inRange(r move.Range, key []byte) bool {
	tok := ring.TokenOf(key)
	switch {
	case r.Start < r.End:
		return r.Start < tok && tok <= r.End
	case r.Start == r.End:
		return true
	}
	return tok > r.Start || tok <= r.End
}

// dump returns every row h's engine holds, by client key.
func dump(t *testing.T, h *replica.Handler) map[string]row.Row {
	t.Helper()
	it, err := h.Engine.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]row.Row{}
	for it.Next() {
		_, key, err := ring.SplitEngineKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		r := it.Row()
		out[string(key)] = r.Clone()
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCopied fails unless dst holds exactly the rows of src whose tokens lie in one of
// ranges, each as src has it.
func checkCopied(t *testing.T, src []row.Mutation, dst map[string]row.Row, ranges ...move.Range) {
	t.Helper()
	want := 0
	for _, m := range src {
		in := false
		for _, r := range ranges {
			in = in || inRange(r, m.Key)
		}
		got, ok := dst[string(m.Key)]
		switch {
		case in && !ok:
			t.Fatalf("%s (token %d) in the ranges was not copied", m.Key, ring.TokenOf(m.Key))
		case !in && ok:
			t.Fatalf("%s (token %d) outside the ranges was copied", m.Key, ring.TokenOf(m.Key))
		case in && row.Digest(got, true) != row.Digest(m.Row, true):
			t.Fatalf("%s copied as %+v, want %+v", m.Key, got, m.Row)
		}
		if in {
			want++
		}
	}
	if len(dst) != want {
		t.Fatalf("destination holds %d rows, want %d", len(dst), want)
	}
}

// direct reaches a handler in the same process, counting the pages it serves; hook,
// when set, sees each page served (numbered from 1) before the caller does, and may lose
// it (an error) or change it.
type direct struct {
	h    *replica.Handler
	mu   sync.Mutex
	hook func(call int, req, resp []byte) ([]byte, error)

	calls int
	bytes int64
	lows  [][]byte // each request's Lo
}

func (d *direct) Call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := d.h.Handle(ctx, method, payload)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.calls++
	d.bytes += int64(len(resp))
	n, hook := d.calls, d.hook
	d.mu.Unlock()
	if hook != nil {
		return hook(n, payload, resp)
	}
	return resp, nil
}

func (d *direct) served() (calls int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls, d.bytes
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// config returns a Streamer config pulling from c into sink, with small pages and fast
// retries.
func config(t *testing.T, c Caller, sink Sink) Config {
	return Config{Dir: t.TempDir(), Source: func(ring.NodeID) (Caller, error) { return c, nil }, Sink: sink,
		PageBytes: 8 << 10, Timeout: 5 * time.Second, RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond,
		Logger: quiet()}
}

// sinkFunc is a Sink whose Write is a function.
type sinkFunc func([]row.Mutation) error

func (f sinkFunc) Write(rows []row.Mutation) error { return f(rows) }

// rangeOf returns the range (Start, End] of the ring's fractions a and b (0 to 1).
func rangeOf(a, b float64) move.Range {
	at := func(f float64) ring.Token {
		return ring.Token(float64(ring.MinToken) + f*(float64(ring.MaxToken)-float64(ring.MinToken)))
	}
	return move.Range{Start: at(a), End: at(b)}
}
