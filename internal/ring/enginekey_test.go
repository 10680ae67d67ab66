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
