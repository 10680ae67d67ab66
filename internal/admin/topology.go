package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TopologyStatus is the cluster metadata as a node running --ring-source=log has it
// (docs/design/membership.md): the ring version, the metadata log's voters, the change
// in flight and this node's streams.
type TopologyStatus struct {
	Epoch uint64 `json:"epoch"`
	// Voters are the metadata log's voters; Leader the one leading it as this node last
	// heard, empty when it knows of none (a topology change then waits; data requests
	// do not).
	Voters []string `json:"voters"`
	Leader string   `json:"leader,omitempty"`
	// Voter says this node is one of the voters; NoQuorum, on a voter, that it has not
	// heard from a leader with a quorum behind it lately (Leader is then empty). A node
	// that is not a voter learns the leader from its pulls, LastPullSeconds ago.
	Voter           bool    `json:"voter,omitempty"`
	NoQuorum        bool    `json:"no_quorum,omitempty"`
	LastPullSeconds float64 `json:"last_pull_seconds,omitempty"`
	// Change is the change in flight, nil when none.
	Change *ChangeStatus `json:"change,omitempty"`
	// Streams are the transfers this node receives for the change in flight.
	Streams []StreamStatus `json:"streams,omitempty"`
	// StreamLimit is this node's send and receive limit in bytes per second (0: none).
	StreamLimit int64 `json:"stream_limit"`
}

// ChangeStatus is a change in flight.
type ChangeStatus struct {
	ID        uint64 `json:"id"`
	What      string `json:"what"` // joins, decommissions, removals, replacements
	Reverting bool   `json:"reverting,omitempty"`
	Ranges    int    `json:"ranges"`
	Moved     int    `json:"moved"`
	Transfers int    `json:"transfers"`
	Done      int    `json:"done"`
	Bytes     int64  `json:"bytes"`      // the plan's estimate of all its transfers
	DoneBytes int64  `json:"done_bytes"` // the estimates of the done ones
}

// StreamStatus is one transfer this node receives.
type StreamStatus struct {
	Index       int     `json:"index"`
	Source      string  `json:"source"`
	Bytes       int64   `json:"bytes"`
	Estimate    int64   `json:"estimate"`
	RateBPS     float64 `json:"rate_bps"`
	ETASeconds  float64 `json:"eta_seconds"`
	Done        bool    `json:"done,omitempty"`
	Failures    int     `json:"failures,omitempty"`
	ResumedFrom int64   `json:"resumed_from,omitempty"`
	// Merge says this stream is one of the copies the transfer is merged from, the
	// replicas that stay in its range, because its planned source is not the replica
	// that leaves the range or is down.
	Merge bool `json:"merge,omitempty"`
	// Error is why the transfer's last run stopped (a full disk, a source gone); it is
	// run again, and the range's old replicas keep serving it meanwhile.
	Error string `json:"error,omitempty"`
}

// TopologyRequest is an operator's request to POST /topology (kura admin decommission,
// removenode, plan, commit, cancel, stream-limit).
type TopologyRequest struct {
	// Op is "plan" (show the change, commit nothing), "commit" (start it),
	// "decommission", "removenode", "cancel", "cleanup" or "stream-limit".
	Op string `json:"op"`
	// Joins, Leaves and Removes are the change's nodes for plan and commit (empty: the
	// registered joiners waiting for a commit, --join=staged); Nodes the nodes of a
	// decommission (empty: this node) or a removenode.
	Joins   []string `json:"joins,omitempty"`
	Leaves  []string `json:"leaves,omitempty"`
	Removes []string `json:"removes,omitempty"`
	Nodes   []string `json:"nodes,omitempty"`
	// Limit is stream-limit's bytes per second (0: none).
	Limit int64 `json:"limit,omitempty"`
}

// ErrNoTopology is Config.Topology's error on a node that does not follow the metadata
// log; ErrTopologyUnavailable wraps errors that say the metadata log cannot commit now.
var (
	ErrNoTopology          = errors.New("membership changes need --ring-source=log")
	ErrTopologyUnavailable = errors.New("metadata unavailable")
)

// serveTopology runs an operator's request (POST, a TopologyRequest as JSON) and answers
// its report as text.
func (cfg *Config) serveTopology(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a topology request\n", http.StatusMethodNotAllowed)
		return
	}
	if cfg.Topology == nil {
		http.Error(w, notClustered, http.StatusNotFound)
		return
	}
	var req TopologyRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad topology request: "+err.Error()+"\n", http.StatusBadRequest)
		return
	}
	out, err := cfg.Topology(req)
	switch {
	case errors.Is(err, ErrNoTopology):
		http.Error(w, err.Error()+"\n", http.StatusNotFound)
	case errors.Is(err, ErrTopologyUnavailable):
		http.Error(w, err.Error()+"\n", http.StatusServiceUnavailable)
	case err != nil:
		http.Error(w, err.Error()+"\n", http.StatusConflict)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, out)
	}
}

