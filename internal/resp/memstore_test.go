package resp

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/row"
)

// memStore is the reference Store of the tests: a map of rows merged with row.Merge. It
// validates every batch as an engine would, so tests also check that the handler only
// writes valid rows.
type memStore struct {
	mu   sync.Mutex
	rows map[string]row.Row
	fail error // returned by every call while set
	// delay, when set, runs at the start of every call (a slow store: it advances a
	// test clock).
	delay func()
}

func newMemStore() *memStore { return &memStore{rows: map[string]row.Row{}} }

func (m *memStore) Apply(batch []row.Mutation) error {
	m.slow()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if err := engine.ValidateBatch(batch); err != nil {
		return err
	}
	for i := range batch {
		k := string(batch[i].Key)
		m.rows[k] = row.Merge(m.rows[k], batch[i].Row.Clone())
	}
	return nil
}

func (m *memStore) Get(key []byte) (row.Row, bool, error) {
	m.slow()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return row.Row{}, false, m.fail
	}
	if err := row.ValidateKey(key); err != nil {
		return row.Row{}, false, fmt.Errorf("%w: %w", engine.ErrInvalid, err)
	}
	r, ok := m.rows[string(key)]
	return r.Clone(), ok, nil
}

func (m *memStore) keys() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.rows)), true
}

func (m *memStore) setFail(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// dump prints a stored row with timestamps relative to base, for transcripts.
func (m *memStore) dump(key string, base int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok {
		return "(no row)"
	}
	var b strings.Builder
	if r.Deleted != 0 {
		fmt.Fprintf(&b, "deleted=t%+d\n", r.Deleted-base)
	}
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "%q ts=t%+d", c.Name, c.Timestamp-base)
		gen, n, isCounter := decodeShard(c.Value)
		switch {
		case c.Tombstone:
			b.WriteString(" tombstone")
		case isShard(c.Name) && isCounter:
			if gen == 0 {
				fmt.Fprintf(&b, " shard gen=none n=%s", n.appendText(nil))
			} else {
				fmt.Fprintf(&b, " shard gen=t%+d n=%s", gen-base, n.appendText(nil))
			}
		default:
			fmt.Fprintf(&b, " value=%q", c.Value)
		}
		if c.ExpiresAt != 0 {
			fmt.Fprintf(&b, " expires=t%+d", c.ExpiresAt-base)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// allKeys lists the stored keys, sorted.
func (m *memStore) allKeys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.rows {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// testClock is a controllable physical clock in microseconds.
type testClock struct{ now atomic.Int64 }

// testEpoch is the tests' "now" at start: 2023-11-14T22:13:20Z.
const testEpoch = int64(1_700_000_000_000_000)

func newTestClock() *testClock {
	c := &testClock{}
	c.now.Store(testEpoch)
	return c
}

func (c *testClock) read() int64          { return c.now.Load() }
func (c *testClock) advance(micros int64) { c.now.Add(micros) }
func (c *testClock) hlc() *hlc.Clock      { return hlc.New(c.read) }
