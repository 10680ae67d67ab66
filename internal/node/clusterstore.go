package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/lazyctx"
	"github.com/kuradb/kura/internal/machine"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// caller sends internode requests, waiting for the answer (Call) or not (Go, which calls
// done with it); *transport.Client is one, and so is localCaller.
type caller interface {
	Call(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error))
}

// hintSink keeps writes for replicas that did not take them: *hint.Store, or the
// hint.Queue in front of it, which reports each hint's outcome itself.
type hintSink interface {
	Add(target string, m row.Mutation, now time.Time) error
}

// localReplica is this node's own replica (*replica.Handler), which the coordinator calls
// directly: in the request's goroutine, without encoding or a network round trip.
type localReplica interface {
	Read(key []byte, digest bool) (wire.ReadResponse, error)
	Write(mutations []row.Mutation) error
}

// clusterStore is the resp.Store of a cluster node. For every read and write it starts an
// op of the node's machine, carries out what the op says (messages to replicas over the
// transport or to the local replica, hints), feeds the answers and the op's timers back,
// and returns the op's reply. It decides nothing: the decisions are in package machine.
type clusterStore struct {
	m       *machine.Node
	peer    func(id ring.NodeID) (caller, error)
	self    ring.NodeID  // this node, whose replica is local
	local   localReplica // nil: self is reached through peer like the others
	level   coord.Level  // the default level
	hints   hintSink
	metrics *admin.ClusterMetrics // counts the local replica's requests; nil counts nothing
	log     *slog.Logger
	// clock is the node's, which observes the rows reads return and refuses writes while
	// it is out of sync (clock.go); nil (tests of the store alone) does neither.
	clock *nodeClock
	// leader runs the requests this node leads (leader.go); nil until the front end
	// exists.
	leader atomic.Pointer[leaderRunner]
	// catchUp waits, briefly, until this node's placement has reached an epoch a replica
	// refused a request for (transport.StaleEpochError), and reports whether it did; nil
	// (--ring-source=gossip) never retries.
	catchUp func(epoch uint64) bool
}

// staleRetries is how many times a request refused by a replica that knows a newer ring
// is run again once this node has caught up.
const staleRetries = 2

// retryStale reports whether a request should run again: it ended with err, refused by
// some replica at epoch stale (0: none), and the node caught up with that epoch; or the
// node's placement changed while it ran (planned at epoch planned), since its frames
// carry the node's epoch as they are written, which a replica then cannot tell from the
// plan's.
func (s *clusterStore) retryStale(err error, stale, planned uint64, attempt int) bool {
	if attempt >= staleRetries || s.catchUp == nil {
		return false
	}
	if err != nil && stale > 0 {
		return s.catchUp(stale)
	}
	return s.m.Epoch() != planned
}

var _ resp.LeveledStore = (*clusterStore)(nil)

// writeResult and readResult are replicas' answers, fed back into the ops, with the time
// they came off the transport (or the local engine).
type writeResult struct {
	from ring.NodeID
	err  error
	at   time.Time
}

type readResult struct {
	from   ring.NodeID
	repair bool // the answer to a read repair write
	resp   coord.ReadResponse
	at     time.Time
}

// Levels implements resp.LeveledStore.
func (s *clusterStore) Levels() []string { return []string{"ONE", "TWO", "QUORUM", "ALL"} }

// Apply coordinates each mutation of batch at the default level: see ApplyAt.
func (s *clusterStore) Apply(batch []row.Mutation) error { return s.applyAt(s.level, batch) }

// ApplyAt coordinates each mutation of batch as its own write at level: a batch is atomic
// on one replica, not across the keys of a cluster.
func (s *clusterStore) ApplyAt(level string, batch []row.Mutation) error {
	l, err := coord.ParseLevel(level)
	if err != nil {
		return err
	}
	return s.applyAt(l, batch)
}

func (s *clusterStore) applyAt(level coord.Level, batch []row.Mutation) error {
	return s.applyOwnAt(level, batch, false)
}

// applyOwnAt is applyAt; with ownWritten, this node's own replica already holds the batch
// (a key's leader writes its copy first, leader.go): the write counts its answer at once
// instead of writing it again.
func (s *clusterStore) applyOwnAt(level coord.Level, batch []row.Mutation, ownWritten bool) error {
	if err := s.writable(); err != nil {
		return err
	}
	for i := range batch {
		m := row.Mutation{Key: append([]byte(nil), batch[i].Key...), Row: batch[i].Row.Clone()}
		if err := s.write(level, m, ownWritten); err != nil {
			return err
		}
	}
	return nil
}

