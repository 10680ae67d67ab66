package memory

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tidwall/btree"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// Snapshot file format, version 1. All integers are little-endian.
//
//	header   magic "KURAMEM\n" (8) | version u32 | crc32c(magic, version) u32
//	record   'r' | klen u32 | vlen u32 | crc32c(klen, vlen, key, value) u32 | key | value
//	trailer  't' | count u64 | crc32c('t', count) u32
//
// Records come in strictly increasing key order; value is row.AppendEncode of the row. The
// trailer's count must equal the number of records and nothing may follow it, so a file cut
// short anywhere, or with any byte changed, fails to load with ErrCorrupt rather than loading
// part of the rows. Files are written to a temporary name, fsynced, renamed into place and
// the directory fsynced, so a crash mid-write leaves the previous snapshot intact.
const (
	snapMagic       = "KURAMEM\n"
	snapVersion     = 1
	snapHeaderSize  = 8 + 4 + 4
	recordHeadSize  = 4 + 4 + 4 // klen, vlen, crc after the tag
	trailerBodySize = 8 + 4     // count, crc after the tag
	tagRecord       = 'r'
	tagTrailer      = 't'
	snapBufferBytes = 1 << 20
	tempSuffix      = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(parts ...[]byte) uint32 {
	var c uint32
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// writeSnapshot writes the rows of snap to SnapshotPath atomically and records the file's
// size. It skips a snapshot no newer than the one on disk: an idle engine does not rewrite
// its file at every interval, and a slow writer cannot replace a newer file with an older
// tree.
func (d *DB) writeSnapshot(snap frozen) error {
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	if snap.version <= d.saved {
		return nil
	}
	path := d.opts.SnapshotPath
	tmp := path + tempSuffix
	size, err := writeFile(tmp, snap.tree)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = engine.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("memory: snapshot %s: %w", path, err)
	}
	d.diskBytes.Store(size)
	d.saved = snap.version
	return nil
}

// writeFile writes snap to path and fsyncs it, returning the file's size.
func writeFile(path string, snap *btree.BTreeG[item]) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	w := &countingWriter{w: f}
	bw := bufio.NewWriterSize(w, snapBufferBytes)
	err = encodeSnapshot(bw, snap)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return w.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encodeSnapshot writes header, records and trailer. bufio.Writer keeps its first error,
// so only the final Flush needs checking.
func encodeSnapshot(w *bufio.Writer, snap *btree.BTreeG[item]) error {
	var h [snapHeaderSize]byte
	copy(h[:], snapMagic)
	binary.LittleEndian.PutUint32(h[8:], snapVersion)
	binary.LittleEndian.PutUint32(h[12:], crc(h[:12]))
	w.Write(h[:])
	var count uint64
	var err error
	snap.Scan(func(it item) bool {
		if len(it.kv) > math.MaxUint32 {
			err = fmt.Errorf("row %q of %d bytes is too large for a snapshot record", it.key(), len(it.kv))
			return false
		}
		var r [1 + recordHeadSize]byte
		r[0] = tagRecord
		binary.LittleEndian.PutUint32(r[1:], uint32(it.klen))
		binary.LittleEndian.PutUint32(r[5:], uint32(len(it.kv)-it.klen))
		binary.LittleEndian.PutUint32(r[9:], crc(r[1:9], it.kv))
		w.Write(r[:])
		w.Write(it.kv)
		count++
		return true
	})
	var t [1 + trailerBodySize]byte
	t[0] = tagTrailer
	binary.LittleEndian.PutUint64(t[1:], count)
	binary.LittleEndian.PutUint32(t[9:], crc(t[:9]))
	if _, werr := w.Write(t[:]); err == nil {
		err = werr
	}
	return err
}

// load reads the snapshot at SnapshotPath into the (empty) tree, if the file exists. It
// removes a temporary file left by a crash mid-snapshot: the lock is held, so nobody else
// is writing it.
func (d *DB) load() error {
	path := d.opts.SnapshotPath
	if err := os.Remove(path + tempSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("memory: remove stale %s: %w", path+tempSuffix, err)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory: open snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("memory: open snapshot: %w", err)
	}
	l := loader{r: bufio.NewReaderSize(f, snapBufferBytes), remaining: fi.Size(), tree: newTree()}
	if err := l.load(); err != nil {
		return fmt.Errorf("memory: load snapshot %s: %w", path, err)
	}
	d.tree, d.dataBytes = l.tree, l.bytes
	d.diskBytes.Store(fi.Size())
	return nil
}

// loader decodes a snapshot into a tree it owns; the DB adopts the tree only when the
// whole file has checked out.
type loader struct {
	r         *bufio.Reader
	remaining int64 // bytes of the file not yet read, to bound lengths before allocating
	tree      *btree.BTreeG[item]
	bytes     int64
	prev      []byte
}

// corrupt returns an error wrapping engine.ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", engine.ErrCorrupt, fmt.Sprintf(format, args...))
}

