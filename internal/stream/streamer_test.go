package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/replica"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// A transfer copies exactly the rows whose tokens lie in its range, on every engine: a
// range inside the token space (one engine key range) and one that wraps past the end
// (two), each into its own destination, page by page; and reports them complete.
func TestTransferCopiesExactlyItsRangeOnEveryEngine(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	for _, kind := range catalog.Names {
		t.Run(kind, func(t *testing.T) {
			src := replicaOn(t, kind)
			rows := fill(t, src, rng, 1200, now)
			for _, r := range []move.Range{rangeOf(0.2, 0.55), rangeOf(0.8, 0.1)} {
				dst := replicaOn(t, kind)
				c := &direct{h: src}
				s, err := New(config(t, c, dst))
				if err != nil {
					t.Fatal(err)
				}
				j := Job{ID: TransferID{Change: 7, Index: 1}, Transfer: move.Transfer{Range: r, Source: "n1", Destination: "n4"}}
				if err := s.Run(context.Background(), j); err != nil {
					t.Fatal(err)
				}
				checkCopied(t, rows, dump(t, dst), r)
				done, err := s.Completed(7)
				if err != nil || len(done) != 1 || done[0] != j.ID {
					t.Fatalf("completed %v, %v; want [7/1]", done, err)
				}
				p := s.Peers()["n1"]
				if calls, bytes := c.served(); p.Pages != int64(calls) || p.Bytes != bytes || p.Ranges != 1 || p.UncheckedPages != 0 || calls < 10 {
					t.Fatalf("peer counters %+v for %d pages of %d bytes", p, calls, bytes)
				}
				// A completed transfer is not run again.
				if err := s.Run(context.Background(), j); err != nil {
					t.Fatal(err)
				}
				if calls, _ := c.served(); int64(calls) != p.Pages {
					t.Fatalf("a completed transfer asked %d more pages", calls-int(p.Pages))
				}
			}
		})
	}
}

// Writes that reach the destination while a range streams into it, newer than the
// streamed rows, survive the pages that arrive after them: values and tombstones (cell
// and row), for keys of the page being applied and of pages still to come, some of them
// flushed to disk before the stream's rows arrive above them; on the lsm engine, where a
// write is a merge operand, and the others. A write older than the source's row loses.
func TestWritesDuringTheStreamWinOverStreamedRows(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	for _, kind := range catalog.Names {
		t.Run(kind, func(t *testing.T) {
			src, dst := replicaOn(t, kind), replicaOn(t, kind)
			rows := fill(t, src, rng, 600, now)
			newer := map[string]row.Row{}
			for i, m := range rows {
				switch i % 4 {
				case 0:
					newer[string(m.Key)] = row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("newer"), Timestamp: now + 10}}}
				case 1:
					newer[string(m.Key)] = row.Row{Cells: []row.Cell{{Name: []byte("c"), Timestamp: now + 10, Tombstone: true}}}
				case 2:
					newer[string(m.Key)] = row.Row{Deleted: now + 10}
				}
			}
			older := row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("older"), Timestamp: now - 10}}}
			pages := 0
			sink := sinkFunc(func(ms []row.Mutation) error {
				pages++
				if pages == 2 { // the writes arrive while the second page is being applied
					var ws []row.Mutation
					for k, r := range newer {
						ws = append(ws, row.Mutation{Key: []byte(k), Row: r})
					}
					ws = append(ws, row.Mutation{Key: rows[3].Key, Row: older})
					if err := dst.Write(ws); err != nil {
						return err
					}
					if err := dst.Engine.Flush(); err != nil {
						return err
					}
				}
				return dst.Write(ms)
			})
			s, err := New(config(t, &direct{h: src}, sink))
			if err != nil {
				t.Fatal(err)
			}
			whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
			if err := s.Run(context.Background(), Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}); err != nil {
				t.Fatal(err)
			}
			if pages < 5 {
				t.Fatalf("%d pages: the writes did not arrive mid-stream", pages)
			}
			for _, m := range rows {
				r, err := dst.Read(m.Key, false)
				if err != nil || !r.Found {
					t.Fatalf("%s: %v", m.Key, err)
				}
				want := m.Row
				if n, ok := newer[string(m.Key)]; ok {
					want = row.Merge(m.Row, n)
				}
				got := r.Row.Visible(now)
				if w := want.Visible(now); len(got) != len(w) || len(got) == 1 && string(got[0].Value) != string(w[0].Value) {
					t.Fatalf("%s reads %+v, want %+v", m.Key, r.Row, want)
				}
			}
		})
	}
}

