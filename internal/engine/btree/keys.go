package btree

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/engine"
)

// Long keys.
//
// bbolt keys hold at most bbolt.MaxKeySize (32 KiB) bytes, half of row.MaxKeySize. A key
// longer than directKeyMax is stored in a nested bucket named by its first directKeyMax
// bytes plus a 0x00 marker, under the rest of the key (which may nest once more). Order is
// kept: every key under the bucket for prefix P extends P, so it sorts after the direct key
// P (if any) and before every other key greater than P; and no direct key, being at most
// directKeyMax bytes, can sort between them or collide with the bucket's longer name.
// Long keys are rare, so only their path pays: the usual key is one Get or Put.

// directKeyMax is the longest key stored directly in its bucket.
const directKeyMax = bbolt.MaxKeySize - 1

// longBucketName returns the name of the nested bucket that holds the keys starting with
// key[:directKeyMax].
func longBucketName(key []byte) []byte {
	name := make([]byte, directKeyMax+1)
	copy(name, key[:directKeyMax]) // the last byte stays 0x00, the marker
	return name
}

// isLongBucketName reports whether a bucket entry's name has the shape longBucketName gives.
func isLongBucketName(k []byte) bool { return len(k) == directKeyMax+1 && k[directKeyMax] == 0 }

// leafFor returns the bucket that holds key, and key's last part within it. Without create
// it returns a nil bucket when a nested bucket on the way does not exist.
func leafFor(b *bbolt.Bucket, key []byte, create bool) (*bbolt.Bucket, []byte, error) {
	for len(key) > directKeyMax {
		name := longBucketName(key)
		var nb *bbolt.Bucket
		if create {
			var err error
			if nb, err = b.CreateBucketIfNotExists(name); err != nil {
				return nil, nil, fmt.Errorf("create bucket for long key: %w", err)
			}
		} else if nb = b.Bucket(name); nb == nil {
			return nil, nil, nil
		}
		b, key = nb, key[directKeyMax:]
	}
	return b, key, nil
}

// getKey returns the value stored under key, or nil. It aliases bbolt's memory.
func getKey(b *bbolt.Bucket, key []byte) []byte {
	leaf, last, _ := leafFor(b, key, false)
	if leaf == nil {
		return nil
	}
	return leaf.Get(last)
}

// verifyMiss checks the stored entries on either side of where key would be, when a Get
// did not find it. bbolt's binary search trusts the page: if the key of the wanted entry
// (or of a neighbour the search probed) was damaged, the search misses, and the damaged
// entry is then next to where the key should be, with a checksum that no longer matches.
// This turns most damaged keys into ErrCorrupt instead of "not found"; a damaged branch page
// or page header can still hide a key (a full scan then reports the shortfall).
func verifyMiss(b *bbolt.Bucket, key []byte) error {
	leaf, last, _ := leafFor(b, key, false)
	if leaf == nil {
		return nil
	}
	prefix := key[:len(key)-len(last)]
	c := leaf.Cursor()
	k, v := c.Seek(last)
	if bytes.Equal(k, last) {
		// The cursor, which moves on to the next page where Get stops, found the key
		// that Get missed: a damaged branch page sent Get to the wrong leaf.
		return fmt.Errorf("%w: key %.64q is stored but unreachable by lookup", engine.ErrCorrupt, key)
	}
	if k == nil {
		k, v = c.Last()
	} else if err := verifyEntry(prefix, k, v); err != nil {
		return err
	} else {
		k, v = c.Prev()
	}
	if k == nil {
		return nil
	}
	return verifyEntry(prefix, k, v)
}

// verifyEntry checks the checksum of one stored entry, or the name of a nested bucket.
func verifyEntry(prefix, k, v []byte) error {
	if v == nil {
		if !isLongBucketName(k) {
			return fmt.Errorf("%w: unexpected nested bucket %.64q", engine.ErrCorrupt, k)
		}
		return nil
	}
	full := append(bytes.Clone(prefix), k...)
	if len(v) < crcSize || binary.LittleEndian.Uint32(v) != checksum(full, v[crcSize:]) {
		return fmt.Errorf("%w: entry %.64q next to the key sought fails its checksum", engine.ErrCorrupt, full)
	}
	return nil
}

