package admin

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/machine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// ClusterMetrics are a cluster node's counters: the coordinator's (it implements
// machine.Metrics), its replica's and its hints'. A nil *ClusterMetrics records nothing
// (tests build nodes' parts without a registry).
type ClusterMetrics struct {
	requests     *prometheus.CounterVec // op, result
	results      [2][4]prometheus.Counter
	latency      [2]prometheus.Observer // read, write
	replicaRead  prometheus.Counter     // kura_replica_requests_total's children
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
	// overBudget: reads late past --read-fallback-after but not retried (the retry budget).
	overBudget prometheus.Counter
	// quickSpares: late reads retried past the budget on spares known to answer quickly.
	quickSpares prometheus.Counter
	// clockRefused: writes refused because this node's clock was out of sync.
	clockRefused prometheus.Counter
}

var _ machine.Metrics = (*ClusterMetrics)(nil)

// NewClusterMetrics registers a cluster node's counters with reg; hints is the node's
// hint store, role its engine's.
func NewClusterMetrics(reg prometheus.Registerer, hints *hint.Store, role ring.Role) *ClusterMetrics {
	m := &ClusterMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_coordinator_requests_total",
			Help: "Reads and writes this node coordinated, by outcome (ok, unavailable, timeout, error)."}, []string{"op", "result"}),
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
		clockRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "kura_clock_writes_refused_total",
			Help: "Writes (and leader requests) this node refused, with UNAVAILABLE, because its clock was further off than " +
				"--max-clock-offset from most of its live peers' (kura_clock_out_of_sync)."}),
	}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kura_coordinator_request_seconds",
		Help:    "Time from the start of a coordinated read or write to its reply.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"op"})
	for i, op := range []string{"read", "write"} {
		m.latency[i] = latency.WithLabelValues(op)
		for j, result := range results {
			m.results[i][j] = m.requests.WithLabelValues(op, result)
		}
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_hints_pending",
		Help: "Hints held for replicas, waiting for replay."}, func() float64 {
		n := int64(0)
		for _, s := range hints.Stats() {
			n += s.Hints
		}
		return float64(n)
	})
	replica := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kura_replica_requests_total",
		Help:        "Requests this node served as a replica (its own coordinator's included), by method; role is the node's engine role.",
		ConstLabels: prometheus.Labels{"role": role.String()}}, []string{"method"})
	m.replicaRead = replica.WithLabelValues("read")
	m.replicaWrite = replica.WithLabelValues("write")
	m.replicaOther = replica.WithLabelValues("other")
	servedVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kura_replica_request_seconds",
		Help:        "Time this node's replica took to serve a replica request, by method; role is the node's engine role.",
		ConstLabels: prometheus.Labels{"role": role.String()},
		Buckets:     prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"method"})
	for i, name := range []string{"read", "write", "other"} {
		m.served[i] = servedVec.WithLabelValues(name)
	}
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
	reg.MustRegister(m.requests, latency, replica, servedVec, m.hintsStored, m.hintsDropped, m.hintsSent, m.hintsDiscard,
		m.hintsDefer, m.readRepairs, pending, sent, m.fallbacks, m.overBudget, m.quickSpares, m.clockRefused,
		repairMarksCollector{hints})
	return m
}

var (
	repairSpansDesc = prometheus.NewDesc("kura_hints_repair_marked_spans",
		"Spans of the ring (runs of 1/4096 buckets) in which a replica lost writes whose hints this node dropped "+
			"(the hint window, the size bound or the disk reserve): they need `kura admin rebuild` of that replica, "+
			"or a repair. Cleared once the replica is rebuilt.", []string{"replica"}, nil)
	repairShareDesc = prometheus.NewDesc("kura_hints_repair_marked_ring_share",
		"The share of the ring the spans of kura_hints_repair_marked_spans cover.", []string{"replica"}, nil)
)

// repairMarksCollector exports, at scrape time, the repair marks the hint store holds for
// each replica (hint.Store.Marked).
type repairMarksCollector struct{ hints *hint.Store }

// Describe implements prometheus.Collector.
func (c repairMarksCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- repairSpansDesc
	ch <- repairShareDesc
}

// Collect implements prometheus.Collector.
func (c repairMarksCollector) Collect(ch chan<- prometheus.Metric) {
	for _, target := range c.hints.MarkedTargets() {
		spans := c.hints.Marked(target)
		ch <- prometheus.MustNewConstMetric(repairSpansDesc, prometheus.GaugeValue, float64(len(spans)), target)
		ch <- prometheus.MustNewConstMetric(repairShareDesc, prometheus.GaugeValue, hint.RingShare(spans), target)
	}
}

