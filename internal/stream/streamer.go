package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// Errors of Run besides its context's and the sink's.
var (
	// ErrDiskFull: the destination's store refused a page for lack of disk space
	// (engine.ErrNoSpace, or ENOSPC). The transfer stopped; its progress up to the last
	// page applied is kept, and a later Run resumes there.
	ErrDiskFull = errors.New("stream: destination disk full")
	// ErrRunning: the transfer, or a transfer of the change being discarded, is held by
	// a Run already.
	ErrRunning = errors.New("stream: transfer already running")
	// ErrConfig: a Config or a Job is not usable.
	ErrConfig = errors.New("stream: invalid config")
)

// Config sets up a Streamer. Zero fields take the defaults their comments give.
type Config struct {
	// Dir holds the transfers' progress: a directory per change, a small file per
	// transfer (see Streamer). Required.
	Dir string
	// Self, when set, is this node: a Job whose destination is another node is refused.
	Self ring.NodeID
	// Source returns the caller that reaches a node (a transport client). Required.
	Source func(ring.NodeID) (Caller, error)
	// Sink applies the pages' rows by merging them (replica.Handler does). Required.
	Sink Sink
	// Sync, when set, makes every Sink.Write that has returned durable; it is called after
	// each page's write, before the page is recorded as applied. Leave it nil when Write is
	// durable on return: replica.Handler over lsm or btree in engine.Sync durability (the
	// default; Apply returns once its batch is fsynced, group-committed). In engine.Periodic
	// durability give the engine's sync (lsm: DB.Sync, the WAL's fsync; btree: Flush). The
	// memory engine is never durable: its node must Discard what it recorded when it
	// restarts empty.
	Sync func() error
	// Concurrency is how many transfers Run copies at once (the others wait for a slot).
	// Default 4.
	Concurrency int
	// PageBytes and PageRows bound each page (wire.ScanRequest); a page may pass PageBytes
	// by its last row. Defaults 1 MiB and wire.MaxScanRows.
	PageBytes, PageRows int
	// Timeout bounds one page's ask. Under a send limit the source holds each page until
	// the limit lets it go, so Timeout must exceed (stream pages the source serves at
	// once × PageBytes) / its send limit, or pages time out and are asked again. Default
	// 60 s.
	Timeout time.Duration
	// RetryBase and RetryMax shape the wait after a failed ask: RetryBase doubled per
	// failure in a row of one source, at most RetryMax. Defaults 100 ms and 10 s.
	RetryBase, RetryMax time.Duration
	// FailoverAfter is how many failures in a row of one source a transfer takes before
	// it asks the next of its Job's Alternatives. Default 3.
	FailoverAfter int
	// Receive is the node's receive limit, shared by every transfer it runs (and by
	// whatever else the caller gives it to). Nil: unlimited.
	Receive *Limiter
	// Now reads the clock for the transfers' rates and ETAs. Default time.Now.
	Now func() time.Time
	// Logger receives retries and failures. Default slog.Default().
	Logger *slog.Logger
}