// write runs one write until its reply, then lets it finish (late answers still leave
// hints) in the background. ownWritten: see applyOwnAt.
func (s *clusterStore) write(level coord.Level, m row.Mutation, ownWritten bool) error {
	for attempt := 0; ; attempt++ {
		planned := s.m.Epoch()
		err, stale := s.writeOnce(level, m, ownWritten)
		if !s.retryStale(err, stale, planned, attempt) {
			return err
		}
	}
}

// writeOnce writes m once, at this node's placement, and returns the write's error and
// the newest epoch a replica refused it for (0: none).
func (s *clusterStore) writeOnce(level coord.Level, m row.Mutation, ownWritten bool) (error, uint64) {
	var stale uint64
	start := time.Now()
	op := writeOps.Get().(*machine.WriteOp)
	r := s.m.StartWrite(op, start, m, level)
	ctx := lazyctx.WithDeadline(context.Background(), op.Deadline())
	results := make(chan writeResult, op.MaxAnswers()) // one answer per replica: sends never block
	s.runWrite(ctx, op, r.Effects, results, ownWritten)
	var t opTimer
	if !op.Done() {
		t.arm(op.Next())
	}
	for !r.Replied {
		select {
		case a := <-results:
			if e, ok := transport.IsStaleEpoch(a.err); ok {
				stale = max(stale, e)
			}
			r = op.Answer(a.at, a.from, a.err)
		case <-t.c():
			r = op.Timer(time.Now())
			t.fired()
		}
		s.runWrite(ctx, op, r.Effects, results, ownWritten)
		t.arm(op.Next())
	}
	if sw := r.SlowWrite; sw != nil {
		s.log.Warn("slow write", "took", sw.Took.Round(time.Millisecond), "replicas", sw.Replicas,
			"coordinator_own", sw.Own.Round(time.Millisecond), "err", sw.Err, "slow_writes_not_logged", sw.NotLogged)
	}
	if op.Done() {
		s.finish(ctx, op, t, results, ownWritten)
	} else {
		go s.finish(ctx, op, t, results, ownWritten) // the rest of the replicas' answers, for hints
	}
	return r.Reply.Err, stale
}

// writeOps recycles the machine's write ops, once done.
var writeOps = sync.Pool{New: func() any { return new(machine.WriteOp) }}

// finish takes a replied write's remaining answers, and its deadline, until the op is
// done, then releases what the write held.
func (s *clusterStore) finish(ctx *lazyctx.Context, op *machine.WriteOp, t opTimer, results chan writeResult, ownWritten bool) {
	for !op.Done() {
		var r machine.Ready
		select {
		case a := <-results:
			r = op.Answer(a.at, a.from, a.err)
		case <-t.c(): // the deadline: it leaves nothing pending
			r = op.Timer(time.Now())
			t.fired()
		}
		s.runWrite(ctx, op, r.Effects, results, ownWritten)
		t.arm(op.Next())
	}
	t.stop()
	ctx.Release()
	writeOps.Put(op)
}

// runWrite carries out a write's effects. ownWritten: see applyOwnAt.
func (s *clusterStore) runWrite(ctx context.Context, op *machine.WriteOp, fx []coord.Effect, results chan<- writeResult, ownWritten bool) {
	if len(fx) == 0 {
		return
	}
	var t0 time.Time
	if op.Traced() {
		t0 = time.Now()
		defer func() { op.Own(time.Since(t0)) }()
	}
	var local *coord.SendWrite
	for _, e := range fx {
		switch e := e.(type) {
		case coord.SendWrite:
			if s.isLocal(e.To) {
				local = &e
				continue
			}
			payload := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{e.Mutation}})
			s.send(ctx, e.To, wire.MethodWrite, payload, s.writeAnswer(e.To, e.Async, results))
		case coord.StoreHint:
			if s.hints != nil {
				_ = s.hints.Add(string(e.For), e.Mutation, time.Now())
			}
		}
	}
	if local != nil && ownWritten {
		s.writeAnswer(local.To, local.Async, results)(nil, nil)
	} else if local != nil { // after the remote sends, so that they overlap with it
		s.metrics.ReplicaRequest(wire.MethodWrite)
		// In a goroutine, unlike a local read: an engine's write can stall for seconds (a
		// B+tree commit held up by writeback on a slow disk, an LSM write stall), and the
		// request must still answer at its deadline. results has room for every answer.
		answer, m := s.writeAnswer(local.To, local.Async, results), local.Mutation
		go func() { answer(nil, s.local.Write([]row.Mutation{m})) }()
	}
}

