package ring

import (
	"bytes"
	"slices"
	"testing"
)

func TestEngineKeysSortInRingOrder(t *testing.T) {
	rng := testRNG(t)
	var keys [][]byte
	for range 2000 {
		k := make([]byte, 1+rng.IntN(20))
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		keys = append(keys, k)
	}
	ek := make([][]byte, len(keys))
	for i, k := range keys {
		ek[i] = EngineKey(k)
		tok, back, err := SplitEngineKey(ek[i])
		if err != nil || tok != TokenOf(k) || !bytes.Equal(back, k) {
			t.Fatalf("split(%x) = %d %x %v", ek[i], tok, back, err)
		}
	}
	slices.SortFunc(ek, bytes.Compare)
	for i := 1; i < len(ek); i++ {
		a, _, _ := SplitEngineKey(ek[i-1])
		b, _, _ := SplitEngineKey(ek[i])
		if a > b {
			t.Fatalf("byte order puts token %d before %d", a, b)
		}
	}
	if p := AppendTokenPrefix(nil, MinToken); !bytes.Equal(p, make([]byte, 8)) {
		t.Errorf("MinToken prefix %x, want all zero", p)
	}
	if _, _, err := SplitEngineKey([]byte("short")); err == nil {
		t.Error("short engine key accepted")
	}
}

// A key lies in EngineKeyRanges(start, end) exactly when its token lies in the ring range
// (start, end], wrapping: checked at the boundaries and at random tokens.
func TestEngineKeyRangesHoldExactlyTheRangesTokens(t *testing.T) {
	rng := testRNG(t)
	inRing := func(start, end, tok Token) bool {
		switch {
		case start < end:
			return start < tok && tok <= end
		case start > end:
			return tok > start || tok <= end
		}
		return true // start == end: the whole ring
	}
	inKeys := func(krs []KeyRange, ek []byte) bool {
		n := 0
		for _, kr := range krs {
			if (kr.Lo == nil || string(ek) >= string(kr.Lo)) && (kr.Hi == nil || string(ek) < string(kr.Hi)) {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("engine key %x in %d of the ranges %v", ek, n, krs)
		}
		return n == 1
	}
	for range 2000 {
		start, end := Token(rng.Uint64()), Token(rng.Uint64())
		switch rng.IntN(6) {
		case 0:
			end = start
		case 1:
			start = MaxToken
		case 2:
			end = MaxToken
		case 3:
			start = MinToken
		}
		krs := EngineKeyRanges(start, end)
		for _, tok := range []Token{start, start + 1, start - 1, end, end + 1, end - 1, MinToken, MaxToken, Token(rng.Uint64())} {
			ek := append(AppendTokenPrefix(nil, tok), 'k')
			if got, want := inKeys(krs, ek), inRing(start, end, tok); got != want {
				t.Fatalf("range (%d, %d]: token %d in engine key ranges %t, in ring range %t", start, end, tok, got, want)
			}
		}
	}
}