// A destination stopped mid-transfer (its context cancelled after some pages, its
// engine closed and reopened) resumes each transfer from its progress file: the bytes
// asked again are at most a page per transfer in flight, and transfers recorded complete
// are not asked again.
func TestRestartedDestinationResumesWhereItStopped(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src := replicaOn(t, "memory")
	rows := fill(t, src, rng, 3000, now)
	transfers := []move.Transfer{
		{Range: rangeOf(0.0, 0.05), Source: "s0", Destination: "n9"},
		{Range: rangeOf(0.05, 0.4), Source: "s1", Destination: "n9"},
		{Range: rangeOf(0.4, 0.7), Source: "s2", Destination: "n9"},
		{Range: rangeOf(0.7, 0.0), Source: "s3", Destination: "n9"}, // wraps: two key ranges
	}
	jobs := Jobs(3, transfers, "n9")
	const pageBytes = 8 << 10
	// The reference: one run, uninterrupted.
	ref := &direct{h: src}
	refCfg := config(t, ref, replicaOn(t, "memory"))
	refCfg.PageBytes = pageBytes
	sRef, err := New(refCfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range sRef.RunAll(context.Background(), jobs) {
		if err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
	}
	_, total := ref.served()

	dir, engDir := t.TempDir(), t.TempDir()
	open := func() (*replica.Handler, func()) {
		eng, err := catalog.Open("lsm", engDir, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return &replica.Handler{Engine: eng}, func() { eng.Close() }
	}
	// Each transfer asks its own source name, so that its asks can be told apart.
	var mu sync.Mutex
	asked := map[ring.NodeID]int{}
	c := &direct{h: src}
	cfg := func(sink Sink) Config {
		return Config{Dir: dir, Self: "n9", Sink: sink, PageBytes: pageBytes, Concurrency: 2, Logger: quiet(),
			Source: func(id ring.NodeID) (Caller, error) {
				mu.Lock()
				defer mu.Unlock()
				asked[id]++
				return c, nil
			}}
	}
	dst, closeDst := open()
	ctx, cancel := context.WithCancel(context.Background())
	stopAt := int(total / pageBytes / 2)
	c.hook = func(call int, _, resp []byte) ([]byte, error) {
		if call == stopAt { // the page was sent, and is lost with the stop
			cancel()
			return nil, ctx.Err()
		}
		return resp, nil
	}
	s1, err := New(cfg(dst))
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, err := range s1.RunAll(ctx, jobs) {
		if errors.Is(err, context.Canceled) {
			stopped++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	done, err := s1.Completed(3)
	if err != nil || len(done) == 0 || stopped == 0 {
		t.Fatalf("after the stop: completed %v (%v), %d stopped; want some of each (stopped at page %d)", done, err, stopped, stopAt)
	}
	_, first := c.served()
	closeDst()

	dst, closeDst = open()
	defer closeDst()
	c.hook = nil
	mu.Lock()
	clear(asked)
	mu.Unlock()
	s2, err := New(cfg(dst))
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range s2.RunAll(context.Background(), jobs) {
		if err != nil {
			t.Fatalf("transfer %d after the restart: %v", i, err)
		}
	}
	for _, id := range done {
		if n := asked[transfers[id.Index].Source]; n != 0 {
			t.Fatalf("transfer %s, complete before the restart, was asked %d pages again", id, n)
		}
	}
	var ranges []move.Range
	for _, tr := range transfers {
		ranges = append(ranges, tr.Range)
	}
	checkCopied(t, rows, dump(t, dst), ranges...)
	_, both := c.served()
	resent := both - total
	t.Logf("%d bytes in %d-byte pages; stopped after %d bytes; %d bytes asked again (%.2f%%)",
		total, pageBytes, first, resent, 100*float64(resent)/float64(total))
	// At most the page each of the 2 running transfers had in flight (a page passes
	// PageBytes by at most its last row, under 1 KiB here).
	if resent < 0 || resent > 2*(pageBytes+1<<10) || float64(resent) > 0.05*float64(total) {
		t.Fatalf("%d bytes asked again of %d; want at most 2 pages and under 5%%", resent, total)
	}
	all, _ := s2.Completed(3)
	if len(all) != len(transfers) {
		t.Fatalf("completed %v after the restart", all)
	}
	if err := s2.Discard(3); err != nil {
		t.Fatal(err)
	}
	if left, err := s2.Completed(3); err != nil || len(left) != 0 {
		t.Fatalf("after Discard: %v, %v", left, err)
	}
}

// A page damaged between the source's encoder and the destination fails its checksum,
// is counted and asked again, and the damaged bytes are never applied.
func TestDamagedPageIsAskedAgain(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	rows := fill(t, src, rng, 400, now)
	c := &direct{h: src, hook: func(call int, _, resp []byte) ([]byte, error) {
		if call == 3 {
			resp[len(resp)/2] ^= 0x20 // a value byte, most likely: a silent change without the checksum
		}
		return resp, nil
	}}
	s, err := New(config(t, c, dst))
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	if err := s.Run(context.Background(), Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}); err != nil {
		t.Fatal(err)
	}
	checkCopied(t, rows, dump(t, dst), whole)
	if p := s.Peers()["n1"]; p.BadPages != 1 || p.Failures != 0 {
		t.Fatalf("peer counters %+v; want one bad page", p)
	}
}

// A destination whose disk is full stops the transfer with ErrDiskFull (naming the
// transfer and the engine's refusal), keeps the progress of the pages it applied, and a
// later run resumes there.
func TestFullDiskStopsTheTransferAndKeepsItsProgress(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	rows := fill(t, src, rng, 400, now)
	full := true
	pages := 0
	sink := sinkFunc(func(ms []row.Mutation) error {
		if pages++; pages > 3 && full {
			return fmt.Errorf("replica: %w", fmt.Errorf("lsm: apply: %w: /data has 10 bytes free, and the store keeps 256 MiB free", engine.ErrNoSpace))
		}
		return dst.Write(ms)
	})
	c := &direct{h: src}
	cfg := config(t, c, sink)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	j := Job{ID: TransferID{5, 2}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}
	err = s.Run(context.Background(), j)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, engine.ErrNoSpace) || !strings.Contains(err.Error(), "5/2") {
		t.Fatalf("a full disk: %v; want ErrDiskFull naming the transfer and wrapping the engine's error", err)
	}
	t.Logf("the error: %v", err)
	if done, _ := s.Completed(5); len(done) != 0 {
		t.Fatalf("completed %v after a full disk", done)
	}
	calls, _ := c.served()
	full = false
	s2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	checkCopied(t, rows, dump(t, dst), whole)
	total, _ := c.served()
	if again := s2.Peers()["n1"].Pages; again != int64(total-calls)+0 || again > int64(total-3) {
		t.Fatalf("the resumed run asked %d pages of %d", again, total)
	}
}

// A source that keeps failing gives way to the job's alternatives; the pages come from
// the alternative and the range is whole.
func TestFailingSourceGivesWayToAnAlternative(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	rows := fill(t, src, rng, 300, now)
	good := &direct{h: src}
	pages := 0
	cfg := config(t, nil, sinkFunc(func(ms []row.Mutation) error { pages++; return dst.Write(ms) }))
	cfg.Source = func(id ring.NodeID) (Caller, error) {
		if id == "dead" && pages >= 2 {
			return nil, errors.New("connection refused")
		}
		return good, nil
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	j := Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "dead", Destination: "n2"}, Alternatives: []ring.NodeID{"other"}}
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	checkCopied(t, rows, dump(t, dst), whole)
	peers := s.Peers()
	if peers["dead"].Failures != 3 || peers["dead"].Pages != 2 || peers["other"].Pages < 2 || peers["other"].Ranges != 1 {
		t.Fatalf("peer counters %+v", peers)
	}
}

// Transfers reports a running transfer's bytes, its estimate, rate and time left from
// the injected clock; it is gone once the transfer completes.
func TestTransfersReportProgressRateAndETA(t *testing.T) {
	rng := seeded(t)
	now := time.Now().UnixMicro()
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	fill(t, src, rng, 300, now)
	clock := time.Unix(1000, 0)
	var s *Streamer
	var seen []TransferStatus
	pages := 0
	cfg := config(t, &direct{h: src}, sinkFunc(func(ms []row.Mutation) error {
		if pages++; pages == 4 {
			clock = clock.Add(2 * time.Second)
			seen = s.Transfers()
		}
		return dst.Write(ms)
	}))
	cfg.Now = func() time.Time { return clock }
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	j := Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2", Bytes: 1 << 20}}
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("status mid-transfer: %+v", seen)
	}
	st := seen[0]
	rate := float64(st.Bytes) / 2
	wantETA := time.Duration(float64(st.EstimateBytes-st.Bytes) / rate * float64(time.Second))
	if st.ID != j.ID || st.Source != "n1" || st.Queued || st.Bytes == 0 || st.Rows == 0 || st.EstimateBytes != 1<<20 ||
		st.BytesPerSecond != rate || st.ETA != wantETA || !st.Started.Equal(time.Unix(1000, 0)) {
		t.Fatalf("status mid-transfer %+v; want rate %.0f and ETA %v", st, rate, wantETA)
	}
	if left := s.Transfers(); len(left) != 0 {
		t.Fatalf("status after completion: %+v", left)
	}
}

