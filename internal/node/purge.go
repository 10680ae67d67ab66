package node

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/repair"
	"github.com/kuradb/kura/internal/ring"
)

// Tombstones stay dead (--tombstone-purge=repaired, the default in cluster mode). A
// replica that missed a delete still holds the deleted value; if every other replica
// purged the tombstone, a read or a repair would bring the value back. So a replica
// purges a tombstone only once every replica of its range is known to hold it: once a
// repair of the range with all its replicas started after it. The node keeps, for the
// ring ranges it has seen repaired that way, when (purgeHistory), and gives its engine
// the horizon of each key (engine.Options.PurgeHorizon): the grace period still applies
// on top. A range never repaired keeps its tombstones.
//
// The repair's initiator records a range once every session of it succeeded, and tells
// the range's other replicas (wire.RepairDone), which record it too. The time recorded is
// the first session's start less repairHorizonMargin, for writes in flight at that moment
// and clock skew between the nodes. The history is a JSON file in the data directory,
// replaced atomically: it survives restarts, and a node that loses it only keeps its
// tombstones longer.

// repairHorizonMargin is subtracted from a repair's start before it becomes a range's
// purge horizon: a delete timestamped before the repair started but still on its way to
// some replica when that replica was scanned is not covered.
var repairHorizonMargin int64 = 60e6 // one minute, in microseconds

// maxRepairedArcs bounds the history; the oldest records go first, which only lowers
// horizons.
const maxRepairedArcs = 4096

// repairedArc is a ring range (Start, End] repaired across all its replicas, At (Unix
// microseconds) being the time before which every replica held every delete.
type repairedArc struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	At    int64 `json:"at"`
}

// purgeHistory is a node's record of repaired ranges and the purge horizon it gives.
// Safe for concurrent use.
type purgeHistory struct {
	path string
	mu   sync.Mutex // orders record's read, change and write of the file
	arcs []repairedArc
	view atomic.Pointer[horizons]
}

// horizons is the history as a step function of the token: from bounds[i] (inclusive)
// to bounds[i+1], at[i].
type horizons struct {
	bounds []ring.Token
	at     []int64
}

// openPurgeHistory loads the history in dir, or starts an empty one.
func openPurgeHistory(dir string) (*purgeHistory, error) {
	h := &purgeHistory{path: filepath.Join(dir, "repair-history.json")}
	b, err := os.ReadFile(h.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("node: repair history: %w", err)
	default:
		if err := json.Unmarshal(b, &h.arcs); err != nil {
			return nil, fmt.Errorf("node: repair history %s: %w", h.path, err)
		}
	}
	h.view.Store(buildHorizons(h.arcs))
	return h, nil
}

// horizon returns the purge horizon of an engine key: when its range was last repaired
// across all its replicas, 0 if never (or for a key too short to hold a token).
func (h *purgeHistory) horizon(ekey []byte) int64 {
	tok, _, err := ring.SplitEngineKey(ekey)
	if err != nil {
		return 0
	}
	v := h.view.Load()
	i, found := slices.BinarySearch(v.bounds, tok)
	if !found {
		i--
	}
	if i < 0 {
		return 0
	}
	return v.at[i]
}

// last returns when the range (start, end] was last repaired as a whole: the oldest
// horizon of its tokens, 0 if some token was never repaired.
func (h *purgeHistory) last(start, end ring.Token) int64 {
	v := h.view.Load()
	oldest := int64(math.MaxInt64)
	for _, l := range (repair.Shape{Start: start, End: end}).Intervals() {
		// The segment holding the interval's first token, then every one starting in it.
		i, found := slices.BinarySearch(v.bounds, l[0])
		if !found {
			i--
		}
		if i < 0 {
			return 0 // below the first bound: never repaired
		}
		for j := i; j < len(v.bounds) && (j == i || v.bounds[j] <= l[1]); j++ {
			oldest = min(oldest, v.at[j])
		}
	}
	return oldest
}

// record notes that the range (start, end] was repaired across all its replicas as of at,
// and saves the history.
func (h *purgeHistory) record(start, end ring.Token, at int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.arcs, func(a repairedArc) bool { return a.Start == int64(start) && a.End == int64(end) })
	switch {
	case i >= 0 && h.arcs[i].At >= at:
		return nil
	case i >= 0:
		h.arcs[i].At = at
	default:
		h.arcs = append(h.arcs, repairedArc{Start: int64(start), End: int64(end), At: at})
	}
	if len(h.arcs) > maxRepairedArcs {
		slices.SortFunc(h.arcs, func(a, b repairedArc) int { return cmp.Compare(b.At, a.At) })
		h.arcs = h.arcs[:maxRepairedArcs]
	}
	h.view.Store(buildHorizons(h.arcs))
	b, err := json.Marshal(h.arcs)
	if err != nil {
		return err
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("node: repair history: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("node: repair history: %w", err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return fmt.Errorf("node: repair history: %w", err)
	}
	return nil
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// buildHorizons turns arcs, which may overlap (ranges of different rings), into the step
// function of the latest time each token was repaired.
func buildHorizons(arcs []repairedArc) *horizons {
	type interval struct {
		lo, hi ring.Token // inclusive
		at     int64
	}
	var ivs []interval
	var bounds []ring.Token
	for _, a := range arcs {
		for _, l := range (repair.Shape{Start: ring.Token(a.Start), End: ring.Token(a.End)}).Intervals() {
			ivs = append(ivs, interval{l[0], l[1], a.At})
			bounds = append(bounds, l[0])
			if l[1] != ring.MaxToken {
				bounds = append(bounds, l[1]+1)
			}
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	h := &horizons{bounds: bounds, at: make([]int64, len(bounds))}
	for i, b := range bounds {
		for _, iv := range ivs {
			if iv.lo <= b && b <= iv.hi {
				h.at[i] = max(h.at[i], iv.at)
			}
		}
	}
	return h
}
