package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/repair"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// Anti-entropy repair (`kura admin repair`, package repair): the node compares each
// range it replicates with each other replica of it and exchanges the rows that differ.
// The repairer runs one session at a time, range after range; its responder answers the
// sessions peers open with this node (wire.MethodRepair).

// repairCallTimeout bounds one step of a session, beyond the time its scans may take at
// the row limit (callTimeout).
const repairCallTimeout = 2 * time.Minute

// repairer is a cluster node's anti-entropy repair.
type repairer struct {
	c       *clusterNode
	respond *repair.Responder
	metrics repairMetrics

	// busy is held by the range being repaired: operator and background repairs take
	// turns by range.
	busy sync.Mutex
	// limit paces the rows this node's repairs scan, as initiator and responder alike
	// (--repair-rows-per-second); nil when unbounded.
	limit *rate.Limiter
	store pacedStore

	mu       sync.Mutex
	progress admin.RepairProgress
	ran      bool          // progress is of a repair that ran (or runs)
	cancel   chan struct{} // closed to stop the running operator's repair after its range
}

// pacedStore is the engine as repair sessions read it: every scan waits on the
// repairer's row limit, a batch of rows at a time.
type pacedStore struct {
	engine.Scanner
	limit *rate.Limiter   // nil: unbounded
	ctx   context.Context // ends when the node stops
}

// pacedBatch is how many rows a scan reads between two waits on the limit.
const pacedBatch = 64

// Scan implements repair.Store.
func (s pacedStore) Scan(lo, hi []byte, fn func(ekey []byte, r row.Row) error) error {
	n := 0
	return s.Scanner.Scan(lo, hi, func(ekey []byte, r row.Row) error {
		if n++; n == pacedBatch && s.limit != nil {
			n = 0
			if err := s.limit.WaitN(s.ctx, pacedBatch); err != nil {
				return fmt.Errorf("node: repair scan: %w", err)
			}
		}
		return fn(ekey, r)
	})
}

type repairMetrics struct {
	sessions *prometheus.CounterVec // result: equal, differ, failed
	bytes    *prometheus.CounterVec // direction: sent, received
	rows     prometheus.Counter
	differ   prometheus.Counter
	pending  prometheus.Gauge
	// background counts the ranges the background scheduler repaired (result repaired)
	// or tried and failed (result failed).
	background *prometheus.CounterVec
}

func newRepairer(c *clusterNode, eng engine.Engine, reg prometheus.Registerer) *repairer {
	// A burst of a twentieth of a second's rows, at least a batch: after a pause the
	// scans do not catch up at once.
	var limit *rate.Limiter
	if n := c.cfg.RepairRowsPerSecond; n > 0 {
		limit = rate.NewLimiter(rate.Limit(n), int(max(n/20, pacedBatch)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-c.stop; cancel() }()
	store := pacedStore{Scanner: engine.Scanner{Engine: eng}, limit: limit, ctx: ctx}
	r := &repairer{c: c, limit: limit, store: store, respond: &repair.Responder{Store: store}}
	if c.purge != nil {
		r.respond.Repaired = func(start, end ring.Token, at int64) error {
			c.log.Debug("repair: a peer repaired a range with all its replicas", "start", start, "end", end, "at", at)
			return c.purge.record(start, end, at)
		}
	}
	r.metrics = repairMetrics{
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_repair_sessions_total",
			Help: "Anti-entropy repair sessions this node initiated (one per range and other replica), by result: " +
				"equal (the replicas agreed), differ (rows were exchanged), failed."}, []string{"result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_repair_bytes_total",
			Help: "Bytes on the wire of the repair sessions this node initiated, frame headers included, by direction."}, []string{"direction"}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_repair_rows_differing_total",
			Help: "Rows the repair sessions this node initiated found differing between replicas."}),
		differ: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_repair_bytes_differing_total",
			Help: "Encoded size of the newer version of each row kura_repair_rows_differing_total counts."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kura_repair_ranges_pending",
			Help: "Ranges the running repair on this node has still to compare."}),
		background: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_repair_background_ranges_total",
			Help: "Ranges the background repair scheduler (--repair-period) ran, by result: repaired (with all their replicas), failed."}, []string{"result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{r.metrics.sessions, r.metrics.bytes, r.metrics.rows, r.metrics.differ, r.metrics.pending, r.metrics.background} {
			reg.MustRegister(c)
		}
	}
	return r
}