func (l *loader) read(p []byte) error {
	if int64(len(p)) > l.remaining {
		return corrupt("truncated: need %d bytes, %d left", len(p), l.remaining)
	}
	if _, err := io.ReadFull(l.r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return corrupt("truncated")
		}
		return err
	}
	l.remaining -= int64(len(p))
	return nil
}

func (l *loader) load() error {
	var h [snapHeaderSize]byte
	if err := l.read(h[:]); err != nil {
		return err
	}
	if string(h[:8]) != snapMagic {
		return corrupt("not a kura memory snapshot (magic %q)", h[:8])
	}
	if binary.LittleEndian.Uint32(h[12:]) != crc(h[:12]) {
		return corrupt("header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != snapVersion {
		return fmt.Errorf("unsupported snapshot version %d (want %d)", v, snapVersion)
	}
	var count uint64
	for {
		var tag [1]byte
		if err := l.read(tag[:]); err != nil {
			return corrupt("no trailer: file cut short after %d records", count)
		}
		switch tag[0] {
		case tagRecord:
			if err := l.record(); err != nil {
				return fmt.Errorf("record %d: %w", count, err)
			}
			count++
		case tagTrailer:
			return l.trailer(count)
		default:
			return corrupt("bad tag %#x after %d records", tag[0], count)
		}
	}
}

// record reads one record and adds it to the tree.
func (l *loader) record() error {
	var h [recordHeadSize]byte
	if err := l.read(h[:]); err != nil {
		return err
	}
	klen, vlen := int64(binary.LittleEndian.Uint32(h[0:])), int64(binary.LittleEndian.Uint32(h[4:]))
	if klen == 0 || klen > row.MaxKeySize || klen+vlen > l.remaining {
		return corrupt("bad lengths: key %d, value %d, %d bytes left", klen, vlen, l.remaining)
	}
	kv := make([]byte, klen+vlen)
	if err := l.read(kv); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(h[8:]) != crc(h[:8], kv) {
		return corrupt("checksum mismatch")
	}
	it := item{kv: kv, klen: int(klen)}
	if l.prev != nil && bytes.Compare(l.prev, it.key()) >= 0 {
		return corrupt("key %q out of order after %q", it.key(), l.prev)
	}
	if _, err := row.Decode(it.enc()); err != nil {
		return fmt.Errorf("key %q: %w: %w", it.key(), engine.ErrCorrupt, err)
	}
	l.tree.Load(it) // keys arrive sorted: Load appends without searching
	l.prev, l.bytes = it.key(), l.bytes+int64(len(kv))
	return nil
}

// trailer checks the trailer and that nothing follows it.
func (l *loader) trailer(count uint64) error {
	var t [1 + trailerBodySize]byte
	t[0] = tagTrailer
	if err := l.read(t[1:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(t[9:]) != crc(t[:9]) {
		return corrupt("trailer checksum mismatch")
	}
	if n := binary.LittleEndian.Uint64(t[1:]); n != count {
		return corrupt("trailer counts %d records, file holds %d", n, count)
	}
	if l.remaining != 0 {
		return corrupt("%d bytes after the trailer", l.remaining)
	}
	return nil
}
