package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/lazyctx"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// caller sends internode requests, waiting for the answer (Call) or not (Go, which calls
// done with it); *transport.Client is one, and so is localCaller.
type caller interface {
	Call(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error))
}

// hintSink keeps writes for replicas that did not take them: *hint.Store, or the
// hintQueue in front of it, which reports each hint's outcome itself.
type hintSink interface {
	Add(target string, m row.Mutation, now time.Time) error
}

// localReplica is this node's own replica (*replica.Handler), which the coordinator calls
// directly: in the request's goroutine, without encoding or a network round trip.
type localReplica interface {
	Read(key []byte, digest bool) (wire.ReadResponse, error)
	Write(mutations []row.Mutation) error
}

// clusterStore is the resp.Store of a cluster node: it coordinates every read and write
// over the key's replica set with the coord package's state machines, carrying out their
// effects over the transport. It is the driver of coord: the decisions are there.
type clusterStore struct {
	replicas func(key []byte) []coord.Replica // the key's replica set, with liveness
	peer     func(id ring.NodeID) (caller, error)
	self     ring.NodeID  // this node, whose replica is local
	local    localReplica // nil: self is reached through peer like the others
	policy   coord.Policy
	level    coord.Level
	repair   coord.RepairMode
	timeout  time.Duration
	// slowAfter is how long a write whose policy counts only some replicas (engine-aware:
	// the synchronous set) waits for them before every acknowledgement counts
	// (coord.Write.OnSlow); 0 never.
	slowAfter time.Duration
	// readSlowAfter is how long a read waits for the replicas it asked before spares are
	// asked in place of the late ones (coord.Read.OnSlow); 0 never.
	readSlowAfter time.Duration
	// readLatencies, when set, moves readSlowAfter down to a percentile of recent reads.
	readLatencies *readLatencies
	// retries bounds the reads retried after readSlowAfter to about a tenth.
	retries retryBudget
	// load is what load-aware routing needs (recent writes, peer latencies); nil under
	// other policies, which then pay nothing for it.
	load *loadTracker
	// async paces asynchronous writes per replica, deferring those beyond a replica's
	// pace to hints; nil sends them all.
	async   *asyncPacer
	hints   hintSink
	metrics *clusterMetrics // nil records nothing
	log     *slog.Logger
	// slow logs writes slower than its threshold; nil logs none and traces nothing.
	slow *slowWrites
}

var _ resp.LeveledStore = (*clusterStore)(nil)

// writeResult and readResult are replicas' answers, fed back into the state machines.
type writeResult struct {
	from ring.NodeID
	err  error
	at   time.Time // when the answer came off the transport (or the local engine)
}

type readResult struct {
	from   ring.NodeID
	repair bool // the answer to a read repair write
	resp   coord.ReadResponse
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
	for i := range batch {
		m := row.Mutation{Key: append([]byte(nil), batch[i].Key...), Row: batch[i].Row.Clone()}
		if err := s.write(level, m); err != nil {
			return err
		}
	}
	return nil
}

// write runs one write until its reply, then lets it finish (late answers still leave
// hints) in the background.
func (s *clusterStore) write(level coord.Level, m row.Mutation) (err error) {
	start := time.Now()
	defer func() { s.metrics.request("write", start, err) }()
	ctx := lazyctx.WithDeadline(context.Background(), start.Add(s.timeout))
	timer := getTimer(s.timeout)
	replicas := s.replicas(m.Key)
	if s.async != nil {
		replicas = s.async.annotate(replicas)
	}
	if s.load != nil {
		s.load.wrote(m.Key, start)
	}
	w, fx := coord.StartWrite(m, level, replicas, s.policy)
	results := make(chan writeResult, len(replicas)) // one answer per replica: sends never block
	var tr *writeTrace
	if s.slow != nil {
		tr = &writeTrace{start: start}
	}
	reply, done := s.runTraced(tr, ctx, replicas, fx, results)
	var slow <-chan time.Time // nil (never ready) unless the policy waits for some replicas
	if !done && s.slowAfter > 0 && w.WaitsForCounted() {
		st := getTimer(s.slowAfter)
		defer putTimer(st)
		slow = st.C
	}
	for !done {
		select {
		case r := <-results:
			if tr != nil {
				tr.answers = append(tr.answers, r)
			}
			reply, done = s.runTraced(tr, ctx, replicas, w.OnResponse(r.from, r.err), results)
		case <-timer.C:
			reply, done = s.runTraced(tr, ctx, replicas, w.OnTimeout(), results)
		case <-slow:
			slow = nil
			reply, done = s.runTraced(tr, ctx, replicas, w.OnSlow(), results)
		}
	}
	if tr != nil {
		s.slow.check(time.Since(start), tr, replicas, reply.Err)
	}
	finish := func() {
		for !w.Done() {
			select {
			case r := <-results:
				s.runWrite(ctx, replicas, w.OnResponse(r.from, r.err), results)
			case <-timer.C: // not yet fired: OnTimeout leaves nothing pending
				s.runWrite(ctx, replicas, w.OnTimeout(), results)
			}
		}
		s.metrics.writeDone(w)
		putTimer(timer)
		ctx.Release()
	}
	if w.Done() {
		finish()
	} else {
		go finish() // the rest of the replicas' answers, for hints
	}
	return reply.Err
}

