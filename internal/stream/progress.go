package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// TransferID names a transfer: the change it belongs to (meta.Change.ID) and its index in
// the change's transfers (meta.Change.Transfers), the numbering topo.Advance's done uses.
type TransferID struct {
	Change uint64
	Index  int
}

func (id TransferID) String() string { return fmt.Sprintf("%d/%d", id.Change, id.Index) }

// progressStore keeps, in a directory, how far each transfer has come:
// <dir>/change-<ID>/transfer-<index>.json, a small JSON record replaced atomically
// (engine.WriteFileAtomic: written beside, fsynced, renamed, directory fsynced) after
// every page applied durably. Safe for concurrent use by different transfers; the
// Streamer never runs one transfer twice at once.
type progressStore struct {
	dir string

	mu      sync.Mutex
	created map[uint64]bool // change directories made durable
}

// progressFormat is the record's format; a record of another format is ignored (its
// transfer starts over, which merging writes makes safe).
const progressFormat = 1

// record is a transfer's progress.
type record struct {
	Format int `json:"format"`
	// Start, End and Destination name the transfer the record is of: a record whose
	// transfer differs (a reverting change reuses its change's ID with other transfers)
	// is ignored.
	Start       ring.Token  `json:"start"`
	End         ring.Token  `json:"end"`
	Destination ring.NodeID `json:"destination"`
	// Keys are the transfer's engine key ranges (move.Range.Keys), in order.
	Keys []keyProgress `json:"keys"`
	// Bytes and Rows are what was applied, over every run.
	Bytes int64 `json:"bytes"`
	Rows  int64 `json:"rows"`
	// Done: every page of every key range is applied and durable.
	Done bool `json:"done,omitempty"`
}

// keyProgress is one key range's: Next is the engine key to ask from (the smallest key
// after the last one applied durably), nil before the first page; Done once its last
// page is applied and durable.
type keyProgress struct {
	Next []byte `json:"next,omitempty"`
	Done bool   `json:"done,omitempty"`
}

func newRecord(t move.Transfer) record {
	return record{Format: progressFormat, Start: t.Range.Start, End: t.Range.End, Destination: t.Destination,
		Keys: make([]keyProgress, len(t.Range.Keys()))}
}

func (r *record) matches(t move.Transfer) bool {
	return r.Format == progressFormat && r.Start == t.Range.Start && r.End == t.Range.End &&
		r.Destination == t.Destination && len(r.Keys) == len(t.Range.Keys())
}

func newProgressStore(dir string) (*progressStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("stream: progress directory: %w", err)
	}
	return &progressStore{dir: dir, created: map[uint64]bool{}}, nil
}

func (p *progressStore) changeDir(change uint64) string {
	return filepath.Join(p.dir, "change-"+strconv.FormatUint(change, 10))
}

func (p *progressStore) path(id TransferID) string {
	return filepath.Join(p.changeDir(id.Change), "transfer-"+strconv.Itoa(id.Index)+".json")
}

// load returns t's record: the one kept if it is t's, else a new one (a record that
// cannot be read as t's is started over; fresh reports that).
func (p *progressStore) load(id TransferID, t move.Transfer) (rec record, fresh bool, err error) {
	b, err := os.ReadFile(p.path(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newRecord(t), true, nil
	case err != nil:
		return record{}, false, fmt.Errorf("stream: progress of transfer %s: %w", id, err)
	}
	if json.Unmarshal(b, &rec) != nil || !rec.matches(t) {
		return newRecord(t), true, nil
	}
	return rec, false, nil
}

// save replaces id's record with rec, durably.
func (p *progressStore) save(id TransferID, rec *record) error {
	if err := p.makeChangeDir(id.Change); err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("stream: progress of transfer %s: %w", id, err)
	}
	if err := engine.WriteFileAtomic(p.path(id), b); err != nil {
		return fmt.Errorf("stream: progress of transfer %s: %w", id, err)
	}
	return nil
}

// makeChangeDir creates a change's directory, durably, once.
func (p *progressStore) makeChangeDir(change uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.created[change] {
		return nil
	}
	if err := os.MkdirAll(p.changeDir(change), 0o755); err != nil {
		return fmt.Errorf("stream: progress of change %d: %w", change, err)
	}
	if err := engine.SyncDir(p.dir); err != nil {
		return fmt.Errorf("stream: progress of change %d: %w", change, err)
	}
	p.created[change] = true
	return nil
}

// completed returns the transfers of change whose records say done, by index.
func (p *progressStore) completed(change uint64) ([]TransferID, error) {
	entries, err := os.ReadDir(p.changeDir(change))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("stream: progress of change %d: %w", change, err)
	}
	var out []TransferID
	for _, e := range entries {
		s, ok := strings.CutPrefix(e.Name(), "transfer-")
		s, ok2 := strings.CutSuffix(s, ".json")
		i, err := strconv.Atoi(s)
		if !ok || !ok2 || err != nil {
			continue // a temporary file of an interrupted write, or not ours
		}
		b, err := os.ReadFile(filepath.Join(p.changeDir(change), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("stream: progress of change %d: %w", change, err)
		}
		var rec record
		if json.Unmarshal(b, &rec) == nil && rec.Format == progressFormat && rec.Done {
			out = append(out, TransferID{Change: change, Index: i})
		}
	}
	slices.SortFunc(out, func(a, b TransferID) int { return a.Index - b.Index })
	return out, nil
}

// discard removes a change's records, durably.
func (p *progressStore) discard(change uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.RemoveAll(p.changeDir(change)); err != nil {
		return fmt.Errorf("stream: progress of change %d: %w", change, err)
	}
	delete(p.created, change)
	if err := engine.SyncDir(p.dir); err != nil {
		return fmt.Errorf("stream: progress of change %d: %w", change, err)
	}
	return nil
}
