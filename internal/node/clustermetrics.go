package node

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// clusterMetrics are the coordinator's, the replica's and the hints' counters. A nil
// *clusterMetrics records nothing (tests build stores without a registry).
type clusterMetrics struct {
	requests     *prometheus.CounterVec   // op, result
	latency      *prometheus.HistogramVec // op
	replica      *prometheus.CounterVec   // method
	replicaRead  prometheus.Counter       // replica's "read" child, resolved once
	replicaWrite prometheus.Counter
	replicaOther prometheus.Counter
	// served[method]: how long this node's replica took to serve requests from the
	// network (0 read, 1 write, 2 other), by the replica's clock: which replica of a slow
	// write or read was the slow one.
	served       [3]prometheus.Observer
	hintsStored  prometheus.Counter
	hintsDropped prometheus.Counter
	hintsSent    prometheus.Counter
	hintsDiscard prometheus.Counter
	hintsDefer   prometheus.Counter
	readRepairs  prometheus.Counter
	// sent[role][method]: requests this coordinator sent to replicas, by the replica's
	// engine role (method 0 read, 1 write).
	sent      [ring.InMemory + 1][2]prometheus.Counter
	fallbacks *prometheus.CounterVec // op, reason
	// overBudget: reads late past --read-fallback-after but not retried (retryBudget).
	overBudget prometheus.Counter
	// quickSpares: late reads retried past the budget on spares known to answer quickly.
	quickSpares prometheus.Counter
}

func newClusterMetrics(reg prometheus.Registerer, hints *hint.Store, role ring.Role) *clusterMetrics {
	m := &clusterMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_coordinator_requests_total",
			Help: "Reads and writes this node coordinated, by outcome (ok, unavailable, timeout, error)."}, []string{"op", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kura_coordinator_request_seconds",
			Help:    "Time from the start of a coordinated read or write to its reply.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"op"}),
		replica: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_replica_requests_total",
			Help:        "Requests this node served as a replica (its own coordinator's included), by method; role is the node's engine role.",
			ConstLabels: prometheus.Labels{"role": role.String()}}, []string{"method"}),
		hintsStored: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_hints_stored_total",
			Help: "Writes kept as hints for replicas that were down or failed."}),
		hintsDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_hints_dropped_total",
			Help: "Hints refused by the hint window or the size bound."}),
		hintsSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_hints_replayed_total",
			Help: "Hints delivered to replicas that were back."}),
		hintsDiscard: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_hints_discarded_total",
			Help: "Hints deleted unsent because their replica was rebuilt from its peers after they were created."}),
		hintsDefer: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_coordinator_deferred_writes_total",
			Help: "Asynchronous writes (engine-aware routing's, to read-optimized replicas) kept as hints instead of sent, " +
				"because the replica's window of unanswered writes was full; counted in kura_hints_stored_total too."}),
		readRepairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_read_repairs_total",
			Help: "Repair writes sent to replicas found stale by a read."}),
		overBudget: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_coordinator_read_retries_denied_total",
			Help: "Reads still waiting after --read-fallback-after that asked no spare replica because about a tenth " +
				"of reads had been retried already (the retry budget)."}),
		quickSpares: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_coordinator_read_retries_to_quick_spares_total",
			Help: "Reads still waiting after --read-fallback-after that asked a spare replica although the retry budget " +
				"was spent, because every spare asked had answered this coordinator in under half of --read-fallback-after " +
				"of late (load-aware routing)."}),
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_hints_pending",
		Help: "Hints held for replicas, waiting for replay."}, func() float64 {
		n := int64(0)
		for _, s := range hints.Stats() {
			n += s.Hints
		}
		return float64(n)
	})
	m.replicaRead = m.replica.WithLabelValues("read")
	m.replicaWrite = m.replica.WithLabelValues("write")
	m.replicaOther = m.replica.WithLabelValues("other")
	servedVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kura_replica_request_seconds",
		Help:        "Time this node's replica took to serve a replica request, by method; role is the node's engine role.",
		ConstLabels: prometheus.Labels{"role": role.String()},
		Buckets:     prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"method"})
	for i, name := range []string{"read", "write", "other"} {
		m.served[i] = servedVec.WithLabelValues(name)
	}
	reg.MustRegister(servedVec)
	sent := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_coordinator_replica_requests_total",
		Help: "Reads and writes (read repairs included) this node sent to replicas as coordinator, by the replica's engine role."},
		[]string{"role", "method"})
	for r := range m.sent {
		for k, method := range []string{"read", "write"} {
			m.sent[r][k] = sent.WithLabelValues(ring.Role(r).String(), method)
		}
	}
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_coordinator_fallbacks_total",
		Help: "Coordinated requests that left their policy's first plan: a write whose counted replica failed " +
			"(reason sync_failed) or was slower than --write-fallback-after (sync_slow), a read whose replica " +
			"failed (replica_failed) or answered later than --read-fallback-after (replica_slow, counting the " +
			"replicas asked in their place) or whose answers disagreed (disagreed)."},
		[]string{"op", "reason"})
	reg.MustRegister(m.requests, m.latency, m.replica, m.hintsStored, m.hintsDropped, m.hintsSent, m.hintsDiscard, m.hintsDefer, m.readRepairs, pending,
		sent, m.fallbacks, m.overBudget, m.quickSpares)
	return m
}