// runTraced is runWrite, adding the time it takes to tr's (nil: no trace).
func (s *clusterStore) runTraced(tr *writeTrace, ctx context.Context, replicas []coord.Replica, fx []coord.Effect, results chan<- writeResult) (coord.Reply, bool) {
	if tr == nil {
		return s.runWrite(ctx, replicas, fx, results)
	}
	t0 := time.Now()
	reply, done := s.runWrite(ctx, replicas, fx, results)
	tr.own += time.Since(t0)
	return reply, done
}

// runWrite carries out a write's effects and returns its reply once there is one.
func (s *clusterStore) runWrite(ctx context.Context, replicas []coord.Replica, fx []coord.Effect, results chan<- writeResult) (coord.Reply, bool) {
	var reply coord.Reply
	done := false
	var local *coord.SendWrite
	var localAnswer func([]byte, error)
	for _, e := range fx {
		switch e := e.(type) {
		case coord.SendWrite:
			s.metrics.sentTo(roleOf(replicas, e.To), wire.MethodWrite)
			answer := func(_ []byte, err error) { results <- writeResult{e.To, err, time.Now()} }
			switch inner := answer; {
			case s.async == nil:
			case e.Async:
				answered := s.async.sent(e.To, 1)
				answer = func(b []byte, err error) { answered(err != nil); inner(b, err) }
			default: // a late synchronous replica slows the asynchronous ones on its host
				answered := s.async.synchronous(e.To)
				answer = func(b []byte, err error) { answered(err != nil); inner(b, err) }
			}
			if s.isLocal(e.To) {
				local, localAnswer = &e, answer
				continue
			}
			payload := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{e.Mutation}})
			s.send(ctx, e.To, wire.MethodWrite, payload, answer) // not timed: see loadTracker
		case coord.StoreHint:
			s.hint(e)
			if e.Deferred {
				s.metrics.deferred()
			}
		case coord.Reply:
			reply, done = e, true
		}
	}
	if local != nil { // after the remote sends, so that they overlap with it
		s.metrics.replicaRequest(wire.MethodWrite)
		// In a goroutine, unlike a local read: an engine's write can stall for seconds (a
		// B+tree commit held up by writeback on a slow disk, an LSM write stall), and the
		// request must still answer at its deadline. results has room for every answer.
		m := local.Mutation
		go func() { localAnswer(nil, s.local.Write([]row.Mutation{m})) }()
	}
	return reply, done
}

// roleOf returns the engine role of replica id in replicas.
func roleOf(replicas []coord.Replica, id ring.NodeID) ring.Role {
	for _, r := range replicas {
		if r.ID == id {
			return r.Role
		}
	}
	return ring.RoleUnknown
}

// isLocal reports whether replica id is this node's own, called directly.
func (s *clusterStore) isLocal(id ring.NodeID) bool { return s.local != nil && id == s.self }

// hint hands h to the hint sink, which counts and logs its outcome (see hintQueue).
func (s *clusterStore) hint(h coord.StoreHint) {
	if s.hints != nil {
		_ = s.hints.Add(string(h.For), h.Mutation, time.Now())
	}
}

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