// writeAnswer returns what to call with the answer to a write sent to replica to now
// (asynchronously or not, as the effect said): it tells the machine how long the write
// took, then queues the answer for the op.
func (s *clusterStore) writeAnswer(to ring.NodeID, async bool, results chan<- writeResult) func([]byte, error) {
	sent := time.Now()
	return func(_ []byte, err error) {
		at := time.Now()
		s.m.WriteAnswered(to, async, at.Sub(sent), err != nil, at)
		results <- writeResult{to, err, at}
	}
}

// isLocal reports whether replica id is this node's own, called directly.
func (s *clusterStore) isLocal(id ring.NodeID) bool { return s.local != nil && id == s.self }

// send sends one request to replica id; done gets the answer, maybe before send returns.
// done runs on the transport's reader: it must not block.
func (s *clusterStore) send(ctx context.Context, id ring.NodeID, method uint16, payload []byte, done func([]byte, error)) {
	p, err := s.peer(id)
	if err != nil {
		done(nil, err)
		return
	}
	p.Go(ctx, method, payload, done)
}

// Get coordinates a read of key at the default level.
func (s *clusterStore) Get(key []byte) (row.Row, bool, error) { return s.getAt(s.level, key) }

// GetAt coordinates a read of key at level.
func (s *clusterStore) GetAt(level string, key []byte) (row.Row, bool, error) {
	l, err := coord.ParseLevel(level)
	if err != nil {
		return row.Row{}, false, err
	}
	return s.getAt(l, key)
}

func (s *clusterStore) getAt(level coord.Level, key []byte) (row.Row, bool, error) {
	for attempt := 0; ; attempt++ {
		planned := s.m.Epoch()
		rw, found, err, stale := s.getOnce(level, key)
		if !s.retryStale(err, stale, planned, attempt) {
			return rw, found, err
		}
	}
}

// getOnce reads key once, at this node's placement, and returns the newest epoch a
// replica refused it for (0: none) with its answer.
func (s *clusterStore) getOnce(level coord.Level, key []byte) (row.Row, bool, error, uint64) {
	var stale uint64
	start := time.Now()
	key = append([]byte(nil), key...)
	run := newReadRun(s, key)
	op := &run.op
	r := s.m.StartRead(op, start, key, level)
	if cap(run.results) < op.MaxAnswers() { // sends must never block, whenever the read stops listening
		run.results = make(chan readResult, op.MaxAnswers())
	}
	run.ctx = lazyctx.WithDeadline(context.Background(), op.Deadline())
	run.localAsync = !op.LocalInline()
	run.effects(r.Effects)
	var t opTimer
	t.arm(op.Next())
	for !r.Replied {
		select {
		case res := <-run.results:
			run.out--
			if res.repair {
				r = op.RepairAnswer(res.at, res.from, res.resp.Err)
			} else {
				if e, ok := transport.IsStaleEpoch(res.resp.Err); ok {
					stale = max(stale, e)
				}
				r = op.Answer(res.at, res.from, res.resp)
			}
		case <-t.c():
			r = op.Timer(time.Now())
			t.fired()
		}
		run.effects(r.Effects)
		t.arm(op.Next())
	}
	t.stop()
	if run.out == 0 {
		run.ctx.Release()
		readRuns.Put(run) // nothing will send on its channel any more
	} else {
		// Background read repairs (or answers no longer needed) may use ctx until the
		// request's deadline.
		time.AfterFunc(time.Until(op.Deadline()), run.ctx.Release)
	}
	if r.Reply.Err != nil {
		return row.Row{}, false, r.Reply.Err, stale
	}
	// A write this node timestamps after the read (a DEL, HSET, or a leader's read-modify-
	// write) must land above what the read saw, even when another node's clock wrote it
	// from ahead of this one's.
	s.clock.observe(r.Reply.Row.Newest())
	return r.Reply.Row, r.Reply.Found, nil, 0
}

// writable returns nil, or why this node refuses to timestamp writes (its clock is out of
// sync, clock.go), counting the refusal.
func (s *clusterStore) writable() error {
	err := s.clock.writable()
	if err != nil {
		s.metrics.ClockRefused()
	}
	return err
}

// opTimer is the one timer of an op, pointed at its next deadline. The zero value is
// unarmed; stop returns its timer to the pool.
type opTimer struct {
	t     *time.Timer
	armed time.Time // zero: not armed
}

// arm points the timer at next (zero: nothing due), unless it already is.
func (o *opTimer) arm(next time.Time) {
	if next.Equal(o.armed) {
		return
	}
	o.armed = next
	switch {
	case next.IsZero() && o.t != nil:
		o.t.Stop()
	case next.IsZero():
	case o.t == nil:
		o.t = getTimer(time.Until(next))
	default:
		o.t.Stop()
		o.t.Reset(time.Until(next))
	}
}