// repairHandler answers wire.MethodRepair with the repairer's responder, and passes every
// other method to next.
type repairHandler struct {
	next interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
	r *repairer
}

func (h repairHandler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if method != wire.MethodRepair {
		return h.next.Handle(ctx, method, payload)
	}
	return h.r.respond.Serve(payload)
}

// repairPasses bounds the passes of an operator's repair over a ring that keeps
// changing under it.
const repairPasses = 3

// sameRing reports whether two rings have the same ranges with the same first replicas
// and the same members: the tasks of a repair are the same on both.
func sameRing(a, b *ring.Ring) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.RangeCount() != b.RangeCount() || len(a.Nodes()) != len(b.Nodes()) {
		return false
	}
	for i := range a.RangeCount() {
		if a.RangeEnd(i) != b.RangeEnd(i) || a.Primary(a.RangeEnd(i)) != b.Primary(b.RangeEnd(i)) {
			return false
		}
	}
	for i, n := range a.Nodes() {
		if m := b.Nodes()[i]; n.ID != m.ID || n.Host != m.Host || n.Rack != m.Rack || n.Role != m.Role {
			return false
		}
	}
	return true
}

// repairTask is one range and the other replicas to repair it with.
type repairTask struct {
	start, end ring.Token
	peers      []ring.NodeID
}

// tasks lists what req asks this node to repair, from its current ring, which it
// returns too.
func (r *repairer) tasks(req admin.RepairRequest) ([]repairTask, *ring.Ring, error) {
	c := r.c
	rg := c.machine.Ring()
	if rg == nil {
		return nil, nil, errors.New("node: no ring yet")
	}
	var limit *repair.Shape
	if req.Range != "" {
		lo, hi, ok := strings.Cut(req.Range, ":")
		s, err1 := strconv.ParseInt(lo, 10, 64)
		e, err2 := strconv.ParseInt(hi, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("node: range %q: want START:END, two tokens", req.Range)
		}
		limit = &repair.Shape{Start: ring.Token(s), End: ring.Token(e)}
	}
	if req.Node != "" {
		if _, ok := rg.Node(ring.NodeID(req.Node)); !ok {
			return nil, nil, fmt.Errorf("node: %s is not in the ring", req.Node)
		}
	}
	var out []repairTask
	for i := range rg.RangeCount() {
		set := c.strategy.Replicas(rg, rg.RangeEnd(i), c.cfg.ReplicationFactor)
		if !slices.Contains(set, c.self) || (req.Primary && set[0] != c.self) {
			continue
		}
		var peers []ring.NodeID
		for _, id := range set {
			if id != c.self && (req.Node == "" || string(id) == req.Node) {
				peers = append(peers, id)
			}
		}
		if len(peers) == 0 {
			continue
		}
		// With several peers the first is asked again at the end, so that it also gets
		// what the others held (the node holds the merge of all by then); runTask skips
		// it when the others brought nothing.
		if len(peers) > 1 {
			peers = append(peers, peers[0])
		}
		arcs := []repair.Shape{{Start: rg.RangeStart(i), End: rg.RangeEnd(i)}}
		if limit != nil {
			arcs = arcs[0].Intersect(*limit)
		}
		for _, a := range arcs {
			out = append(out, repairTask{start: a.Start, end: a.End, peers: peers})
		}
	}
	return out, rg, nil
}