func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.Dir == "":
		return cfg, fmt.Errorf("%w: no progress directory", ErrConfig)
	case cfg.Source == nil || cfg.Sink == nil:
		return cfg, fmt.Errorf("%w: Source and Sink are required", ErrConfig)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Concurrency, 4)
	def(&cfg.PageBytes, 1<<20)
	def(&cfg.PageRows, wire.MaxScanRows)
	def(&cfg.FailoverAfter, 3)
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defd(&cfg.Timeout, 60*time.Second)
	defd(&cfg.RetryBase, 100*time.Millisecond)
	defd(&cfg.RetryMax, 10*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// Job is one transfer to run at this node.
type Job struct {
	ID       TransferID
	Transfer move.Transfer
	// Alternatives are other nodes that hold the range (the range's other old replicas),
	// asked in turn after Config.FailoverAfter failures in a row of the node being asked.
	// A page from another replica than the planned one may lack a write that replica
	// missed (see move.Transfer.Leaving): a caller that fills this repairs the range, or
	// streams it from enough replicas, as it does for such transfers.
	Alternatives []ring.NodeID
}

// Jobs returns the jobs of self among a change's transfers (meta.Change.Transfers), with
// their indexes as IDs and no alternatives.
func Jobs(change uint64, transfers []move.Transfer, self ring.NodeID) []Job {
	var out []Job
	for i, t := range transfers {
		if t.Destination == self {
			out = append(out, Job{ID: TransferID{Change: change, Index: i}, Transfer: t})
		}
	}
	return out
}

// Streamer runs the transfers of membership changes at their destination: for each, it
// pulls every engine key range of the transfer's token range from the source, page by
// page (scan requests marked as a stream, so that the source paces them by its send
// limit), verifies each page's checksum, waits for the receive limit, writes the page to
// the sink, makes it durable, and records the next key to ask in the progress directory.
// A Run that stops (its context, a restart of the node) leaves the record, and the next
// Run of the transfer starts from it: it asks again at most the page that was in flight
// for each key range. Safe for concurrent use.
type Streamer struct {
	cfg      Config
	pager    *pager
	progress *progressStore
	slots    *slots

	mu      sync.Mutex
	running map[TransferID]*transfer
	peers   map[ring.NodeID]PeerStats
}

// New returns a Streamer whose progress lives in cfg.Dir (created if needed).
func New(cfg Config) (*Streamer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ps, err := newProgressStore(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return &Streamer{cfg: cfg, pager: newPager(cfg.Source, cfg.Timeout), progress: ps,
		slots: newSlots(cfg.Concurrency), running: map[TransferID]*transfer{},
		peers: map[ring.NodeID]PeerStats{}}, nil
}

// Completed returns the transfers of change whose every page was applied durably here,
// by index (as recorded: a completed transfer's record stays until Discard).
func (s *Streamer) Completed(change uint64) ([]TransferID, error) {
	return s.progress.completed(change)
}

// Discard removes the recorded progress of a change that finished or was cancelled. It
// refuses (ErrRunning) while a Run holds one of the change's transfers.
func (s *Streamer) Discard(change uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.running {
		if id.Change == change {
			return fmt.Errorf("%w: %s", ErrRunning, id)
		}
	}
	return s.progress.discard(change)
}

// SetSourceWeights tells the streamer, for the change in flight, how many bytes each
// source has left to send to every destination (not just this one); a freed slot then goes
// to a waiting transfer from the source with the fewest running here and, among those, the
// most left in all (see slots). Nil goes back to the bytes waiting here.
func (s *Streamer) SetSourceWeights(w map[ring.NodeID]int64) { s.slots.setWeights(w) }

// RunAll runs jobs, Config.Concurrency at a time, and returns their errors in jobs'
// order (nil: complete).
func (s *Streamer) RunAll(ctx context.Context, jobs []Job) []error {
	errs := make([]error, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(s.cfg.Concurrency, len(jobs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				errs[i] = s.Run(ctx, jobs[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// Run copies j's transfer, from where its recorded progress says, and returns nil once
// every page of every key range of it is applied and durable here (at once if it was
// already). It waits for one of Config.Concurrency slots (slots says which waiting
// transfer a freed slot goes to). It retries a failing source (and its alternatives) with
// backoff until ctx ends, then returns ctx's error, wrapped; a page the sink refuses ends
// it (ErrDiskFull when the disk is full). Either way the progress up to the last page
// applied is kept.
func (s *Streamer) Run(ctx context.Context, j Job) error {
	if s.cfg.Self != "" && j.Transfer.Destination != s.cfg.Self {
		return fmt.Errorf("%w: transfer %s goes to %s, not to this node (%s)", ErrConfig, j.ID, j.Transfer.Destination, s.cfg.Self)
	}
	t, err := s.hold(j)
	if err != nil {
		return err
	}
	defer s.release(j.ID)
	// A transfer recorded done returns before it takes a slot: asked again until its
	// change records it, it must not hold up, or take the place of, one with work left.
	rec, fresh, err := s.progress.load(j.ID, j.Transfer)
	if err != nil {
		return err
	}
	if rec.Done {
		return nil
	}
	release, err := s.slots.acquire(ctx, j.Transfer.Source, j.Transfer.Bytes)
	if err != nil {
		return s.stopped(j, ctx)
	}
	defer release()
	s.started(t, &rec)
	if !fresh {
		s.cfg.Logger.Info("stream: resuming transfer", "transfer", j.ID, "range", j.Transfer.Range, "applied_bytes", rec.Bytes)
	}
	src := newSources(j.Transfer.Source, j.Alternatives, s.cfg.RetryBase, s.cfg.RetryMax, s.cfg.FailoverAfter)
	for i, kr := range j.Transfer.Range.Keys() {
		if rec.Keys[i].Done {
			continue
		}
		if err := s.copyRange(ctx, j, t, src, &rec, i, kr); err != nil {
			return err
		}
	}
	s.transferDone(src.current())
	return nil
}

// copyRange copies key range i of j's transfer, kr, from rec.Keys[i].Next on, recording
// each page in rec once durable. The page that completes the transfer's last key range
// records the transfer done with it.
func (s *Streamer) copyRange(ctx context.Context, j Job, t *transfer, src *sources, rec *record, i int, kr ring.KeyRange) error {
	lo := kr.Lo
	if rec.Keys[i].Next != nil {
		lo = rec.Keys[i].Next
	}
	// What the next page is expected to take, reserved when it is asked: the last page's
	// size; for the first, the transfer's planned bytes up to a page, or nothing when the
	// plan has no estimate (the page then waits for the limit once it is in). A
	// reservation much larger than its page would hold the receive limit for nothing.
	ahead := int(min(max(j.Transfer.Bytes, 0), int64(s.cfg.PageBytes)))
	for {
		id := src.current()
		s.setSource(t, id)
		// The page's receive time runs while the source paces its send (Limiter.Reserve).
		res := s.cfg.Receive.Reserve(ahead)
		resp, size, err := s.pager.fetch(ctx, id, wire.ScanRequest{Lo: lo, Hi: kr.Hi, Rows: s.cfg.PageRows, Bytes: s.cfg.PageBytes, Stream: true})
		if err != nil {
			res.Cancel()
			if ctx.Err() != nil {
				return s.stopped(j, ctx)
			}
			s.askFailed(t, id, err)
			wait := src.failed()
			s.cfg.Logger.Warn("stream: page failed; asking again", "transfer", j.ID, "source", id, "next_source", src.current(), "wait", wait, "err", err)
			if err := sleep(ctx, wait); err != nil {
				return s.stopped(j, ctx)
			}
			continue
		}
		src.ok()
		if err := res.Settle(ctx, size); err != nil {
			return s.stopped(j, ctx)
		}
		ahead = min(max(size, 1), s.cfg.PageBytes)
		if err := s.apply(j, resp.Rows); err != nil {
			return err
		}
		rec.Keys[i] = keyProgress{Next: bytes.Clone(resp.Next), Done: resp.Next == nil}
		rec.Bytes += int64(size)
		rec.Rows += int64(len(resp.Rows))
		rec.Done = allDone(rec.Keys)
		if err := s.progress.save(j.ID, rec); err != nil {
			return s.applyFailed(j, err)
		}
		s.pageApplied(t, id, &resp, size)
		if resp.Next == nil {
			return nil
		}
		lo = rec.Keys[i].Next
	}
}

func allDone(keys []keyProgress) bool {
	for _, k := range keys {
		if !k.Done {
			return false
		}
	}
	return true
}

// apply writes a page's rows to the sink and makes them durable.
func (s *Streamer) apply(j Job, rows []row.Mutation) error {
	if len(rows) > 0 {
		if err := s.cfg.Sink.Write(rows); err != nil {
			return s.applyFailed(j, err)
		}
	}
	if s.cfg.Sync != nil {
		if err := s.cfg.Sync(); err != nil {
			return s.applyFailed(j, err)
		}
	}
	return nil
}

// applyFailed is Run's error for a page that could not be applied or recorded here.
func (s *Streamer) applyFailed(j Job, err error) error {
	s.cfg.Logger.Error("stream: transfer stopped: a page could not be applied", "transfer", j.ID, "err", err)
	if errors.Is(err, engine.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: transfer %s of %s from %s stopped, its progress kept: %w", ErrDiskFull, j.ID, j.Transfer.Range, j.Transfer.Source, err)
	}
	return fmt.Errorf("stream: transfer %s of %s: applying a page: %w", j.ID, j.Transfer.Range, err)
}

func (s *Streamer) stopped(j Job, ctx context.Context) error {
	return fmt.Errorf("stream: transfer %s of %s stopped, its progress kept: %w", j.ID, j.Transfer.Range, ctx.Err())
}

// hold registers j as held by a Run, queued.
func (s *Streamer) hold(j Job) (*transfer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.running[j.ID]; ok {
		return nil, fmt.Errorf("%w: %s", ErrRunning, j.ID)
	}
	t := &transfer{status: TransferStatus{ID: j.ID, Range: j.Transfer.Range, Destination: j.Transfer.Destination,
		Source: j.Transfer.Source, Queued: true, EstimateBytes: j.Transfer.Bytes}}
	s.running[j.ID] = t
	return t, nil
}

func (s *Streamer) started(t *transfer, rec *record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.status.Queued, t.status.Started = false, s.cfg.Now()
	t.status.Bytes, t.status.Rows, t.status.ResumedBytes = rec.Bytes, rec.Rows, rec.Bytes
}

func (s *Streamer) release(id TransferID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
}

// sleep waits d or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
