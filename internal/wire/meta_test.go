package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func metaRequests() []MetaRequest {
	return []MetaRequest{
		{Op: MetaPropose, Entry: []byte{1, 2, 3}},
		{Op: MetaPropose, Entry: []byte{}},
		{Op: MetaFetch},
		{Op: MetaFetch, SinceEpoch: 7, SinceIndex: 12345},
		{Op: MetaFetch, SinceEpoch: math.MaxUint64, SinceIndex: math.MaxUint64},
	}
}

func metaResponses() []MetaResponse {
	return []MetaResponse{
		{},
		{Epoch: 3, Index: 40},
		{State: []byte{1, 9, 9}, Epoch: 3, Index: 41, LeaderID: "n1", LeaderAddr: "10.0.0.1:7001"},
		{State: []byte{}, Epoch: 1, Index: 2},
		{LeaderID: "n2", LeaderAddr: "10.0.0.2:7001", Err: &MetaError{Codes: []uint16{100}, Message: "metalog: not the leader"}},
		{Epoch: 5, Index: 9, Err: &MetaError{Codes: []uint16{3, 5, math.MaxUint16}, Message: "meta: planned against another epoch"}},
		{Err: &MetaError{Message: ""}},
	}
}

func TestMetaMessagesRoundTrip(t *testing.T) {
	for _, m := range metaRequests() {
		b := AppendMetaRequest(nil, &m)
		if b[0] != MetaVersion {
			t.Fatalf("request %+v starts with %d, not MetaVersion", m, b[0])
		}
		got, err := DecodeMetaRequest(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("request %+v: %+v %v", m, got, err)
		}
	}
	for _, m := range metaResponses() {
		got, err := DecodeMetaResponse(AppendMetaResponse(nil, &m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("response %+v: %+v %v", m, got, err)
		}
	}
}

// A fetch answer without a state and one with an empty state are different answers.
func TestMetaResponseTellsNoStateFromAnEmptyOne(t *testing.T) {
	none, _ := DecodeMetaResponse(AppendMetaResponse(nil, &MetaResponse{}))
	empty, _ := DecodeMetaResponse(AppendMetaResponse(nil, &MetaResponse{State: []byte{}}))
	if none.State != nil || empty.State == nil {
		t.Fatalf("no state decodes as %v, an empty one as %v", none.State, empty.State)
	}
}

func TestMetaErrorIsCutToItsLimits(t *testing.T) {
	long := strings.Repeat("é", MaxMetaMessage) // two bytes each: the cut falls inside one
	codes := make([]uint16, MaxMetaCodes+5)
	got, err := DecodeMetaResponse(AppendMetaResponse(nil, &MetaResponse{Err: &MetaError{Codes: codes, Message: "x" + long}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Err.Codes) != MaxMetaCodes || len(got.Err.Message) > MaxMetaMessage || !strings.HasPrefix("x"+long, got.Err.Message) ||
		strings.ContainsRune(got.Err.Message, '\uFFFD') {
		t.Fatalf("cut to %d codes and a message of %d bytes", len(got.Err.Codes), len(got.Err.Message))
	}
}

func TestMetaDecodersRejectMalformedPayloads(t *testing.T) {
	good := AppendMetaRequest(nil, &MetaRequest{Op: MetaFetch, SinceEpoch: 300, SinceIndex: 70000})
	bigLen := binary.AppendUvarint([]byte{MetaVersion, byte(MetaPropose)}, MaxMetaBytes+1)
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":            {nil, ErrCorrupt},
		"newer version":    {append([]byte{MetaVersion + 1}, good[1:]...), ErrVersion},
		"no op":            {[]byte{MetaVersion}, ErrCorrupt},
		"unknown op":       {[]byte{MetaVersion, 3, 0, 0}, ErrCorrupt},
		"op zero":          {[]byte{MetaVersion, 0}, ErrCorrupt},
		"trailing":         {append(good, 0), ErrCorrupt},
		"entry too large":  {bigLen, ErrCorrupt},
		"entry cut short":  {[]byte{MetaVersion, byte(MetaPropose), 5, 1, 2}, ErrCorrupt},
		"bad varint":       {[]byte{MetaVersion, byte(MetaFetch), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, ErrCorrupt},
		"missing index":    {[]byte{MetaVersion, byte(MetaFetch), 1}, ErrCorrupt},
		"propose no entry": {[]byte{MetaVersion, byte(MetaPropose)}, ErrCorrupt},
	} {
		if _, err := DecodeMetaRequest(c.b); !errors.Is(err, c.want) {
			t.Errorf("request %s: %v, want %v", name, err, c.want)
		}
	}
	for i := range good {
		if _, err := DecodeMetaRequest(good[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("request cut to %d bytes: %v", i, err)
		}
	}

	for _, m := range metaResponses() {
		b := AppendMetaResponse(nil, &m)
		for i := range b {
			if _, err := DecodeMetaResponse(b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("response %+v cut to %d bytes: %v", m, i, err)
			}
		}
		if _, err := DecodeMetaResponse(append(b, 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("response %+v with a trailing byte: %v", m, err)
		}
	}
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"newer version":  {[]byte{MetaVersion + 1, 0, 0, 0, 0, 0}, ErrVersion},
		"unknown flag":   {[]byte{MetaVersion, 4, 0, 0, 0, 0}, ErrCorrupt},
		"long leader":    {append([]byte{MetaVersion, 0, 0, 0}, binary.AppendUvarint(nil, maxMetaName+1)...), ErrCorrupt},
		"too many codes": {append([]byte{MetaVersion, metaHasErr, 0, 0, 0, 0}, binary.AppendUvarint(nil, MaxMetaCodes+1)...), ErrCorrupt},
		"code too large": {append([]byte{MetaVersion, metaHasErr, 0, 0, 0, 0, 1}, append(binary.AppendUvarint(nil, math.MaxUint16+1), 0)...), ErrCorrupt},
		"long message":   {append([]byte{MetaVersion, metaHasErr, 0, 0, 0, 0, 0}, binary.AppendUvarint(nil, MaxMetaMessage+1)...), ErrCorrupt},
	} {
		if _, err := DecodeMetaResponse(c.b); !errors.Is(err, c.want) {
			t.Errorf("response %s: %v, want %v", name, err, c.want)
		}
	}
}

// The decoders never panic, and what they accept encodes to bytes that decode to the same
// message (varints may have been written longer than needed, so the bytes may differ).
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range metaRequests() {
		f.Add(AppendMetaRequest(nil, &m))
	}
	for _, m := range metaResponses() {
		f.Add(AppendMetaResponse(nil, &m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeMetaRequest(b); err == nil {
			again, err := DecodeMetaRequest(AppendMetaRequest(nil, &m))
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("request %x decodes as %+v, which re-encodes as %+v, %v", b, m, again, err)
			}
		}
		if m, err := DecodeMetaResponse(b); err == nil {
			again, err := DecodeMetaResponse(AppendMetaResponse(nil, &m))
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("response %x decodes as %+v, which re-encodes as %+v, %v", b, m, again, err)
			}
		}
	})
}