// putKey stores v under key. bbolt keeps v until the transaction commits.
func putKey(b *bbolt.Bucket, key, v []byte) error {
	leaf, last, err := leafFor(b, key, true)
	if err != nil {
		return err
	}
	return leaf.Put(last, v)
}

// deleteKey removes key, and the nested buckets it leaves empty.
func deleteKey(b *bbolt.Bucket, key []byte) error {
	if len(key) <= directKeyMax {
		return b.Delete(key)
	}
	name := longBucketName(key)
	nb := b.Bucket(name)
	if nb == nil {
		return nil
	}
	if err := deleteKey(nb, key[directKeyMax:]); err != nil {
		return err
	}
	if k, _ := nb.Cursor().First(); k == nil {
		return b.DeleteBucket(name)
	}
	return nil
}

// walker visits every stored (key, value) of the data bucket in key order, descending into
// the nested buckets of long keys. The key it returns is a buffer it reuses.
type walker struct {
	stack []level
	key   []byte // the current full key: the prefixes of the levels, then the leaf key
}

// level is one cursor of the walk; prefixLen is how much of key the outer levels supply.
type level struct {
	c         *bbolt.Cursor
	prefixLen int
}

// seek positions the walk at the first key >= lo (the first key for a nil lo) and returns
// it, or a nil key at the end.
func (w *walker) seek(root *bbolt.Bucket, lo []byte) ([]byte, []byte, error) {
	w.stack = append(w.stack[:0], level{c: root.Cursor()})
	w.key = w.key[:0]
	for {
		top := &w.stack[len(w.stack)-1]
		switch {
		case lo == nil:
			return w.settle(top.c.First())
		case len(lo) <= directKeyMax:
			return w.settle(top.c.Seek(lo))
		}
		name := longBucketName(lo)
		k, v := top.c.Seek(name)
		if !bytes.Equal(k, name) || v != nil {
			return w.settle(k, v) // no key shares lo's long prefix: what follows is > lo
		}
		b := top.c.Bucket().Bucket(k)
		if b == nil {
			return nil, nil, fmt.Errorf("%w: bad nested bucket for long keys", engine.ErrCorrupt)
		}
		w.key = append(w.key[:top.prefixLen], lo[:directKeyMax]...)
		w.stack = append(w.stack, level{c: b.Cursor(), prefixLen: len(w.key)})
		lo = lo[directKeyMax:]
	}
}

// next advances the walk.
func (w *walker) next() ([]byte, []byte, error) {
	return w.settle(w.stack[len(w.stack)-1].c.Next())
}

// settle turns the entry the innermost cursor just returned into the next stored value:
// it climbs out of exhausted nested buckets and descends into the ones it meets.
func (w *walker) settle(k, v []byte) ([]byte, []byte, error) {
	for {
		if k == nil {
			if len(w.stack) == 1 {
				return nil, nil, nil
			}
			w.stack = w.stack[:len(w.stack)-1]
			k, v = w.stack[len(w.stack)-1].c.Next()
			continue
		}
		top := &w.stack[len(w.stack)-1]
		w.key = append(w.key[:top.prefixLen], k...)
		if v != nil {
			return w.key, v, nil
		}
		b := top.c.Bucket().Bucket(k)
		if !isLongBucketName(k) || b == nil {
			return nil, nil, fmt.Errorf("%w: unexpected nested bucket %.64q", engine.ErrCorrupt, k)
		}
		w.key = w.key[:top.prefixLen+directKeyMax] // drop the marker
		w.stack = append(w.stack, level{c: b.Cursor(), prefixLen: len(w.key)})
		k, v = w.stack[len(w.stack)-1].c.First()
	}
}