// results are the outcomes kura_coordinator_requests_total counts.
var results = [4]string{"ok", "unavailable", "timeout", "error"}

// Request implements machine.Metrics.
func (m *ClusterMetrics) Request(op string, took time.Duration, err error) {
	if m == nil {
		return
	}
	i := 0
	if op == "write" {
		i = 1
	}
	result := 0
	switch {
	case err == nil:
	case errors.Is(err, coord.ErrUnavailable):
		result = 1
	case errors.Is(err, coord.ErrTimeout):
		result = 2
	default:
		result = 3
	}
	m.results[i][result].Inc()
	m.latency[i].Observe(took.Seconds())
}

// SentTo implements machine.Metrics.
func (m *ClusterMetrics) SentTo(role ring.Role, write bool) {
	if m == nil || int(role) >= len(m.sent) {
		return
	}
	m.sent[role][b2i(write)].Inc()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReadDone implements machine.Metrics.
func (m *ClusterMetrics) ReadDone(failures int, disagreed bool, slowed int) {
	if m == nil {
		return
	}
	if failures > 0 {
		m.fallbacks.WithLabelValues("read", "replica_failed").Add(float64(failures))
	}
	if disagreed {
		m.fallbacks.WithLabelValues("read", "disagreed").Inc()
	}
	if slowed > 0 {
		m.fallbacks.WithLabelValues("read", "replica_slow").Add(float64(slowed))
	}
}

// WriteDone implements machine.Metrics.
func (m *ClusterMetrics) WriteDone(fellBack, slowed bool) {
	switch {
	case m == nil || !fellBack:
	case slowed:
		m.fallbacks.WithLabelValues("write", "sync_slow").Inc()
	default:
		m.fallbacks.WithLabelValues("write", "sync_failed").Inc()
	}
}

// RetryDenied implements machine.Metrics.
func (m *ClusterMetrics) RetryDenied() {
	if m != nil {
		m.overBudget.Inc()
	}
}

// RetryToQuickSpares implements machine.Metrics.
func (m *ClusterMetrics) RetryToQuickSpares() {
	if m != nil {
		m.quickSpares.Inc()
	}
}

// Deferred implements machine.Metrics.
func (m *ClusterMetrics) Deferred() {
	if m != nil {
		m.hintsDefer.Inc()
	}
}

// Repair implements machine.Metrics.
func (m *ClusterMetrics) Repair() {
	if m != nil {
		m.readRepairs.Inc()
	}
}

// HintStored counts a hint the hint store kept (err nil) or refused.
func (m *ClusterMetrics) HintStored(err error) {
	switch {
	case m == nil:
	case err != nil:
		m.hintsDropped.Inc()
	default:
		m.hintsStored.Inc()
	}
}

// HintsReplayed counts n hints delivered to their replica.
func (m *ClusterMetrics) HintsReplayed(n int) {
	if m != nil {
		m.hintsSent.Add(float64(n))
	}
}

// HintsDiscarded counts n hints deleted unsent because a rebuild covered them.
func (m *ClusterMetrics) HintsDiscarded(n int) {
	if m != nil {
		m.hintsDiscard.Add(float64(n))
	}
}

// ClockRefused counts a write or leader request refused because this node's clock was out
// of sync.
func (m *ClusterMetrics) ClockRefused() {
	if m != nil {
		m.clockRefused.Inc()
	}
}

// ReplicaRequest counts one request served by this node's replica, from the network or
// from its own coordinator.
func (m *ClusterMetrics) ReplicaRequest(method uint16) {
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

// Served records that this node's replica took took to serve a request of method from
// the network.
func (m *ClusterMetrics) Served(method uint16, took time.Duration) {
	if m == nil {
		return
	}
	i := 2
	switch method {
	case wire.MethodRead:
		i = 0
	case wire.MethodWrite:
		i = 1
	}
	m.served[i].Observe(took.Seconds())
}

// InternodeStats is what the internode transport wrote: frames and flushes, of this
// node's requests to peers (client) or its responses to them (server).
type InternodeStats struct{ FramesWritten, Flushes uint64 }

var (
	internodeFrames = prometheus.NewDesc("kura_internode_frames_written_total",
		"Internode frames written: requests to peers (side=client), responses to them (side=server).", []string{"side"}, nil)
	internodeFlushes = prometheus.NewDesc("kura_internode_flushes_total",
		"Internode write batches flushed to the socket; frames over flushes is the write coalescing.", []string{"side"}, nil)
	readLatencyDesc = prometheus.NewDesc("kura_coordinator_replica_read_seconds",
		"This coordinator's recent read latency of each replica (itself included) that answered a read within the "+
			"last second: the moving average load-aware routing ranks replicas by.", []string{"replica"}, nil)
	asyncRateDesc = prometheus.NewDesc("kura_coordinator_async_write_rate",
		"This coordinator's pace of asynchronous writes per replica (engine-aware routing), writes per second: "+
			"writes beyond it are deferred to hints. Halved when the replica answers later than --async-write-target, "+
			"or a synchronous replica on its host later than --write-fallback-after.",
		[]string{"replica"}, nil)
)

// InternodeCollector exports, at scrape time, what stats returns: the internode
// transport's frames and flushes. Frames per flush is the write coalescing.
type InternodeCollector func() (client, server InternodeStats)

// Describe implements prometheus.Collector.
func (f InternodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- internodeFrames
	ch <- internodeFlushes
}

// Collect implements prometheus.Collector.
func (f InternodeCollector) Collect(ch chan<- prometheus.Metric) {
	client, server := f()
	for side, s := range map[string]InternodeStats{"client": client, "server": server} {
		ch <- prometheus.MustNewConstMetric(internodeFrames, prometheus.CounterValue, float64(s.FramesWritten), side)
		ch <- prometheus.MustNewConstMetric(internodeFlushes, prometheus.CounterValue, float64(s.Flushes), side)
	}
}

// RoutingCollector exports, at scrape time, what the node's routing has learned: each
// replica's recent read latency (load-aware routing) and the pace of asynchronous writes
// to each (when paced).
type RoutingCollector struct{ Node *machine.Node }

// Describe implements prometheus.Collector.
func (c RoutingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- readLatencyDesc
	ch <- asyncRateDesc
}

// Collect implements prometheus.Collector.
func (c RoutingCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.Node.ReplicaLatencies(time.Now()) {
		ch <- prometheus.MustNewConstMetric(readLatencyDesc, prometheus.GaugeValue, l.Latency.Seconds(), string(l.ID))
	}
	for _, r := range c.Node.AsyncRates() {
		ch <- prometheus.MustNewConstMetric(asyncRateDesc, prometheus.GaugeValue, r.Rate, string(r.ID))
	}
}

var (
	clockOffsetDesc = prometheus.NewDesc("kura_clock_offset_seconds",
		"Each live peer's physical clock minus this node's, as estimated from the stamps of its internode responses "+
			"(the largest of the last one to two seconds' samples: low by the quickest frame's transit time). Peers this "+
			"node has no estimate of (none yet, or of a version that sends no stamps) are not listed.", []string{"peer"}, nil)
	clockMaxDesc = prometheus.NewDesc("kura_clock_max_offset_seconds",
		"The node's --max-clock-offset: the most its clock may be off from most of its live peers' before it refuses "+
			"writes; 0 is no limit.", nil, nil)
	clockOutDesc = prometheus.NewDesc("kura_clock_out_of_sync",
		"1 while this node's clock is further off than --max-clock-offset from most of its live peers': it refuses the "+
			"writes it would timestamp (kura_clock_writes_refused_total).", nil, nil)
)

// ClockCollector exports, at scrape time, what the node knows of clocks: each live
// peer's offset, the maximum, and whether this node is out of sync.
type ClockCollector func() Clocks

// Describe implements prometheus.Collector.
func (f ClockCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clockOffsetDesc
	ch <- clockMaxDesc
	ch <- clockOutDesc
}

// Collect implements prometheus.Collector.
func (f ClockCollector) Collect(ch chan<- prometheus.Metric) {
	c := f()
	for id, o := range c.Offsets {
		ch <- prometheus.MustNewConstMetric(clockOffsetDesc, prometheus.GaugeValue, o.Seconds(), string(id))
	}
	ch <- prometheus.MustNewConstMetric(clockMaxDesc, prometheus.GaugeValue, c.MaxOffset.Seconds())
	ch <- prometheus.MustNewConstMetric(clockOutDesc, prometheus.GaugeValue, float64(b2i(c.OutOfSync)))
}
