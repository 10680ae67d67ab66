package enginetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// logEngine is a persistent, crash-safe test double: the Model for reads, plus a log of
// checksummed batch records (fsynced per Apply in Sync mode) and a checksummed snapshot
// written by Flush and Close. It exists so the suite's persistence, crash and corruption
// parts can be shown to pass a correct engine and to fail a flawed one before the real
// engines exist. It never fsyncs periodically: SIGKILL does not lose the page cache.
type logEngine struct {
	*Model
	dir   string
	flaws logFlaws
	lock  *engine.DirLock
	sync  bool

	mu      sync.Mutex // serialises log writes, Flush and Close
	log     *os.File
	pending []row.Mutation // writes held back by the ackBeforeWrite flaw
	closed  bool
}

// logFlaws are deliberate bugs that the suite must catch.
type logFlaws struct {
	noChecksum     bool // load the snapshot without verifying its checksum
	ackBeforeWrite bool // acknowledge writes that only reach the log at Close
	forgetOnClose  bool // Close drops the log instead of writing the snapshot
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func openLogEngine(dir string, opts engine.Options, flaws logFlaws) (engine.Engine, error) {
	lock, err := engine.LockDir(dir, "LOCK")
	if err != nil {
		return nil, err
	}
	l := &logEngine{Model: NewModel(opts), dir: dir, flaws: flaws, lock: lock, sync: opts.Durability == engine.Sync}
	if err := l.load(); err != nil {
		lock.Unlock()
		return nil, err
	}
	return l, nil
}

// load applies the snapshot, then the log up to its first incomplete or damaged record
// (the torn tail of a crash), and truncates the log there.
func (l *logEngine) load() error {
	snap, err := os.ReadFile(filepath.Join(l.dir, "snapshot"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		batch, n, err := decodeRecord(snap, !l.flaws.noChecksum)
		if err != nil || n != len(snap) {
			return fmt.Errorf("log: snapshot: %w", engine.ErrCorrupt)
		}
		if err := l.Model.Apply(batch); err != nil {
			return err
		}
	}
	l.log, err = os.OpenFile(filepath.Join(l.dir, "log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(l.log)
	if err != nil {
		return err
	}
	off := 0
	for {
		batch, n, err := decodeRecord(data[off:], true)
		if err != nil {
			break
		}
		if err := l.Model.Apply(batch); err != nil {
			return err
		}
		off += n
	}
	if err := l.log.Truncate(int64(off)); err != nil {
		return err
	}
	_, err = l.log.Seek(int64(off), io.SeekStart)
	return err
}

func (l *logEngine) Name() string    { return "log" }
func (l *logEngine) Role() ring.Role { return ring.ReadOptimized }

func (l *logEngine) Apply(batch []row.Mutation) error {
	if err := engine.ValidateBatch(batch); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("log: apply: %w", engine.ErrClosed)
	}
	if l.flaws.ackBeforeWrite {
		for _, m := range batch {
			l.pending = append(l.pending, row.Mutation{Key: append([]byte(nil), m.Key...), Row: m.Row.Clone()})
		}
	} else if err := l.appendLocked(batch); err != nil {
		return err
	}
	return l.Model.Apply(batch)
}

// DeleteRange deletes the rows from the model and writes a snapshot, so that the deletion
// is as durable as Flush makes writes: the log records no deletions.
func (l *logEngine) DeleteRange(lo, hi []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("log: delete range: %w", engine.ErrClosed)
	}
	if err := l.Model.DeleteRange(lo, hi); err != nil {
		return err
	}
	return l.flushLocked()
}

func (l *logEngine) appendLocked(batch []row.Mutation) error {
	if _, err := l.log.Write(encodeRecord(batch)); err != nil {
		return fmt.Errorf("log: write: %w", err)
	}
	if l.sync {
		return l.log.Sync()
	}
	return nil
}

// Flush writes the snapshot (to a temporary file, fsynced, renamed) and empties the log.
func (l *logEngine) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("log: flush: %w", engine.ErrClosed)
	}
	return l.flushLocked()
}

func (l *logEngine) flushLocked() error {
	rows, err := l.Model.rawRows()
	if err != nil {
		return err
	}
	batch := make([]row.Mutation, len(rows))
	for i, r := range rows {
		batch[i] = row.Mutation{Key: r.key, Row: r.row}
	}
	tmp := filepath.Join(l.dir, "snapshot.tmp")
	if err := writeSynced(tmp, encodeRecord(batch)); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, "snapshot")); err != nil {
		return err
	}
	if err := l.log.Truncate(0); err != nil {
		return err
	}
	_, err = l.log.Seek(0, io.SeekStart)
	return err
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (l *logEngine) Stats() engine.Stats {
	s := l.Model.Stats()
	for _, name := range []string{"snapshot", "log"} {
		if info, err := os.Stat(filepath.Join(l.dir, name)); err == nil {
			s.DiskBytes += info.Size()
		}
	}
	return s
}

func (l *logEngine) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	switch {
	case l.flaws.forgetOnClose:
		err = l.log.Truncate(0)
	case l.flaws.ackBeforeWrite:
		if err = l.appendLocked(l.pending); err == nil {
			err = l.flushLocked()
		}
	default:
		err = l.flushLocked()
	}
	l.log.Close()
	l.Model.Close()
	l.lock.Unlock()
	return err
}

// encodeRecord frames a batch: length, CRC-32C of the payload, payload (count, then each
// key and encoded row with uvarint lengths).
func encodeRecord(batch []row.Mutation) []byte {
	payload := binary.AppendUvarint(nil, uint64(len(batch)))
	for _, m := range batch {
		payload = binary.AppendUvarint(payload, uint64(len(m.Key)))
		payload = append(payload, m.Key...)
		enc := row.Encode(&m.Row)
		payload = binary.AppendUvarint(payload, uint64(len(enc)))
		payload = append(payload, enc...)
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, crcTable))
	return append(out, payload...)
}

// decodeRecord parses the record at the start of data and returns its length.
func decodeRecord(data []byte, verify bool) ([]row.Mutation, int, error) {
	if len(data) < 8 {
		return nil, 0, engine.ErrCorrupt
	}
	n := int(binary.LittleEndian.Uint32(data))
	if n > len(data)-8 {
		return nil, 0, engine.ErrCorrupt
	}
	payload := data[8 : 8+n]
	if verify && crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, 0, engine.ErrCorrupt
	}
	batch, err := decodePayload(payload)
	return batch, 8 + n, err
}

func decodePayload(p []byte) ([]row.Mutation, error) {
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, false
		}
		b := p[k : k+int(n)]
		p = p[k+int(n):]
		return b, true
	}
	count, k := binary.Uvarint(p)
	if k <= 0 || count > uint64(len(p)) {
		return nil, engine.ErrCorrupt
	}
	p = p[k:]
	batch := make([]row.Mutation, 0, count)
	for range count {
		key, ok1 := next()
		enc, ok2 := next()
		if !ok1 || !ok2 {
			return nil, engine.ErrCorrupt
		}
		r, err := row.Decode(enc)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", engine.ErrCorrupt, err)
		}
		batch = append(batch, row.Mutation{Key: key, Row: r})
	}
	return batch, nil
}
