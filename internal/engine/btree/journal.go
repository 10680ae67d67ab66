package btree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The write buffer's journal (see buffer.go).
//
// With Options.WriteBufferBytes set, Apply makes a batch durable by appending it to a
// journal, not by committing it to the tree. The journal is a sequence of segments,
// dir/journal-<seq>.log with seq a 20-digit decimal so that names sort in order; a
// segment holds the writes of one buffer generation and is deleted once the tree holds
// them durably. A segment is a sequence of records, one per Apply batch, so that a batch
// is atomic across a crash (its record is whole or torn):
//
//	length  uint32, little-endian: bytes of payload
//	crc     uint32, little-endian: CRC-32C of payload
//	payload uvarint mutation count, then per mutation: uvarint key length, key, uvarint
//	        encoding length, row.AppendEncode of the mutation's row
//
// Only the last record of a segment may be torn (a crash in the middle of an append);
// replay stops there. A bad record followed by more of the segment is damage, reported
// as ErrCorrupt.

const (
	journalPrefix = "journal-"
	journalSuffix = ".log"
	// recordHeader is the length and crc of a record.
	recordHeader = 8
)

// journal is the segment being appended to. Not safe for concurrent use: the write
// buffer's jmu guards it.
type journal struct {
	dir  string
	seq  uint64
	f    *os.File // nil after a failed append that could not be undone: the next append opens seq+1
	size int64    // bytes of whole records in f
	buf  []byte   // encoding scratch
}

func segmentPath(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%020d%s", journalPrefix, seq, journalSuffix))
}

// segments lists the journal segments in dir, oldest first.
func segments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("btree: journal: %w", err)
	}
	var seqs []uint64
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), journalPrefix)
		if !ok {
			continue
		}
		if name, ok = strings.CutSuffix(name, journalSuffix); !ok {
			continue
		}
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue // not ours
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// createSegment creates segment seq, empty, and makes its name durable.
func createSegment(dir string, seq uint64) (*os.File, error) {
	f, err := os.OpenFile(segmentPath(dir, seq), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("btree: journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		os.Remove(f.Name()) // so that the next try can create it again
		return nil, err
	}
	return f, nil
}

// syncDir fsyncs dir, so that files created or removed in it stay so after a crash.
func syncDir(dir string) error {
	if err := engine.SyncDir(dir); err != nil {
		return fmt.Errorf("btree: journal: sync directory: %w", err)
	}
	return nil
}

// removeSegments deletes the segments seqs and makes that durable.
func removeSegments(dir string, seqs []uint64) error {
	for _, seq := range seqs {
		if err := os.Remove(segmentPath(dir, seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("btree: journal: %w", err)
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	return syncDir(dir)
}

// appendRequests appends one record per request and, when sync, fsyncs the segment. On
// failure it cuts the segment back to its last whole record, so that a record written in
// part never sits in front of later ones; if even that fails the segment is abandoned and
// the next append starts segment seq+1 (opened reports the new seq to the caller, who owns
// the list of segments of the writes buffered).
func (j *journal) appendRequests(reqs []*request, sync bool) (opened uint64, err error) {
	if j.f == nil {
		f, err := createSegment(j.dir, j.seq+1)
		if err != nil {
			return 0, err
		}
		j.f, j.seq, j.size, opened = f, j.seq+1, 0, j.seq+1
	}
	j.buf = j.buf[:0]
	for _, r := range reqs {
		j.buf = appendRecord(j.buf, r.batch)
	}
	_, err = j.f.Write(j.buf)
	if err == nil && sync {
		err = j.f.Sync()
	}
	if err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.f.Close()
			j.f = nil
		}
		return opened, fmt.Errorf("btree: journal: %w", err)
	}
	j.size += int64(len(j.buf))
	if cap(j.buf) > maxScratchBytes {
		j.buf = nil
	}
	return opened, nil
}

// sync fsyncs the segment.
func (j *journal) sync() error {
	if j.f == nil {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("btree: journal: %w", err)
	}
	return nil
}

// close fsyncs and closes the segment.
func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if err != nil {
		return fmt.Errorf("btree: journal: %w", err)
	}
	return nil
}

// appendRecord appends the record of one batch to dst.
func appendRecord(dst []byte, batch []row.Mutation) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeader)...)
	dst = binary.AppendUvarint(dst, uint64(len(batch)))
	for i := range batch {
		m := &batch[i]
		dst = binary.AppendUvarint(dst, uint64(len(m.Key)))
		dst = append(dst, m.Key...)
		// The encoding's length goes in front of it: encode after room for the widest
		// length field, then close the gap.
		lenAt := len(dst)
		dst = append(dst, make([]byte, binary.MaxVarintLen64)...)
		encAt := len(dst)
		dst = row.AppendEncode(dst, &m.Row)
		n := binary.PutUvarint(dst[lenAt:], uint64(len(dst)-encAt))
		dst = append(dst[:lenAt+n], dst[encAt:]...)
	}
	payload := dst[start+recordHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// replaySegment calls fn with every mutation of every whole record of segment seq, in
// order. The mutations' memory is fn's to keep. A torn last record is skipped; a bad
// record before the end is ErrCorrupt.
func replaySegment(dir string, seq uint64, fn func(m row.Mutation)) error {
	path := segmentPath(dir, seq)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("btree: journal: %w", err)
	}
	for off := 0; off < len(data); {
		if len(data)-off < recordHeader {
			return nil // a torn header at the end
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		end := off + recordHeader + n
		if n > len(data)-off-recordHeader {
			return nil // a torn payload at the end (or a damaged length: the rest is unreadable either way)
		}
		payload := data[off+recordHeader : end]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[off+4:]) {
			if end == len(data) {
				return nil // the last record, torn
			}
			return fmt.Errorf("btree: journal %s: %w: bad checksum at offset %d", path, engine.ErrCorrupt, off)
		}
		if err := decodeRecord(payload, fn); err != nil {
			return fmt.Errorf("btree: journal %s: %w: record at offset %d: %w", path, engine.ErrCorrupt, off, err)
		}
		off = end
	}
	return nil
}

// decodeRecord calls fn with each mutation of a record's payload.
func decodeRecord(p []byte, fn func(m row.Mutation)) error {
	count, k := binary.Uvarint(p)
	if k <= 0 || count > uint64(len(p)) {
		return errors.New("bad mutation count")
	}
	p = p[k:]
	muts := make([]row.Mutation, 0, count)
	for range count {
		var key, enc []byte
		var err error
		if key, p, err = lengthPrefixed(p); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if enc, p, err = lengthPrefixed(p); err != nil {
			return fmt.Errorf("row: %w", err)
		}
		r, err := row.Decode(enc)
		if err != nil {
			return err
		}
		muts = append(muts, row.Mutation{Key: key, Row: r})
	}
	if len(p) != 0 {
		return errors.New("trailing bytes")
	}
	for _, m := range muts { // only once the whole record decodes: a batch is atomic
		fn(m)
	}
	return nil
}

// lengthPrefixed splits a uvarint-length-prefixed field off p.
func lengthPrefixed(p []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, errors.New("bad length")
	}
	return p[k : k+int(n)], p[k+int(n):], nil
}
