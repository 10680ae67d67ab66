package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// flaky answers through h, failing the calls whose numbers are in fail.
type flaky struct {
	h     *replica.Handler
	calls int
	fail  map[int]bool
}

func (f *flaky) Call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	f.calls++
	if f.fail[f.calls] {
		return nil, errors.New("connection reset")
	}
	return f.h.Handle(ctx, method, payload)
}

func handler(t *testing.T) *replica.Handler {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return &replica.Handler{Engine: eng}
}

// A range is copied whole, page by page, and a failed page is asked again from where it
// stopped; a source that fails and has left the ring is skipped; a stop ends the retries.
func TestPullCopiesARangeRetryingFailedPages(t *testing.T) {
	src, dst := handler(t), handler(t)
	var ms []row.Mutation
	for i := range 50 {
		ms = append(ms, row.Mutation{Key: fmt.Appendf(nil, "k%03d", i),
			Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 1}}}})
	}
	if err := src.Write(ms); err != nil {
		t.Fatal(err)
	}
	f := &flaky{h: src, fail: map[int]bool{2: true}}
	gone := false
	p := &Puller{Source: func(ring.NodeID) (Caller, error) { return f, nil }, Gone: func(ring.NodeID) bool { return gone },
		Sink: dst, PageRows: 16, PageBytes: 1 << 20, Timeout: time.Second, Retry: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
	rows, ok := p.Pull("n2", ring.KeyRange{}, nil)
	if !ok || rows != 50 || f.calls != 5 { // pages of 16, 16 (failed, then again), 16, 2
		t.Fatalf("pulled %d rows (ok %v) in %d calls; want 50 in 5", rows, ok, f.calls)
	}
	for _, m := range ms {
		if r, err := dst.Read(m.Key, false); err != nil || !r.Found {
			t.Fatalf("%s not copied: %v", m.Key, err)
		}
	}

	f = &flaky{h: src, fail: map[int]bool{1: true, 2: true}}
	gone = true
	if rows, ok := p.Pull("n2", ring.KeyRange{}, nil); !ok || rows != 0 || f.calls != 1 {
		t.Fatalf("a source gone: %d rows, ok %v, %d calls; want it skipped after one", rows, ok, f.calls)
	}
	gone = false
	stop := make(chan struct{})
	close(stop)
	if _, ok := p.Pull("n2", ring.KeyRange{}, stop); ok {
		t.Fatal("a pull retrying a failed page went on after stop")
	}
}