// sentTo records a request this coordinator sent to a replica of role.
func (m *clusterMetrics) sentTo(role ring.Role, method uint16) {
	if m == nil || int(role) >= len(m.sent) {
		return
	}
	k := 0
	if method == wire.MethodWrite {
		k = 1
	}
	m.sent[role][k].Inc()
}

// readDone records how a coordinated read left its first plan.
func (m *clusterMetrics) readDone(rd *coord.Read) {
	if m == nil {
		return
	}
	if n := rd.Failures(); n > 0 {
		m.fallbacks.WithLabelValues("read", "replica_failed").Add(float64(n))
	}
	if rd.Disagreed() {
		m.fallbacks.WithLabelValues("read", "disagreed").Inc()
	}
	if n := rd.Slowed(); n > 0 {
		m.fallbacks.WithLabelValues("read", "replica_slow").Add(float64(n))
	}
}

// retryDenied records a late read that the retry budget kept from asking a spare.
func (m *clusterMetrics) retryDenied() {
	if m != nil {
		m.overBudget.Inc()
	}
}

// retryToQuickSpares records a late read retried past the budget on quick spares.
func (m *clusterMetrics) retryToQuickSpares() {
	if m != nil {
		m.quickSpares.Inc()
	}
}

// writeDone records whether a coordinated write fell back.
func (m *clusterMetrics) writeDone(w *coord.Write) {
	switch {
	case m == nil || !w.FellBack():
	case w.Slowed():
		m.fallbacks.WithLabelValues("write", "sync_slow").Inc()
	default:
		m.fallbacks.WithLabelValues("write", "sync_failed").Inc()
	}
}

// internodeCollector exports, at scrape time, what the internode transport wrote: frames
// and flushes of this node's requests to peers (side "client") and of its responses to
// them (side "server"). Frames per flush is the write coalescing.
type internodeCollector struct{ c *clusterNode }

var (
	internodeFrames = prometheus.NewDesc("kura_internode_frames_written_total",
		"Internode frames written: requests to peers (side=client), responses to them (side=server).", []string{"side"}, nil)
	internodeFlushes = prometheus.NewDesc("kura_internode_flushes_total",
		"Internode write batches flushed to the socket; frames over flushes is the write coalescing.", []string{"side"}, nil)
)

func (ic internodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- internodeFrames
	ch <- internodeFlushes
}

func (ic internodeCollector) Collect(ch chan<- prometheus.Metric) {
	var server transport.Stats
	ic.c.peersMu.Lock()
	client := ic.c.retired
	for _, p := range ic.c.peers {
		s := p.Stats()
		client.FramesWritten += s.FramesWritten
		client.Flushes += s.Flushes
	}
	ic.c.peersMu.Unlock()
	if ic.c.server != nil {
		server = ic.c.server.Stats()
	}
	for side, s := range map[string]transport.Stats{"client": client, "server": server} {
		ch <- prometheus.MustNewConstMetric(internodeFrames, prometheus.CounterValue, float64(s.FramesWritten), side)
		ch <- prometheus.MustNewConstMetric(internodeFlushes, prometheus.CounterValue, float64(s.Flushes), side)
	}
}

// request records one coordinated request.
func (m *clusterMetrics) request(op string, start time.Time, err error) {
	if m == nil {
		return
	}
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, coord.ErrUnavailable):
		result = "unavailable"
	case errors.Is(err, coord.ErrTimeout):
		result = "timeout"
	default:
		result = "error"
	}
	m.requests.WithLabelValues(op, result).Inc()
	m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (m *clusterMetrics) discarded(n int) {
	if m != nil {
		m.hintsDiscard.Add(float64(n))
	}
}

func (m *clusterMetrics) hint(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.hintsDropped.Inc()
	} else {
		m.hintsStored.Inc()
	}
}

func (m *clusterMetrics) deferred() {
	if m != nil {
		m.hintsDefer.Inc()
	}
}

func (m *clusterMetrics) repair() {
	if m != nil {
		m.readRepairs.Inc()
	}
}

// countingHandler counts the replica requests a handler serves.
type countingHandler struct {
	h interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
	m *clusterMetrics
}

func (c countingHandler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	c.m.replicaRequest(method)
	if c.m == nil {
		return c.h.Handle(ctx, method, payload)
	}
	start := time.Now()
	out, err := c.h.Handle(ctx, method, payload)
	c.m.servedFor(method).Observe(time.Since(start).Seconds())
	return out, err
}

// servedFor returns the histogram of the time spent serving method.
func (m *clusterMetrics) servedFor(method uint16) prometheus.Observer {
	switch method {
	case wire.MethodRead:
		return m.served[0]
	case wire.MethodWrite:
		return m.served[1]
	}
	return m.served[2]
}

// replicaRequest counts one request served by this node's replica, from the network or
// from its own coordinator.
func (m *clusterMetrics) replicaRequest(method uint16) {
	if m == nil {
		return
	}
	switch method {
	case wire.MethodWrite:
		m.replicaWrite.Inc()
	case wire.MethodRead:
		m.replicaRead.Inc()
	default:
		m.replicaOther.Inc()
	}
}
