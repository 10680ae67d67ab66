package enginetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Model is the reference engine: a map of key to merged row behind one mutex, written to be
// obviously correct rather than fast. The suite checks every engine against it, and other
// packages' tests may use it wherever they need an engine.Engine they can trust.
//
// It never purges tombstones (the contract allows but never requires purging), keeps
// nothing on disk (Flush does nothing) and builds each iterator's snapshot by copying the
// rows in range, so NewIterator costs O(n log n).
type Model struct {
	clock  engine.Clock
	mu     sync.RWMutex
	rows   map[string]row.Row // stored rows; never aliased by callers' memory
	closed bool
}

var (
	_ engine.Engine       = (*Model)(nil)
	_ engine.RangeDeleter = (*Model)(nil)
)

// NewModel returns an empty model that reads "now" from opts.Clock (default: the wall
// clock). The other options do not apply to it.
func NewModel(opts engine.Options) *Model {
	opts = opts.WithDefaults()
	return &Model{clock: opts.Clock, rows: make(map[string]row.Row)}
}

// Name returns "model".
func (m *Model) Name() string { return "model" }

// Role returns ring.InMemory.
func (m *Model) Role() ring.Role { return ring.InMemory }

// Apply validates the whole batch, then merges each mutation under the lock, so readers
// see all of the batch or none of it.
func (m *Model) Apply(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("model: apply: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("model: apply: %w", engine.ErrClosed)
	}
	for i := range batch {
		m.applyLocked(batch[i].Key, batch[i].Row)
	}
	return nil
}

// applyLocked merges r into the row under key. The input is cloned first: Merge shares
// byte slices with its inputs and the caller may reuse them.
func (m *Model) applyLocked(key []byte, r row.Row) {
	merged := row.Merge(m.rows[string(key)], r.Clone())
	if merged.IsEmpty() {
		return // an empty mutation stores nothing
	}
	m.rows[string(key)] = merged
}

// Get returns a copy of the stored row as engine.ReadView shows it now.
func (m *Model) Get(key []byte) (row.Row, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return row.Row{}, false, fmt.Errorf("model: get: %w", engine.ErrClosed)
	}
	r, ok := m.rows[string(key)]
	if !ok {
		return row.Row{}, false, nil
	}
	v := engine.ReadView(r, m.clock())
	return v.Clone(), true, nil
}

// NewIterator copies the rows in [lo, hi) into a sorted snapshot. Expiry is judged when
// Next reaches a row, as a Get at that moment would.
func (m *Model) NewIterator(lo, hi []byte) (engine.Iterator, error) {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return nil, fmt.Errorf("model: iterator: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("model: iterator: %w", engine.ErrClosed)
	}
	it := &modelIterator{clock: m.clock, pos: -1}
	for k := range m.rows {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			it.keys = append(it.keys, k)
		}
	}
	slices.Sort(it.keys)
	it.rows = make([]row.Row, len(it.keys))
	for i, k := range it.keys {
		it.rows[i] = m.rows[k] // stored rows are replaced, never modified in place
	}
	return it, nil
}

// DeleteRange deletes the rows in [lo, hi) under the lock, all at once.
func (m *Model) DeleteRange(lo, hi []byte) error {
	if err := engine.ValidateRange(lo, hi); err != nil {
		return fmt.Errorf("model: delete range: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("model: delete range: %w", engine.ErrClosed)
	}
	for k := range m.rows {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			delete(m.rows, k)
		}
	}
	return nil
}

// Flush does nothing but report ErrClosed after Close: the model keeps nothing on disk.
func (m *Model) Flush() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return fmt.Errorf("model: flush: %w", engine.ErrClosed)
	}
	return nil
}

// Stats reports the exact number of rows and the bytes their keys and cells hold.
func (m *Model) Stats() engine.Stats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var mem int64
	for k, r := range m.rows {
		mem += int64(len(k))
		for _, c := range r.Cells {
			mem += int64(len(c.Name) + len(c.Value))
		}
	}
	return engine.Stats{MemoryBytes: mem, RowsEstimate: int64(len(m.rows)), Exact: true}
}

// Close drops the rows. It waits for calls in flight (they hold the lock) and may be
// called more than once.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.rows = nil
	return nil
}

// Dump returns every stored row in key order, formatted one per line: a debugging aid for
// failed comparisons.
func (m *Model) Dump() string {
	it, err := m.NewIterator(nil, nil)
	if err != nil {
		return err.Error()
	}
	defer it.Close()
	var b strings.Builder
	for it.Next() {
		fmt.Fprintf(&b, "%q: %s\n", it.Key(), FormatRow(it.Row()))
	}
	return b.String()
}

// modelIterator walks a private copy of the rows in range; the rows it returns are owned
// by the caller.
type modelIterator struct {
	clock  engine.Clock
	keys   []string
	rows   []row.Row
	pos    int
	key    []byte
	cur    row.Row
	closed bool
}

func (it *modelIterator) Next() bool {
	if it.closed || it.pos+1 >= len(it.keys) {
		it.pos = len(it.keys)
		return false
	}
	it.pos++
	it.key = []byte(it.keys[it.pos])
	v := engine.ReadView(it.rows[it.pos], it.clock())
	it.cur = v.Clone()
	return true
}

func (it *modelIterator) Key() []byte  { return it.key }
func (it *modelIterator) Row() row.Row { return it.cur }
func (it *modelIterator) Err() error   { return nil }

func (it *modelIterator) Close() error {
	it.closed = true
	it.keys, it.rows = nil, nil
	return nil
}

// rawRows returns a copy of every stored row in key order as stored, with expired cells
// not yet turned into tombstones: what a persistent test double must write to disk so that
// merges after a reopen behave as before it.
func (m *Model) rawRows() ([]kv, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("model: %w", engine.ErrClosed)
	}
	out := make([]kv, 0, len(m.rows))
	for k, r := range m.rows {
		out = append(out, kv{key: []byte(k), row: r.Clone()})
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(string(a.key), string(b.key)) })
	return out, nil
}
