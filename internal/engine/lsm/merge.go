package lsm

import (
	"fmt"
	"io"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// MergerName is the name pebble records in the OPTIONS file. Pebble refuses to open a store
// written with a different merger name, so a new row encoding that old code cannot merge
// needs a new name (kura.row.v2), not a silent change to this operator.
const MergerName = "kura.row.v1"

// newMerger returns the pebble merge operator for encoded rows. horizon gives, for a key,
// the timestamp below which Purge may drop its tombstones (engine.Options.Horizon at the
// clock's now); it must be safe for concurrent use because compactions run in background
// goroutines. longChain, if not nil, is told each key and operand count merged, from any
// goroutine; it must not block.
func newMerger(horizon func(key []byte) int64, longChain func(key []byte, operands int)) *pebble.Merger {
	pool := &sync.Pool{New: func() any { return new(rowMerger) }}
	return &pebble.Merger{
		Name: MergerName,
		Merge: func(key, value []byte) (pebble.ValueMerger, error) {
			m := pool.Get().(*rowMerger)
			m.reset(pool, horizon, key)
			m.longChain = longChain
			m.add(value)
			return m, nil
		},
	}
}

// rowMerger collects the operands of one key and merges them once, in Finish: decoding and
// re-encoding once per key, not once per operand, keeps long operand chains cheap.
//
// row.Merge is commutative and associative, so MergeNewer and MergeOlder are the same
// operation and any grouping pebble chooses (memtable, flush, partial compaction) gives the
// same row.
//
// rowMerger is deliberately not a pebble.DeletableValueMerger: in pebble v2.1.x a merge
// that a compaction drops corrupts the compaction iterator's state (it panics, or
// resurrects the key's base value): cockroachdb/pebble#6168, fix proposed in #6169. A row
// purged to nothing is therefore kept as the encoding of the empty row, a few bytes that
// reads treat as "not found". Implement DeletableFinish once kura's pebble has the fix.
//
// A rowMerger is pooled: Finish returns it as the io.Closer that pebble closes once it no
// longer reads the returned value, and Close puts it back.
type rowMerger struct {
	pool      *sync.Pool
	horizon   func(key []byte) int64
	key       []byte // copy of the key
	buf       []byte // operands back to back; pebble keeps ownership of what it passes
	ends      []int  // end offset of each operand in buf
	out       []byte // the encoded result
	longChain func(key []byte, operands int)
}

func (m *rowMerger) reset(pool *sync.Pool, horizon func(key []byte) int64, key []byte) {
	m.pool, m.horizon = pool, horizon
	m.key = append(m.key[:0], key...)
	m.buf, m.ends, m.out = m.buf[:0], m.ends[:0], m.out[:0]
}

func (m *rowMerger) add(value []byte) {
	m.buf = append(m.buf, value...)
	m.ends = append(m.ends, len(m.buf))
}

// MergeNewer adds an operand newer than the others; the order does not matter to row.Merge.
func (m *rowMerger) MergeNewer(value []byte) error { m.add(value); return nil }

// MergeOlder adds an operand older than the others; the order does not matter to row.Merge.
func (m *rowMerger) MergeOlder(value []byte) error { m.add(value); return nil }

// Finish merges the operands and purges the result when includesBase says the merge saw
// every older version of the row. Purging without includesBase would be wrong: a tombstone
// dropped here could no longer shadow an older live cell in a lower level, and the deleted
// value would come back.
func (m *rowMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	merged, changed, err := m.merge()
	if err != nil {
		return nil, nil, err
	}
	if m.longChain != nil && len(m.ends) > 1 {
		m.longChain(m.key, len(m.ends))
	}
	if includesBase {
		cells, deleted := len(merged.Cells), merged.Deleted
		row.Purge(&merged, m.horizon(m.key), 0)
		changed = changed || len(merged.Cells) != cells || merged.Deleted != deleted
	}
	if !changed {
		return m.buf, m, nil // a lone operand, unchanged: it is its own encoding
	}
	m.out = row.AppendEncode(m.out[:0], &merged)
	return m.out, m, nil
}

// merge decodes every operand and merges them. It reports whether the result differs from
// a lone operand, which it does whenever there are several. The result aliases m.buf.
func (m *rowMerger) merge() (acc row.Row, changed bool, err error) {
	start := 0
	for i, end := range m.ends {
		r, err := row.Decode(m.buf[start:end])
		if err != nil {
			return row.Row{}, false, fmt.Errorf("lsm: merge operand %d of key %q: %w: %w",
				i, m.key, engine.ErrCorrupt, err)
		}
		if i == 0 {
			acc = r
		} else {
			acc = row.Merge(acc, r)
		}
		start = end
	}
	if len(m.ends) == 1 && !shadows(&acc) {
		return acc, false, nil
	}
	if len(m.ends) == 1 {
		acc = row.Merge(row.Row{}, acc) // drop the cells its own row tombstone shadows
	}
	return acc, true, nil
}

// shadows reports whether r holds cells its own row tombstone shadows. Apply never writes
// such a row (it normalizes first), but a lone operand is returned without a merge, and
// returning shadowed cells would differ from what row.Merge gives.
func shadows(r *row.Row) bool {
	for i := range r.Cells {
		if r.Cells[i].Timestamp <= r.Deleted {
			return true
		}
	}
	return false
}

// Close returns the merger to its pool once pebble is done with the value Finish returned.
func (m *rowMerger) Close() error {
	const maxPooledBytes = 1 << 20 // do not pin the memory of one huge row forever
	if cap(m.buf)+cap(m.out)+cap(m.key) > maxPooledBytes {
		return nil
	}
	m.pool.Put(m)
	return nil
}