func (s *clusterStore) getAt(level coord.Level, key []byte) (_ row.Row, _ bool, err error) {
	start := time.Now()
	defer func() { s.metrics.request("read", start, err) }()
	key = append([]byte(nil), key...)
	ctx := lazyctx.WithDeadline(context.Background(), start.Add(s.timeout))
	timer := getTimer(s.timeout)
	defer putTimer(timer)
	replicas := s.replicas(key)
	if s.load != nil {
		replicas = s.load.annotate(key, replicas, start)
	}
	rd, fx := coord.StartRead(key, level, replicas, s.policy, s.repair)
	// At most a digest read, a data read and a repair per replica: sends never block,
	// whenever the read stops listening.
	run := newReadRun(s, ctx, key, replicas, 3*len(replicas))
	// With a read fallback, a local read that may wait on a disk runs in a goroutine, so
	// that the fallback's timer can fire meanwhile; an in-memory one never waits.
	run.localAsync = s.readSlowAfter > 0 && roleOf(replicas, s.self) != ring.InMemory
	reply, done := run.effects(fx)
	var slow <-chan time.Time
	if s.readSlowAfter > 0 {
		s.retries.earn()
		if !done {
			after := s.readSlowAfter
			if s.readLatencies != nil {
				after = s.readLatencies.threshold()
			}
			st := getTimer(after)
			defer putTimer(st)
			slow = st.C
		}
	}
	for !done {
		select {
		case <-slow:
			slow = nil // once per read
			switch {
			case !rd.CanSlow(): // nothing left to ask: the budget is not spent
			case s.retries.spend():
				reply, done = run.effects(rd.OnSlow())
			case s.load != nil && s.load.quick(rd.SlowSpares(), s.readSlowAfter/2, time.Now()):
				// The budget keeps retries off disks that every read is late on; spares
				// that answer quickly are not among them (a saturated B+tree's reads go
				// to the lsm nodes, whose disks are idle), and once they slow down they
				// stop being quick.
				s.metrics.retryToQuickSpares()
				reply, done = run.effects(rd.OnSlow())
			default:
				s.metrics.retryDenied()
			}
		case r := <-run.results:
			run.out--
			if r.repair {
				reply, done = run.effects(rd.OnRepairResponse(r.from, r.resp.Err))
			} else {
				reply, done = run.effects(rd.OnResponse(r.from, r.resp))
			}
		case <-timer.C:
			reply, done = run.effects(rd.OnTimeout())
		}
	}
	s.metrics.readDone(rd)
	if s.readLatencies != nil {
		now := time.Now()
		s.readLatencies.observe(now, now.Sub(start))
	}
	if run.out == 0 {
		ctx.Release()
		readRuns.Put(run) // nothing will send on its channel any more
	} else {
		// Background read repairs (or answers no longer needed) may use ctx until the
		// request's deadline.
		time.AfterFunc(time.Until(start.Add(s.timeout)), ctx.Release)
	}
	if reply.Err != nil {
		return row.Row{}, false, reply.Err
	}
	return reply.Row, reply.Found, nil
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

// readRuns recycles readRuns (and their channels) of reads that ended with no answer
// outstanding.
var readRuns sync.Pool

func newReadRun(s *clusterStore, ctx context.Context, key []byte, replicas []coord.Replica, room int) *readRun {
	run, _ := readRuns.Get().(*readRun)
	if run == nil || cap(run.results) < room {
		run = &readRun{results: make(chan readResult, room)}
	}
	run.s, run.ctx, run.key, run.replicas, run.out = s, ctx, key, replicas, 0
	return run
}

// readRun carries out one read's effects.
type readRun struct {
	s        *clusterStore
	ctx      context.Context
	key      []byte
	replicas []coord.Replica
	results  chan readResult
	out      int // requests sent whose answers are not yet taken from results
	// localAsync runs the local replica's reads in a goroutine instead of inline.
	localAsync bool
}

// effects carries out fx and returns the read's reply once there is one.
func (run *readRun) effects(fx []coord.Effect) (coord.Reply, bool) {
	s, ctx, key, results := run.s, run.ctx, run.key, run.results
	var reply coord.Reply
	done := false
	var local []coord.Effect
	for _, e := range fx {
		switch e := e.(type) {
		case coord.SendRead:
			run.out++
			s.metrics.sentTo(roleOf(run.replicas, e.To), wire.MethodRead)
			if s.isLocal(e.To) {
				local = append(local, e)
				continue
			}
			payload := wire.AppendReadRequest(nil, &wire.ReadRequest{Key: key, Digest: e.Digest})
			answer := func(b []byte, err error) { results <- readResult{from: e.To, resp: decodeRead(b, err)} }
			if s.load != nil {
				answer = s.load.timed(e.To, answer)
			}
			s.send(ctx, e.To, wire.MethodRead, payload, answer)
		case coord.SendWrite: // read repair
			run.out++
			s.metrics.repair()
			s.metrics.sentTo(roleOf(run.replicas, e.To), wire.MethodWrite)
			if s.isLocal(e.To) {
				local = append(local, e)
				continue
			}
			payload := wire.AppendWriteRequest(nil, &wire.WriteRequest{Mutations: []row.Mutation{e.Mutation}})
			s.send(ctx, e.To, wire.MethodWrite, payload, func(_ []byte, err error) {
				if err != nil {
					s.log.Debug("read repair failed", "replica", e.To, "err", err)
				}
				results <- readResult{from: e.To, repair: true, resp: coord.ReadResponse{Err: err}}
			})
		case coord.Reply:
			reply, done = e, true
		}
	}
	// The local replica's work runs here, after the remote sends, so that they overlap.
	// results has room for every answer, so these sends do not block.
	for _, e := range local {
		switch e := e.(type) {
		case coord.SendRead:
			s.metrics.replicaRequest(wire.MethodRead)
			read := func() {
				start := time.Now()
				r, err := s.local.Read(key, e.Digest)
				if s.load != nil { // its own latency, as a peer's is timed
					now := time.Now()
					s.load.observe(e.To, now.Sub(start), now)
				}
				results <- readResult{from: e.To, resp: coord.ReadResponse{Err: err, Row: r.Row, Found: r.Found, Digest: r.Digest}}
			}
			if run.localAsync {
				go read()
			} else {
				read()
			}
		case coord.SendWrite:
			s.metrics.replicaRequest(wire.MethodWrite)
			// In a goroutine: a background repair must not hold the reply back for its
			// fsync, and a blocking one is waited for through results anyway.
			go func() {
				err := s.local.Write([]row.Mutation{e.Mutation})
				results <- readResult{from: e.To, repair: true, resp: coord.ReadResponse{Err: err}}
			}()
		}
	}
	return reply, done
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
