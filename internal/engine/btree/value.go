package btree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime/debug"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// Bucket names and meta keys. The data bucket maps key -> framed row; the meta bucket holds
// the file's format version and the row count, both updated in the same transactions as
// the data so they can never disagree with it after a crash.
var (
	dataBucket = []byte("rows")
	metaBucket = []byte("meta")
	formatKey  = []byte("format")
	countKey   = []byte("count")
)

// formatVersion is the layout of values in the data bucket: a CRC32C then a row encoding.
// Open refuses files with another version rather than misread them.
const formatVersion = 1

// crcSize is the size of the checksum in front of every stored row.
const crcSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum covers the key as well as the row: bbolt has no page checksums, so a flipped
// byte in a stored key would otherwise hand a row to the wrong key during a scan.
func checksum(key, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, payload)
}

// appendValue appends the stored form of r under key to dst: CRC32C(key, encoding) in
// little-endian, then row.AppendEncode.
func appendValue(dst, key []byte, r *row.Row) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = row.AppendEncode(dst, r)
	binary.LittleEndian.PutUint32(dst[start:], checksum(key, dst[start+crcSize:]))
	return dst
}

// decodeValue verifies and decodes a stored value. The row aliases v.
func decodeValue(key, v []byte) (row.Row, error) {
	if len(v) < crcSize {
		return row.Row{}, fmt.Errorf("btree: key %.64q: %w: value of %d bytes", key, engine.ErrCorrupt, len(v))
	}
	want := binary.LittleEndian.Uint32(v)
	if got := checksum(key, v[crcSize:]); got != want {
		return row.Row{}, fmt.Errorf("btree: key %.64q: %w: checksum %#08x, want %#08x",
			key, engine.ErrCorrupt, got, want)
	}
	r, err := row.Decode(v[crcSize:])
	if err != nil {
		return row.Row{}, fmt.Errorf("btree: key %.64q: %w: %w", key, engine.ErrCorrupt, err)
	}
	return r, nil
}

// guard turns a panic in bbolt into an ErrCorrupt error. bbolt trusts its pages (it has no
// page checksums), so a corrupted page can make it index out of range or follow a wild page
// id; panicOnFault turns a fault on the memory map into a panic that we can recover too.
// Use as: defer guard(&err, debug.SetPanicOnFault(true)).
func guard(err *error, prevPanicOnFault bool) {
	debug.SetPanicOnFault(prevPanicOnFault)
	if p := recover(); p != nil {
		*err = fmt.Errorf("btree: %w: bbolt panicked: %v", engine.ErrCorrupt, p)
	}
}

// panicOnFault is debug.SetPanicOnFault(true), named for the guard idiom.
func panicOnFault() bool { return debug.SetPanicOnFault(true) }

// initMeta creates the buckets and records of a new file and returns its row count. It
// also accepts a file whose count record is missing, counting its rows once.
func initMeta(tx *bbolt.Tx) (int64, error) {
	data, err := tx.CreateBucketIfNotExists(dataBucket)
	if err != nil {
		return 0, fmt.Errorf("btree: create bucket: %w", err)
	}
	meta, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return 0, fmt.Errorf("btree: create meta bucket: %w", err)
	}
	if meta.Get(formatKey) == nil {
		if k, _ := data.Cursor().First(); k != nil {
			return 0, fmt.Errorf("btree: %w: rows without a format record", engine.ErrCorrupt)
		}
		if err := meta.Put(formatKey, []byte{formatVersion}); err != nil {
			return 0, fmt.Errorf("btree: write format: %w", err)
		}
	}
	if meta.Get(countKey) != nil {
		return checkMeta(tx)
	}
	n := int64(data.Stats().KeyN)
	return n, putCount(tx, n)
}

// checkMeta checks the format record of an existing file and returns its row count.
func checkMeta(tx *bbolt.Tx) (int64, error) {
	if _, err := buckets(tx); err != nil {
		return 0, err
	}
	switch v := tx.Bucket(metaBucket).Get(formatKey); {
	case len(v) != 1:
		return 0, fmt.Errorf("btree: %w: bad format record %x", engine.ErrCorrupt, v)
	case v[0] != formatVersion:
		return 0, fmt.Errorf("btree: unsupported format version %d (want %d)", v[0], formatVersion)
	}
	return storedCount(tx)
}

// storedCount reads the row count from tx's meta bucket.
func storedCount(tx *bbolt.Tx) (int64, error) {
	v := tx.Bucket(metaBucket).Get(countKey)
	if len(v) != 8 {
		return 0, fmt.Errorf("btree: %w: bad row count record %x", engine.ErrCorrupt, v)
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// putCount stores the row count in tx's meta bucket.
func putCount(tx *bbolt.Tx, n int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	if err := tx.Bucket(metaBucket).Put(countKey, b[:]); err != nil {
		return fmt.Errorf("btree: write row count: %w", err)
	}
	return nil
}

// errMissingBucket means a committed file lacks one of our buckets: not our file, or a
// corrupted one.
var errMissingBucket = errors.New("btree: missing bucket")

// buckets returns tx's data bucket, or an ErrCorrupt error if a corrupted root hides it.
func buckets(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	b := tx.Bucket(dataBucket)
	if b == nil || tx.Bucket(metaBucket) == nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrCorrupt, errMissingBucket)
	}
	return b, nil
}
