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

// KeyRange is a range of engine keys: Lo <= key < Hi, where a nil Lo means from the first
// key and a nil Hi to the last.
type KeyRange struct{ Lo, Hi []byte }

// EngineKeyRanges returns the engine key ranges that hold the keys whose tokens lie in the
// ring range (start, end], wrapping past MaxToken when start >= end: one range, or two
// when it wraps. start == end is the whole ring (a ring of one vnode).
func EngineKeyRanges(start, end Token) []KeyRange {
	after := func(t Token) []byte { // the first engine key of a token above t, nil past the end
		if t == MaxToken {
			return nil
		}
		return AppendTokenPrefix(nil, t+1)
	}
	if start < end {
		return []KeyRange{{Lo: after(start), Hi: after(end)}}
	}
	if start == end {
		return []KeyRange{{}}
	}
	out := []KeyRange{{Lo: nil, Hi: after(end)}}
	if start != MaxToken {
		out = append(out, KeyRange{Lo: after(start), Hi: nil})
	}
	return out
}

// RangeStart returns the token after which range i (see RangeIndex) starts: the end of
// the range before it, wrapping.
func (r *Ring) RangeStart(i int) Token {
	return r.vnodes[(i+len(r.vnodes)-1)%len(r.vnodes)].token
}
