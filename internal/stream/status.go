package stream

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// TransferStatus is what a transfer that Run holds (queued or running) has done.
type TransferStatus struct {
	ID          TransferID
	Range       move.Range
	Destination ring.NodeID
	// Source is the node being asked now (the planned source or an alternative).
	Source ring.NodeID
	// Queued: waiting for one of Config.Concurrency slots.
	Queued bool
	// Bytes (encoded pages, the unit of the limits) and Rows applied durably, over every
	// run of the transfer; ResumedBytes of them were applied by earlier runs.
	Bytes, Rows, ResumedBytes int64
	// EstimateBytes is the plan's estimate of the transfer (move.Transfer.Bytes, from the
	// planner's Sizes: row bytes as the engines count them, so Bytes may end above or
	// below it); 0 when unknown.
	EstimateBytes int64
	// BytesPerSecond is this run's average since its first page was asked.
	BytesPerSecond float64
	// ETA is the time left at that rate to reach EstimateBytes; 0 when there is no
	// estimate or no rate yet, or the estimate is passed.
	ETA time.Duration
	// Started is when this run got its slot; zero while queued.
	Started time.Time
	// Failures counts failed asks in this run (they are retried).
	Failures int64
}

// PeerStats counts what this node has streamed from one source since the Streamer was
// made: the figures a node turns into metrics (kura_stream_*{peer}).
type PeerStats struct {
	// Bytes and Rows received (encoded pages, re-asked ones included: a page is counted
	// each time it arrives whole and decodes) and Pages.
	Bytes, Rows, Pages int64
	// UncheckedPages are pages of a source that predates checksums (wire.Version).
	UncheckedPages int64
	// Ranges counts transfers completed whose last page this peer sent.
	Ranges int64
	// Failures counts failed asks (unreachable, reset, timed out, refused); BadPages
	// those that arrived but failed their checksum or did not decode, and were asked
	// again.
	Failures, BadPages int64
}

// transfer is the Streamer's state of one transfer it holds, under Streamer.mu.
type transfer struct {
	status   TransferStatus
	runBytes int64 // this run's
}

// Transfers returns the status of every transfer Run holds, ordered by ID.
func (s *Streamer) Transfers() []TransferStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	out := make([]TransferStatus, 0, len(s.running))
	for _, t := range s.running {
		st := t.status
		if !st.Started.IsZero() {
			if el := now.Sub(st.Started).Seconds(); el > 0 {
				st.BytesPerSecond = float64(t.runBytes) / el
			}
			if left := st.EstimateBytes - st.Bytes; left > 0 && st.BytesPerSecond > 0 {
				st.ETA = time.Duration(float64(left) / st.BytesPerSecond * float64(time.Second))
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b TransferStatus) int {
		if a.ID.Change != b.ID.Change {
			return cmpUint(a.ID.Change, b.ID.Change)
		}
		return a.ID.Index - b.ID.Index
	})
	return out
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Peers returns the counters of every source this Streamer has asked.
func (s *Streamer) Peers() map[ring.NodeID]PeerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.peers)
}

// pageApplied counts a page from src applied durably to t.
func (s *Streamer) pageApplied(t *transfer, src ring.NodeID, resp *wire.ScanResponse, size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[src]
	p.Bytes += int64(size)
	p.Rows += int64(len(resp.Rows))
	p.Pages++
	if !resp.Checksummed {
		p.UncheckedPages++
	}
	s.peers[src] = p
	t.status.Bytes += int64(size)
	t.status.Rows += int64(len(resp.Rows))
	t.runBytes += int64(size)
}

// askFailed counts a failed ask of src by t.
func (s *Streamer) askFailed(t *transfer, src ring.NodeID, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[src]
	if errors.Is(err, errBadPage) {
		p.BadPages++
	} else {
		p.Failures++
	}
	s.peers[src] = p
	t.status.Failures++
}

// transferDone counts a transfer completed, its last page from src.
func (s *Streamer) transferDone(src ring.NodeID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[src]
	p.Ranges++
	s.peers[src] = p
}

func (s *Streamer) setSource(t *transfer, src ring.NodeID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.status.Source = src
}