// A Run of a transfer already held, a Discard of a change being streamed, a job for
// another node and a config without a directory are refused.
func TestStreamerRefusesWhatItCannotDo(t *testing.T) {
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	fill(t, src, seeded(t), 50, time.Now().UnixMicro())
	release := make(chan struct{})
	var s *Streamer
	var during []error
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	j := Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}
	cfg := config(t, &direct{h: src}, sinkFunc(func(ms []row.Mutation) error {
		if during == nil {
			during = []error{s.Run(context.Background(), j), s.Discard(1)}
			close(release)
		}
		return dst.Write(ms)
	}))
	cfg.Self = "n2"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	<-release
	for _, err := range during {
		if !errors.Is(err, ErrRunning) {
			t.Errorf("while running: %v; want ErrRunning", err)
		}
	}
	other := j
	other.Transfer.Destination = "n3"
	if err := s.Run(context.Background(), other); !errors.Is(err, ErrConfig) {
		t.Errorf("a job for another node: %v", err)
	}
	if _, err := New(Config{Source: cfg.Source, Sink: dst}); !errors.Is(err, ErrConfig) {
		t.Errorf("no directory: %v", err)
	}
}

// A transfer recorded done returns without a slot: with the only slot held by a transfer
// whose source never answers, running the done one again (as a node does until its change
// records it) returns at once and copies nothing.
func TestDoneTransferReturnsWithoutTakingASlot(t *testing.T) {
	rng := seeded(t)
	src, dst := replicaOn(t, "memory"), replicaOn(t, "memory")
	fill(t, src, rng, 50, time.Now().UnixMicro())
	d := &direct{h: src}
	stuck := make(chan struct{})
	cfg := config(t, d, dst)
	cfg.Concurrency = 1
	cfg.Source = func(id ring.NodeID) (Caller, error) {
		if id == "stuck" {
			return callerFunc(func(ctx context.Context) ([]byte, error) {
				select {
				case <-stuck:
				case <-ctx.Done():
				}
				return nil, errors.New("no answer")
			}), nil
		}
		return d, nil
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := move.Range{Start: ring.MinToken, End: ring.MinToken}
	done := Job{ID: TransferID{1, 0}, Transfer: move.Transfer{Range: whole, Source: "n1", Destination: "n2"}}
	if err := s.Run(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		held <- s.Run(ctx, Job{ID: TransferID{1, 1}, Transfer: move.Transfer{Range: whole, Source: "stuck", Destination: "n2"}})
	}()
	defer func() { close(stuck); cancel(); <-held }()
	for len(s.Transfers()) == 0 || s.Transfers()[0].Queued {
		time.Sleep(time.Millisecond) // until the stuck transfer holds the slot
	}
	calls, _ := d.served()
	again := make(chan error, 1)
	go func() { again <- s.Run(ctx, done) }()
	select {
	case err := <-again:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a transfer recorded done waited for the slot that another transfer holds")
	}
	if now, _ := d.served(); now != calls {
		t.Fatalf("running a done transfer again asked %d pages", now-calls)
	}
}

// callerFunc is a Caller whose every call is a function of its context.
type callerFunc func(ctx context.Context) ([]byte, error)

func (f callerFunc) Call(ctx context.Context, _ uint16, _ []byte) ([]byte, error) { return f(ctx) }