// MembershipStats is what a node following the metadata log reports at scrape time.
type MembershipStats struct {
	Epoch uint64
	// Received is what this node's streams received, by source: bytes (encoded pages)
	// and transfers completed.
	Received map[string]PeerStream
	// SentBytes are the encoded stream pages this node's replica sent, to every peer.
	SentBytes int64
	// Transfers and TransfersDone are the change in flight's (0 when none).
	Transfers, TransfersDone int
	// StreamLimit is the node's stream limit as set (0: none); StreamEffectiveLimit what
	// its streams run at now, the limit times the elastic factor; SchedLatencyP99 the Go
	// scheduler latency p99 the elastic controller last observed (0 when it is off).
	StreamLimit, StreamEffectiveLimit int64
	SchedLatencyP99                   time.Duration
}

// PeerStream is what one peer sent this node's streams.
type PeerStream struct {
	Bytes, Ranges, Failures int64
}

var (
	epochDesc = prometheus.NewDesc("kura_metadata_epoch",
		"The cluster metadata's epoch (ring version) this node routes by.", nil, nil)
	streamRecvBytesDesc = prometheus.NewDesc("kura_stream_received_bytes_total",
		"Bytes of stream pages (rows as encoded on the wire) this node received for membership changes, by source.", []string{"peer"}, nil)
	streamRecvRangesDesc = prometheus.NewDesc("kura_stream_received_ranges_total",
		"Transfers (ranges) this node completed receiving, by the source of their last page.", []string{"peer"}, nil)
	streamFailuresDesc = prometheus.NewDesc("kura_stream_failures_total",
		"Stream page requests that failed and were asked again, by source.", []string{"peer"}, nil)
	streamSentBytesDesc = prometheus.NewDesc("kura_stream_sent_bytes_total",
		"Bytes of stream pages this node's replica sent for membership changes.", nil, nil)
	streamLimitDesc = prometheus.NewDesc("kura_stream_limit_bytes",
		"The node's stream limit in bytes per second, sent and received each: as set (kind=\"set\"), and as its streams run now, scaled down while the CPU is saturated (kind=\"effective\"); 0 is none.", []string{"kind"}, nil)
	schedLatencyDesc = prometheus.NewDesc("kura_sched_latency_p99_seconds",
		"The Go scheduler latency p99 of the last 100 ms, as the stream limit's elastic control observed it (0 when it is off).", nil, nil)
	changeTransfersDesc = prometheus.NewDesc("kura_membership_change_transfers",
		"Transfers of the membership change in flight, by state (done, pending); 0 when none is.", []string{"state"}, nil)
)

// MembershipCollector exports, at scrape time, what stats returns.
type MembershipCollector func() MembershipStats

// Describe implements prometheus.Collector.
func (f MembershipCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{epochDesc, streamRecvBytesDesc, streamRecvRangesDesc, streamFailuresDesc, streamSentBytesDesc, changeTransfersDesc, streamLimitDesc, schedLatencyDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (f MembershipCollector) Collect(ch chan<- prometheus.Metric) {
	s := f()
	ch <- prometheus.MustNewConstMetric(epochDesc, prometheus.GaugeValue, float64(s.Epoch))
	for peer, p := range s.Received {
		ch <- prometheus.MustNewConstMetric(streamRecvBytesDesc, prometheus.CounterValue, float64(p.Bytes), peer)
		ch <- prometheus.MustNewConstMetric(streamRecvRangesDesc, prometheus.CounterValue, float64(p.Ranges), peer)
		ch <- prometheus.MustNewConstMetric(streamFailuresDesc, prometheus.CounterValue, float64(p.Failures), peer)
	}
	ch <- prometheus.MustNewConstMetric(streamSentBytesDesc, prometheus.CounterValue, float64(s.SentBytes))
	ch <- prometheus.MustNewConstMetric(streamLimitDesc, prometheus.GaugeValue, float64(s.StreamLimit), "set")
	ch <- prometheus.MustNewConstMetric(streamLimitDesc, prometheus.GaugeValue, float64(s.StreamEffectiveLimit), "effective")
	ch <- prometheus.MustNewConstMetric(schedLatencyDesc, prometheus.GaugeValue, s.SchedLatencyP99.Seconds())
	ch <- prometheus.MustNewConstMetric(changeTransfersDesc, prometheus.GaugeValue, float64(s.TransfersDone), "done")
	ch <- prometheus.MustNewConstMetric(changeTransfersDesc, prometheus.GaugeValue, float64(s.Transfers-s.TransfersDone), "pending")
}