// start starts a repair in the background, or returns admin.ErrRepairRunning.
// A request with CoveredSince runs no repair: it announces the time, as a full repair
// of the node would (see announceCovered).
func (r *repairer) start(req admin.RepairRequest) (admin.RepairProgress, error) {
	if !req.CoveredSince.IsZero() {
		if req.CoveredSince.After(time.Now()) {
			return admin.RepairProgress{}, fmt.Errorf("node: covered_since %v is in the future", req.CoveredSince)
		}
		r.announceCovered(req.CoveredSince, "a repair of the cluster")
		pr, _ := r.status()
		return pr, nil
	}
	tasks, rg, err := r.tasks(req)
	if err != nil {
		return admin.RepairProgress{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress.Running {
		return r.progress, admin.ErrRepairRunning
	}
	r.progress = admin.RepairProgress{Running: true, Request: req, Started: time.Now(), Ranges: len(tasks)}
	r.ran = true
	r.cancel = make(chan struct{})
	r.metrics.pending.Set(float64(len(tasks)))
	r.c.wg.Add(1)
	go r.run(tasks, rg, req, r.cancel)
	return r.progress, nil
}

// stop stops the running operator's repair once the range it is on is done (the
// background scheduler's repairs go on), and returns its progress; false when none runs.
func (r *repairer) stop() (admin.RepairProgress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.progress.Running {
		return r.progress, false
	}
	select {
	case <-r.cancel:
	default:
		close(r.cancel)
	}
	return r.progress, true
}

// status returns the running or last repair's progress.
func (r *repairer) status() (admin.RepairProgress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress, r.ran
}

// announceCovered announces through gossip that this node holds every write
// acknowledged before t (cluster.Member.Refilled, which a rebuild announces too): its
// coordinators then discard the hints and clear the repair marks they hold for it from
// before t. why says what covered it, for the log.
func (r *repairer) announceCovered(t time.Time, why string) {
	r.c.log.Info("repair: holds every write acknowledged before the repair started", "by", why, "since", t)
	r.c.gossip.Update(func(m *cluster.Member) {
		if t.After(m.Refilled) {
			m.Refilled = t
		}
	})
}

func (r *repairer) run(tasks []repairTask, rg *ring.Ring, req admin.RepairRequest, cancel <-chan struct{}) {
	defer r.c.wg.Done()
	c := r.c
	c.log.Info("repair: starting", "ranges", len(tasks))
	done := 0
	for pass := 1; ; pass++ {
		for i, t := range tasks {
			select {
			case <-cancel:
				r.finish(errors.New("stopped by an operator"))
				return
			default:
			}
			if _, stopping := r.runTask(t, r.record); stopping {
				r.finish(errors.New("node: stopping"))
				return
			}
			done++
			r.mu.Lock()
			r.progress.RangesDone = done
			r.mu.Unlock()
			r.metrics.pending.Set(float64(len(tasks) - i - 1))
		}
		// A membership change during the repair moved ranges between replicas: the
		// ranges of the new ring are repaired again, up to twice (ranges whose replicas
		// already agree cost a scan and one message).
		if sameRing(c.machine.Ring(), rg) || pass == repairPasses {
			break
		}
		next, nrg, err := r.tasks(req)
		if err != nil {
			break
		}
		c.log.Info("repair: the ring changed during the repair: repairing the new ring's ranges", "ranges", len(next), "pass", pass+1)
		r.mu.Lock()
		r.progress.Ranges += len(next)
		r.mu.Unlock()
		tasks, rg = next, nrg
	}
	// Every range compared with every other replica, on the ring it still has: the node
	// holds every write acknowledged before the repair started.
	pr, _ := r.status()
	if req == (admin.RepairRequest{}) && pr.Failed == 0 && sameRing(c.machine.Ring(), rg) {
		r.announceCovered(pr.Started, "a repair of every range it replicates")
	}
	r.finish(nil)
}

// repairBackgroundRetry is how long the background scheduler leaves a range whose repair
// failed (a replica down) before it tries it again; other ranges go meanwhile.
var repairBackgroundRetry = time.Minute

// background repairs the ranges this node is the first replica of, each with all its
// other replicas once per period, the most overdue first (repair.NextDue), until the node
// stops. A range's last repair is what the repair history says (purge.go), so repairs by
// an operator count, and a restart does not start the period over.
func (r *repairer) background(period time.Duration) {
	defer r.c.wg.Done()
	c := r.c
	start := time.Now().UnixMicro()
	failed := map[[2]ring.Token]int64{} // when a range's last background repair failed
	count := func(st repair.Stats, err error, p ring.NodeID, retrying bool) { r.count(st, err, p, retrying) }
	for {
		wait := time.Minute
		tasks, _, err := r.tasks(admin.RepairRequest{Primary: true})
		if err != nil || len(tasks) == 0 { // no ring yet, or this node not in it yet
			wait = time.Second
		}
		if len(tasks) > 0 {
			last := make([]int64, len(tasks))
			for i, t := range tasks {
				if last[i] = c.purge.last(t.start, t.end); last[i] > 0 {
					last[i] += repairHorizonMargin // the history holds the repair's start less the margin
				}
				if f, ok := failed[[2]ring.Token{t.start, t.end}]; ok {
					last[i] = max(last[i], f+repairBackgroundRetry.Microseconds()-period.Microseconds())
				}
			}
			i, due := repair.NextDue(last, start, period.Microseconds())
			if now := time.Now().UnixMicro(); due > now {
				wait = min(wait, time.Duration(due-now)*time.Microsecond)
			} else {
				t := tasks[i]
				complete, stopping := false, false
				if r.peersUp(t) { // a replica known down fails the range at once: it waits its turn again
					complete, stopping = r.runTask(t, count)
				}
				if stopping {
					return
				}
				result := map[bool]string{true: "repaired", false: "failed"}[complete]
				r.metrics.background.WithLabelValues(result).Inc()
				c.log.Debug("repair: background", "start", t.start, "end", t.end, "result", result, "overdue", time.Duration(time.Now().UnixMicro()-due)*time.Microsecond)
				if complete {
					delete(failed, [2]ring.Token{t.start, t.end})
				} else {
					failed[[2]ring.Token{t.start, t.end}] = time.Now().UnixMicro()
				}
				wait = 0
			}
		}
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
	}
}

// peersUp reports whether gossip holds every other replica of t up.
func (r *repairer) peersUp(t repairTask) bool {
	for _, p := range t.peers {
		if m, ok := r.c.machine.Member(p); !ok || !m.Up {
			return false
		}
	}
	return true
}

// runTask runs the sessions of one range with each of its peers, one range at a time on
// the node (background and operator repairs alternate by range), retrying each failed
// session, and records the range repaired when all succeed. record is told of each
// session's outcome. It reports whether every session succeeded, and whether the node
// is stopping (the task then stops where it is).
func (r *repairer) runTask(t repairTask, record func(st repair.Stats, err error, p ring.NodeID, retrying bool)) (complete, stopping bool) {
	c := r.c
	r.busy.Lock()
	defer r.busy.Unlock()
	began := time.Now()
	complete = true
	received := false // whether a session after the first brought this node rows
	for i, p := range t.peers {
		select {
		case <-c.stop:
			return false, true
		default:
		}
		if i > 0 && i == len(t.peers)-1 && p == t.peers[0] && !received {
			// The first peer again, for what the others held: nothing came from them.
			break
		}
		st, err := r.session(t, p)
		// A peer just reachable again may still be in its transport's dial backoff,
		// and a peer that restarts drops its sessions: a failed session is run
		// again, from the start, after a wait that doubles.
		for wait := repairRetryBase; err != nil && wait <= repairRetryMax; wait *= 2 {
			record(st, err, p, true)
			select {
			case <-c.stop:
				return false, true
			case <-time.After(wait):
			}
			st, err = r.session(t, p)
		}
		record(st, err, p, false)
		complete = complete && err == nil
		received = received || (i > 0 && st.RowsReceived > 0)
	}
	if complete {
		r.repaired(t, began)
	}
	return complete, false
}

// repaired records that every session of t, the first begun at began, succeeded: every
// replica of its range held every delete timestamped before began, less the margin
// (purge.go), and tells the other replicas.
func (r *repairer) repaired(t repairTask, began time.Time) {
	c := r.c
	if c.purge == nil {
		return
	}
	at := began.UnixMicro() - repairHorizonMargin
	if err := c.purge.record(t.start, t.end, at); err != nil {
		c.log.Warn("repair: recording a repaired range", "err", err)
	}
	peers := slices.Clone(t.peers)
	slices.Sort(peers)
	for _, p := range slices.Compact(peers) {
		cl, err := c.peer(p)
		if err == nil {
			err = repair.Done(func(req []byte) ([]byte, error) {
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
				defer cancel()
				return cl.Call(ctx, wire.MethodRepair, req)
			}, t.start, t.end, at)
		}
		if err != nil {
			c.log.Warn("repair: telling a replica its range was repaired", "peer", p, "err", err)
		}
	}
}

// callTimeout bounds one step of a session: repairCallTimeout, plus twice what scanning
// every row this node holds takes at the row limit (a step scans at most a range, which
// the responder holds about as many rows of as this node; twice, for the limit it shares
// with other sessions).
func (r *repairer) callTimeout() time.Duration {
	d := repairCallTimeout
	if r.limit != nil {
		rows := max(r.c.handler.Engine.Stats().RowsEstimate, 0)
		d += time.Duration(float64(2*rows) / float64(r.limit.Limit()) * float64(time.Second))
	}
	return d
}

// session runs one session of range t with peer p.
func (r *repairer) session(t repairTask, p ring.NodeID) (repair.Stats, error) {
	c := r.c
	if !c.ownsTokens(p) {
		return repair.Stats{}, fmt.Errorf("node: %s no longer owns tokens", p)
	}
	cl, err := c.peer(p)
	if err != nil {
		return repair.Stats{}, err
	}
	timeout := r.callTimeout()
	peer := func(req []byte) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return cl.Call(ctx, wire.MethodRepair, req)
	}
	v := repair.View{Salt: rand.Uint64(), Now: time.Now().UnixMicro(), Grace: c.cfg.TombstoneGrace.Microseconds()}
	return repair.Run(r.store, peer, rand.Uint64(), t.start, t.end, v)
}

// Retries of a failed session: the first after repairRetryBase, doubling up to
// repairRetryMax (about 30 s in all).
var (
	repairRetryBase = 500 * time.Millisecond
	repairRetryMax  = 16 * time.Second
)

// record counts a session's bytes, and, unless it is an attempt to be run again
// (retrying), its outcome.
func (r *repairer) record(st repair.Stats, err error, p ring.NodeID, retrying bool) {
	sent, received := r.count(st, err, p, retrying)
	r.mu.Lock()
	defer r.mu.Unlock()
	pr := &r.progress
	pr.Sessions++
	pr.BytesSent += sent
	pr.BytesReceived += received
	pr.RowsHashed += st.Rows
	switch {
	case retrying:
		pr.Retries++
		pr.LastError = fmt.Sprintf("with %s (to be run again): %v", p, err)
	case err != nil:
		pr.Failed++
		pr.LastError = fmt.Sprintf("with %s: %v", p, err)
	case st.Depth == 0 && st.RowsSent+st.RowsReceived == 0:
		pr.Equal++
	default:
		pr.RowsDiffering += st.RowsDiffering
		pr.BytesDiffering += st.BytesDiffering
	}
}

// count adds a session's outcome to the metrics, and returns its bytes on the wire each
// way; a session to be run again (retrying) counts its bytes only.
func (r *repairer) count(st repair.Stats, err error, p ring.NodeID, retrying bool) (sent, received int64) {
	sent = st.BytesSent + st.Messages*transport.HeaderSize
	received = st.BytesReceived + st.Messages*transport.HeaderSize
	r.metrics.bytes.WithLabelValues("sent").Add(float64(sent))
	r.metrics.bytes.WithLabelValues("received").Add(float64(received))
	r.metrics.rows.Add(float64(st.RowsDiffering))
	r.metrics.differ.Add(float64(st.BytesDiffering))
	switch {
	case retrying:
	case err != nil:
		r.metrics.sessions.WithLabelValues("failed").Inc()
		r.c.log.Warn("repair: session failed", "peer", p, "err", err)
	case st.Depth == 0 && st.RowsSent+st.RowsReceived == 0:
		r.metrics.sessions.WithLabelValues("equal").Inc()
	default:
		r.metrics.sessions.WithLabelValues("differ").Inc()
	}
	return sent, received
}

func (r *repairer) finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pr := &r.progress
	pr.Running = false
	pr.Finished = time.Now()
	if err != nil {
		pr.LastError = err.Error()
	}
	r.c.log.Info("repair: done", "ranges", pr.RangesDone, "sessions", pr.Sessions, "equal", pr.Equal, "failed", pr.Failed,
		"rows_differing", pr.RowsDiffering, "bytes_differing", pr.BytesDiffering, "bytes_sent", pr.BytesSent,
		"bytes_received", pr.BytesReceived, "took", pr.Finished.Sub(pr.Started).Round(time.Millisecond))
}
