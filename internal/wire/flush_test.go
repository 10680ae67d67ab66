package wire

import (
	"errors"
	"math"
	"testing"
)

func TestFlushMessagesRoundTrip(t *testing.T) {
	for _, m := range []FlushRequest{{Prepare: true}, {Timestamp: 1}, {Timestamp: 1_700_000_000_000_000},
		{Timestamp: math.MaxInt64}, {Timestamp: -1}} {
		got, err := DecodeFlushRequest(AppendFlushRequest(nil, &m))
		if err != nil || got != m {
			t.Fatalf("request %+v: %+v %v", m, got, err)
		}
	}
	for _, m := range []FlushResponse{{}, {Clock: 1_700_000_000_000_000}, {Rows: 5}, {Clock: -3, Rows: math.MaxInt64}} {
		got, err := DecodeFlushResponse(AppendFlushResponse(nil, &m))
		if err != nil || got != m {
			t.Fatalf("response %+v: %+v %v", m, got, err)
		}
	}
}

func TestFlushMessagesRefuseWhatTheyDoNotKnow(t *testing.T) {
	good := AppendFlushRequest(nil, &FlushRequest{Timestamp: 42})
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":         {nil, ErrCorrupt},
		"newer version": {append([]byte{FlushVersion + 1}, good[1:]...), ErrVersion},
		"unknown flag":  {append([]byte{FlushVersion, 2}, good[2:]...), ErrCorrupt},
		"truncated":     {good[:5], ErrCorrupt},
		"trailing":      {append(good, 0), ErrCorrupt},
	} {
		if _, err := DecodeFlushRequest(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := DecodeFlushResponse(AppendFlushResponse(nil, &FlushResponse{Rows: -1})); !errors.Is(err, ErrCorrupt) {
		t.Errorf("negative rows: %v", err)
	}
}

func FuzzFlushDecoders(f *testing.F) {
	f.Add(AppendFlushRequest(nil, &FlushRequest{Timestamp: 42}))
	f.Add(AppendFlushResponse(nil, &FlushResponse{Clock: 7, Rows: 3}))
	f.Add([]byte{FlushVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeFlushRequest(b); err == nil {
			if got := AppendFlushRequest(nil, &m); string(got) != string(b) {
				t.Fatalf("request %x re-encodes as %x", b, got)
			}
		}
		if m, err := DecodeFlushResponse(b); err == nil {
			if got := AppendFlushResponse(nil, &m); string(got) != string(b) {
				t.Fatalf("response %x re-encodes as %x", b, got)
			}
		}
	})
}
