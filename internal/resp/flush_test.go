package resp

import "github.com/kuradb/kura/internal/row"

// FlushAll makes the test store a Flusher: a row tombstone at ts on every row, as a
// node's engine gets.
func (m *memStore) FlushAll(ts int64) error {
	m.slow()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for k, r := range m.rows {
		m.rows[k] = row.Merge(r, row.Row{Deleted: ts})
	}
	return nil
}

// setDelay makes every call of the store run delay first (nil: none).
func (m *memStore) setDelay(delay func()) {
	m.mu.Lock()
	m.delay = delay
	m.mu.Unlock()
}

func (m *memStore) slow() {
	m.mu.Lock()
	d := m.delay
	m.mu.Unlock()
	if d != nil {
		d()
	}
}
