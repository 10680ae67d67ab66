package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// RepairRequest asks a node to repair the ranges it replicates with their other replicas
// (POST /repair, as JSON; `kura admin repair`).
type RepairRequest struct {
	// Range limits the repair to the ring range "START:END" (tokens, (START, END]) where
	// it meets the node's ranges; empty: every range.
	Range string `json:"range,omitempty"`
	// Node limits the repair to the ranges shared with that replica, and to it; empty:
	// every other replica.
	Node string `json:"node,omitempty"`
	// Primary limits the repair to the ranges of which the node is the first replica,
	// so that a repair run on every node (`kura admin repair --cluster`) takes each
	// range once.
	Primary bool `json:"primary,omitempty"`
	// CoveredSince, when set, runs no repair: the node announces that it holds every
	// write acknowledged before then, as it does itself after a repair of every range it
	// replicates with no failure, so that coordinators drop the hints and repair marks
	// they hold for it from before then. `kura admin repair --cluster` sends it to every
	// node once each has repaired its primary ranges without failure.
	CoveredSince time.Time `json:"covered_since,omitzero"`
}

// RepairProgress is a node's repair: the one running, or the last one (GET /repair, and
// /cluster's repair).
type RepairProgress struct {
	Running bool `json:"running"`
	// Request is what was asked.
	Request  RepairRequest `json:"request"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished,omitzero"`
	// Ranges is how many ranges the repair covers and RangesDone how many are done;
	// Sessions counts the sessions run (one per range and other replica), Equal those
	// that found the two replicas equal, and Failed those that failed.
	Ranges     int `json:"ranges"`
	RangesDone int `json:"ranges_done"`
	Sessions   int `json:"sessions"`
	Equal      int `json:"equal"`
	Failed     int `json:"failed"`
	// Retries counts the sessions run again after a failure (a peer in its transport's
	// dial backoff, or restarted).
	Retries int `json:"retries"`
	// RowsDiffering and BytesDiffering are the rows found differing and the encoded size
	// of their newer versions; BytesSent and BytesReceived all the repair's bytes on the
	// wire (frame headers included), both ways.
	RowsDiffering  int64 `json:"rows_differing"`
	BytesDiffering int64 `json:"bytes_differing"`
	BytesSent      int64 `json:"bytes_sent"`
	BytesReceived  int64 `json:"bytes_received"`
	// RowsHashed counts the rows this node hashed.
	RowsHashed int64 `json:"rows_hashed"`
	// LastError is the latest failure, if any.
	LastError string `json:"last_error,omitempty"`
}

// WireRatio is the repair's bytes on the wire, both ways, over the bytes that differed; 0
// when nothing differed.
func (s RepairProgress) WireRatio() float64 {
	if s.BytesDiffering == 0 {
		return 0
	}
	return float64(s.BytesSent+s.BytesReceived) / float64(s.BytesDiffering)
}

// ETA estimates the time left from the ranges done so far; 0 when unknown or done.
func (s RepairProgress) ETA(now time.Time) time.Duration {
	if !s.Running || s.RangesDone == 0 || s.RangesDone >= s.Ranges {
		return 0
	}
	took := now.Sub(s.Started)
	return time.Duration(float64(took) * float64(s.Ranges-s.RangesDone) / float64(s.RangesDone))
}

// ErrRepairRunning is the Repair function's error while a repair runs.
var ErrRepairRunning = errors.New("a repair is already running on this node")

// serveRepair starts a repair (POST, a RepairRequest as JSON), answers the status of the
// running or last one (GET), or stops the running one after its current range (DELETE).
func (cfg *Config) serveRepair(w http.ResponseWriter, r *http.Request) {
	if cfg.Repair == nil {
		http.Error(w, notClustered, http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		st, ok := cfg.RepairProgress()
		if !ok {
			http.Error(w, "no repair has run on this node since it started\n", http.StatusNotFound)
			return
		}
		writeJSON(w, st)
	case http.MethodPost:
		var req RepairRequest
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err == nil && len(body) > 0 {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, "bad repair request: "+err.Error()+"\n", http.StatusBadRequest)
			return
		}
		st, err := cfg.Repair(req)
		switch {
		case errors.Is(err, ErrRepairRunning):
			http.Error(w, err.Error()+"\n", http.StatusConflict)
			return
		case err != nil:
			http.Error(w, err.Error()+"\n", http.StatusBadRequest)
			return
		}
		writeJSON(w, st)
	case http.MethodDelete:
		st, ok := cfg.RepairStop()
		if !ok {
			http.Error(w, "no repair is running on this node\n", http.StatusConflict)
			return
		}
		writeJSON(w, st)
	default:
		http.Error(w, "GET the repair's status, POST a repair request or DELETE the running repair\n", http.StatusMethodNotAllowed)
	}
}
