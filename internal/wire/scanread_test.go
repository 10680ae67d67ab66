package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestScanReadRequestRoundTripsWithItsOwnVersion(t *testing.T) {
	for _, req := range []ScanRequest{
		{Lo: nil, Hi: nil, Rows: 10, Bytes: 100},
		{Lo: []byte("a"), Hi: []byte("b"), Rows: 1, Bytes: 1},
		{Lo: []byte{}, Hi: []byte{0xff}, Rows: MaxScanRows, Bytes: MaxScanBytes},
	} {
		b := AppendScanReadRequest(nil, &req)
		if b[0] != ScanReadVersion {
			t.Fatalf("version byte %d, want ScanReadVersion", b[0])
		}
		got, err := DecodeScanReadRequest(b)
		if err != nil || !bytes.Equal(got.Lo, req.Lo) || !bytes.Equal(got.Hi, req.Hi) || (got.Hi == nil) != (req.Hi == nil) ||
			got.Rows != req.Rows || got.Bytes != req.Bytes {
			t.Fatalf("%+v came back as %+v (%v)", req, got, err)
		}
	}
	got, err := DecodeScanReadRequest(AppendScanReadRequest(nil, &ScanRequest{Rows: 1 << 30}))
	if err != nil || got.Rows != MaxScanRows || got.Bytes != 1 {
		t.Errorf("bounds not applied: %+v %v", got, err)
	}
	for name, b := range map[string][]byte{
		"empty": nil, "other version": {ScanReadVersion + 1, 0, 0, 1, 1}, "truncated": {ScanReadVersion, 5},
		"trailing": append(AppendScanReadRequest(nil, &ScanRequest{Rows: 1, Bytes: 1}), 0),
	} {
		if _, err := DecodeScanReadRequest(b); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeScanReadRequest(f *testing.F) {
	f.Add(AppendScanReadRequest(nil, &ScanRequest{Lo: []byte("a"), Hi: []byte("b"), Rows: 3, Bytes: 9}))
	f.Add([]byte{ScanReadVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeScanReadRequest(b)
		if err != nil {
			return
		}
		again, err := DecodeScanReadRequest(AppendScanReadRequest(nil, &req))
		if err != nil || !bytes.Equal(again.Lo, req.Lo) || !bytes.Equal(again.Hi, req.Hi) || again.Rows != req.Rows || again.Bytes != req.Bytes {
			t.Fatalf("%+v does not round trip: %+v %v", req, again, err)
		}
	})
}