// fired notes that the timer went off: the next arm sets it again.
func (o *opTimer) fired() { o.armed = time.Time{} }

// c is the timer's channel; nil (never ready) when it was never armed.
func (o *opTimer) c() <-chan time.Time {
	if o.t == nil {
		return nil
	}
	return o.t.C
}

func (o *opTimer) stop() {
	if o.t != nil {
		putTimer(o.t)
		o.t = nil
	}
}

// timers recycles the timers that bound requests: a request's timer rarely fires, and a
// stopped timer can be reset for the next one (since Go 1.23 Stop leaves nothing in C).
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// readRuns recycles readRuns (their ops and channels) of reads that ended with no answer
// outstanding.
var readRuns sync.Pool

// readRunRoom is how many answers a new read's channel holds: a digest read, a data read
// and a repair per replica (machine.ReadOp.MaxAnswers) of replication factors up to 5; a
// read of a larger replica set makes a larger one.
const readRunRoom = 15

func newReadRun(s *clusterStore, key []byte) *readRun {
	run, _ := readRuns.Get().(*readRun)
	if run == nil {
		run = &readRun{results: make(chan readResult, readRunRoom)}
	}
	run.s, run.key, run.out = s, key, 0
	return run
}

// readRun carries out one read's effects.
type readRun struct {
	op      machine.ReadOp
	s       *clusterStore
	ctx     *lazyctx.Context
	key     []byte
	results chan readResult
	out     int // requests sent whose answers are not yet taken from results
	// localAsync runs the local replica's reads in a goroutine instead of inline.
	localAsync bool
}

// effects carries out a read's effects.
func (run *readRun) effects(fx []coord.Effect) {
	s, ctx, key, results := run.s, run.ctx, run.key, run.results
	var local []coord.Effect
	for _, e := range fx {
		switch e := e.(type) {
		case coord.SendRead:
			run.out++
			if s.isLocal(e.To) {
				local = append(local, e)
				continue
			}
			payload := wire.AppendReadRequest(nil, &wire.ReadRequest{Key: key, Digest: e.Digest})
			sent := time.Now()
			s.send(ctx, e.To, wire.MethodRead, payload, func(b []byte, err error) {
				at := time.Now()
				s.m.ReadAnswered(e.To, at.Sub(sent), at)
				results <- readResult{from: e.To, resp: decodeRead(b, err), at: at}
			})
		case coord.SendWrite: // read repair
			run.out++
			if s.isLocal(e.To) {
				local = append(local, e)
				continue
			}
			payload := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{e.Mutation}})
			s.send(ctx, e.To, wire.MethodWrite, payload, func(_ []byte, err error) {
				if err != nil {
					s.log.Debug("read repair failed", "replica", e.To, "err", err)
				}
				results <- readResult{from: e.To, repair: true, resp: coord.ReadResponse{Err: err}, at: time.Now()}
			})
		}
	}
	// The local replica's work runs here, after the remote sends, so that they overlap.
	// results has room for every answer, so these sends do not block.
	for _, e := range local {
		switch e := e.(type) {
		case coord.SendRead:
			s.metrics.ReplicaRequest(wire.MethodRead)
			read := func() {
				sent := time.Now()
				r, err := s.local.Read(key, e.Digest)
				at := time.Now() // its own latency, as a peer's is timed
				s.m.ReadAnswered(e.To, at.Sub(sent), at)
				results <- readResult{from: e.To, resp: coord.ReadResponse{Err: err, Row: r.Row, Found: r.Found, Digest: r.Digest}, at: at}
			}
			if run.localAsync {
				go read()
			} else {
				read()
			}
		case coord.SendWrite:
			s.metrics.ReplicaRequest(wire.MethodWrite)
			// In a goroutine: a background repair must not hold the reply back for its
			// fsync, and a blocking one is waited for through results anyway.
			go func() {
				err := s.local.Write([]row.Mutation{e.Mutation})
				results <- readResult{from: e.To, repair: true, resp: coord.ReadResponse{Err: err}, at: time.Now()}
			}()
		}
	}
}

func decodeRead(b []byte, err error) coord.ReadResponse {
	if err != nil {
		return coord.ReadResponse{Err: err}
	}
	r, err := wire.DecodeReadResponse(b)
	if err != nil {
		return coord.ReadResponse{Err: fmt.Errorf("node: read response: %w", err)}
	}
	return coord.ReadResponse{Row: r.Row, Found: r.Found, Digest: r.Digest}
}

// localCaller reaches the node's own replica handler without the network.
type localCaller struct {
	h interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
}

func (l localCaller) Call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	return l.h.Handle(ctx, method, payload)
}

func (l localCaller) Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error)) {
	done(l.h.Handle(ctx, method, payload))
}
