package resp

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics:
//
//	kura_resp_requests_total{command,result}      commands executed; result is ok or error
//	kura_resp_request_duration_seconds{command}   command latency in the handler, store included
//	kura_resp_connected_clients                   open client connections
//	kura_resp_connections_total                   connections accepted
//	kura_resp_rejected_connections_total          connections refused by MaxConnections
//	kura_resp_protocol_errors_total               connections closed for a bad or oversized frame
//
// Unknown commands count under command="unknown". Every per-command child is resolved once
// at startup so that the hot path does no label lookups.
type metrics struct {
	ok, failed []prometheus.Counter  // indexed by command id; the last is "unknown"
	latency    []prometheus.Observer // likewise
	clients    prometheus.Gauge
	accepted   prometheus.Counter
	rejected   prometheus.Counter
	protoErrs  prometheus.Counter
}

// latencyBuckets span 10µs to about 1.5s, by factors of 2.5.
var latencyBuckets = prometheus.ExponentialBuckets(10e-6, 2.5, 14)

// newMetrics registers the metrics with reg and resolves the children of every command.
func newMetrics(reg prometheus.Registerer, table []*command) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kura", Subsystem: "resp", Name: "requests_total",
		Help: "RESP commands executed, by command and result (ok or error).",
	}, []string{"command", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "kura", Subsystem: "resp", Name: "request_duration_seconds",
		Help: "Time to execute a RESP command, store included, by command.", Buckets: latencyBuckets,
	}, []string{"command"})
	m := &metrics{
		clients: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "kura", Subsystem: "resp",
			Name: "connected_clients", Help: "Open client connections."}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kura", Subsystem: "resp",
			Name: "connections_total", Help: "Client connections accepted."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kura", Subsystem: "resp",
			Name: "rejected_connections_total", Help: "Client connections refused because MaxConnections were open."}),
		protoErrs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kura", Subsystem: "resp",
			Name: "protocol_errors_total", Help: "Connections closed for a malformed or oversized request frame."}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{requests, duration, m.clients, m.accepted, m.rejected, m.protoErrs} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: registering metrics: %w", ErrConfig, err)
	}
	names := make([]string, 0, len(table)+1)
	for _, c := range table {
		names = append(names, c.name)
	}
	for _, n := range append(names, "unknown") {
		m.ok = append(m.ok, requests.WithLabelValues(n, "ok"))
		m.failed = append(m.failed, requests.WithLabelValues(n, "error"))
		m.latency = append(m.latency, duration.WithLabelValues(n))
	}
	return m, nil
}

// observe records one command; c is nil for an unknown command.
func (m *metrics) observe(c *command, failed bool, d time.Duration) {
	i := len(m.ok) - 1
	if c != nil {
		i = c.id
	}
	if failed {
		m.failed[i].Inc()
	} else {
		m.ok[i].Inc()
	}
	m.latency[i].Observe(d.Seconds())
}
