package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
}

// TopologyRequest is an operator's request to POST /topology (kura admin decommission,
// removenode, plan, commit, cancel, stream-limit).
type TopologyRequest struct {
	// Op is "plan" (show the change, commit nothing), "commit" (start it),
	// "decommission", "removenode", "cancel" or "stream-limit".
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
