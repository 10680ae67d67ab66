package row

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Digest is a replica's summary of a row: equal rows have equal digests. Replicas compute
// it over the row as they would return it (expired cells already turned to tombstones):
// XXH64 of the row's encoding, the same on every node and every platform.
func Digest(r Row, found bool) uint64 {
	if !found {
		r = Row{}
	}
	bp := digestBuffers.Get().(*[]byte)
	*bp = AppendEncode((*bp)[:0], &r)
	sum := xxhash.Sum64(*bp)
	if cap(*bp) <= maxPooledDigestBuffer {
		digestBuffers.Put(bp)
	}
	return sum
}

// emptyRowDigest is the digest of a row not found.
var emptyRowDigest = Digest(Row{}, false)

// DigestEncoded is Digest of a row given as its encoding (AppendEncode), or of no row
// when found is false.
func DigestEncoded(enc []byte, found bool) uint64 {
	if !found {
		return emptyRowDigest
	}
	return xxhash.Sum64(enc)
}

// digestBuffers holds the encodings Digest hashes; a buffer that grew past
// maxPooledDigestBuffer for a large row is left to the garbage collector.
var digestBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledDigestBuffer = 64 << 10
