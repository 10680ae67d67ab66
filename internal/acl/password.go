package acl

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's cost parameters. They are stored in every hash (see Hash's
// format), so they can change without invalidating the hashes made before.
type Params struct {
	MemoryKiB uint32 // m
	Time      uint32 // t, passes over the memory
	Threads   uint8  // p
}

// DefaultParams cost about 30-60 ms and 19 MiB per hash on this project's 2-core test
// machine (BenchmarkHash; docs/design/acl.md has the numbers). That is OWASP's first
// recommended argon2id setting (m=19 MiB, t=2, p=1): slow enough that a stolen ACL file
// costs an attacker real time per guess, fast enough that an AUTH that misses the
// credential cache (see Registry.Authenticate) is not noticed by a client, and one thread
// because the machine's two cores also serve every other connection.
var DefaultParams = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

// Bounds on the parameters a hash may carry: a "#hash" rule comes from a client, and
// verifying a hash with absurd parameters would let it stall the server.
const (
	maxMemoryKiB = 256 * 1024
	maxTime      = 16
	maxThreads   = 8
	saltBytes    = 16
	keyBytes     = 32
	minSaltBytes = 8
	maxSaltBytes = 64
	minKeyBytes  = 16
	maxKeyBytes  = 64
)

// hashPrefix starts every kura password hash: PHC string format, the one argon2's
// reference implementation and libsodium print, so "v=19" is the algorithm's version and
// a later format can be told apart by its prefix.
const hashPrefix = "$argon2id$v=19$"

var b64 = base64.RawStdEncoding

// ErrBadHash is returned for a stored password hash kura cannot read.
var ErrBadHash = errors.New("acl: malformed password hash")

// Hash returns password's argon2id hash with a fresh salt read from rand, encoded as
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<threads>$<salt>$<key> (salt and key in unpadded
// standard base64).
func Hash(password []byte, p Params, rand io.Reader) (string, error) {
	salt := make([]byte, saltBytes)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return "", fmt.Errorf("acl: reading a salt: %w", err)
	}
	key := argon2.IDKey(password, salt, p.Time, p.MemoryKiB, p.Threads, keyBytes)
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", hashPrefix, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// decodedHash is a parsed hash.
type decodedHash struct {
	p         Params
	salt, key []byte
}

// parseHash parses and bounds-checks an encoded hash.
func parseHash(h string) (decodedHash, error) {
	var d decodedHash
	rest, ok := strings.CutPrefix(h, hashPrefix)
	if !ok {
		return d, ErrBadHash
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return d, ErrBadHash
	}
	for i, kv := range strings.Split(parts[0], ",") {
		name, val, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil || n == 0 || val != strconv.FormatUint(n, 10) {
			return d, ErrBadHash
		}
		switch {
		case i == 0 && name == "m" && n <= maxMemoryKiB:
			d.p.MemoryKiB = uint32(n)
		case i == 1 && name == "t" && n <= maxTime:
			d.p.Time = uint32(n)
		case i == 2 && name == "p" && n <= maxThreads:
			d.p.Threads = uint8(n)
		default:
			return d, ErrBadHash
		}
	}
	var err1, err2 error
	d.salt, err1 = b64.Strict().DecodeString(parts[1])
	d.key, err2 = b64.Strict().DecodeString(parts[2])
	switch {
	case d.p.Threads == 0 || err1 != nil || err2 != nil,
		len(d.salt) < minSaltBytes || len(d.salt) > maxSaltBytes,
		len(d.key) < minKeyBytes || len(d.key) > maxKeyBytes,
		d.p.MemoryKiB < 8*uint32(d.p.Threads): // argon2's own minimum
		return d, ErrBadHash
	}
	return d, nil
}

// Verify reports whether password matches the encoded hash, comparing in constant time.
// It costs one hash at the hash's own parameters.
func Verify(password []byte, hash string) (bool, error) {
	d, err := parseHash(hash)
	if err != nil {
		return false, err
	}
	key := argon2.IDKey(password, d.salt, d.p.Time, d.p.MemoryKiB, d.p.Threads, uint32(len(d.key)))
	return subtle.ConstantTimeCompare(key, d.key) == 1, nil
}
