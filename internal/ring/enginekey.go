package ring

import (
	"encoding/binary"
	"errors"
)

// EngineKeyPrefixLen is the length of the token prefix of an engine key.
const EngineKeyPrefixLen = 8

// ErrEngineKey is returned by SplitEngineKey for a key too short to hold a token.
var ErrEngineKey = errors.New("ring: engine key shorter than its token prefix")

// AppendTokenPrefix appends t as 8 bytes whose byte order is token order: big-endian with
// the sign bit flipped, so that MinToken sorts first.
func AppendTokenPrefix(dst []byte, t Token) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

// EngineKey returns the key a replica stores key under: its token prefix, then the key.
// Engines keep keys in byte order, so engine order is ring order and a token range of the
// ring is one contiguous range of the engine, which streaming and repair read in one pass.
func EngineKey(key []byte) []byte {
	return append(AppendTokenPrefix(make([]byte, 0, EngineKeyPrefixLen+len(key)), TokenOf(key)), key...)
}

// SplitEngineKey returns the token and the client key of an engine key. The key aliases ek.
func SplitEngineKey(ek []byte) (Token, []byte, error) {
	if len(ek) < EngineKeyPrefixLen {
		return 0, nil, ErrEngineKey
	}
	return Token(binary.BigEndian.Uint64(ek) ^ (1 << 63)), ek[EngineKeyPrefixLen:], nil
}
