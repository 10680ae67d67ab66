package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/row"
)

func scanRow() row.Row {
	return row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: 3}}}
}

// Version 1 of MethodScan is what nodes that predate checksums write and read: its bytes
// must not change. These are the encodings of the code before version 2 existed.
func TestScanVersion1EncodingIsThatOfOlderNodes(t *testing.T) {
	page := &ScanResponse{Rows: []row.Mutation{{Key: []byte("k1"), Row: scanRow()}}, Next: []byte("k1\x00")}
	last := &ScanResponse{Rows: []row.Mutation{{Key: []byte("k1"), Row: scanRow()}}}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"request", AppendScanRequest(nil, &ScanRequest{Lo: []byte("a"), Hi: []byte("b"), Rows: 16, Bytes: 1 << 20, Version: Version, Stream: true}), "01016101016210808040"},
		{"request to the end", AppendScanRequest(nil, &ScanRequest{Rows: 16, Bytes: 300, Version: Version}), "01000010ac02"},
		{"page", AppendScanResponse(nil, page), "0101026b310a0100010301630000017601036b3100"},
		{"page in the request's version", AppendScanResponseVersion(nil, page, Version), "0101026b310a0100010301630000017601036b3100"},
		{"last page", AppendScanResponse(nil, last), "0101026b310a0100010301630000017600"},
	} {
		if hex.EncodeToString(c.got) != c.want {
			t.Errorf("%s: %x, want %s", c.name, c.got, c.want)
		}
	}
	// An old node's request decodes as version 1, and is answered in it.
	req, err := DecodeScanRequest(mustHex(t, "01016101016210808040"))
	if err != nil || req.Version != Version || req.Stream || string(req.Lo) != "a" || string(req.Hi) != "b" || req.Rows != 16 || req.Bytes != 1<<20 {
		t.Fatalf("an old node's request: %+v, %v", req, err)
	}
	resp, err := DecodeScanResponse(mustHex(t, "0101026b310a0100010301630000017601036b3100"))
	if err != nil || resp.Checksummed || len(resp.Rows) != 1 || string(resp.Next) != "k1\x00" {
		t.Fatalf("an old node's page: %+v, %v", resp, err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Version 2 requests carry the stream flag; both versions round-trip with their version.
func TestScanRequestsOfBothVersionsRoundTrip(t *testing.T) {
	for _, req := range []ScanRequest{
		{Lo: []byte("a"), Hi: []byte("b"), Rows: 3, Bytes: 9, Stream: true},
		{Lo: []byte("a"), Rows: 3, Bytes: 9},
		{Hi: []byte{0xff}, Rows: 3, Bytes: 9, Version: ScanVersion, Stream: true},
		{Lo: []byte("a"), Hi: []byte("b"), Rows: 3, Bytes: 9, Version: Version},
	} {
		b := AppendScanRequest(nil, &req)
		want := req
		if want.Version == 0 {
			want.Version = ScanVersion
		}
		if b[0] != want.Version {
			t.Fatalf("%+v written in version %d", req, b[0])
		}
		want.Stream = want.Stream && want.Version == ScanVersion // version 1 has no flags
		got, err := DecodeScanRequest(b)
		if err != nil || !bytes.Equal(got.Lo, req.Lo) || !bytes.Equal(got.Hi, req.Hi) || (got.Hi == nil) != (req.Hi == nil) ||
			got.Rows != req.Rows || got.Bytes != req.Bytes || got.Version != want.Version || got.Stream != want.Stream {
			t.Fatalf("%+v came back as %+v, %v", req, got, err)
		}
	}
	for name, b := range map[string][]byte{
		"unknown flag": {ScanVersion, 2, 0, 0, 1, 1},
		"no flags":     {ScanVersion},
		"version 3":    {3, 0, 0, 0, 1, 1},
	} {
		if _, err := DecodeScanRequest(b); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeScanRequest([]byte{3, 0, 0, 0, 1, 1}); !errors.Is(err, ErrVersion) {
		t.Errorf("a request of a later version: %v, want ErrVersion", err)
	}
}

// A version 2 page carries a checksum of its bytes: it decodes as the page it was, marked
// checked, and a page with any byte changed does not decode.
func TestScanPageChecksumCatchesEveryDamagedByte(t *testing.T) {
	big := row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: bytes.Repeat([]byte("v"), 300), Timestamp: 1 << 40}}}
	for _, page := range []ScanResponse{
		{},
		{Rows: []row.Mutation{{Key: []byte("k1"), Row: scanRow()}}, Next: []byte("k1\x00")},
		{Rows: []row.Mutation{{Key: []byte("k1"), Row: scanRow()}, {Key: []byte("k2"), Row: big}}},
	} {
		b := AppendScanResponseVersion(nil, &page, ScanVersion)
		if b[0] != ScanVersion || len(b) != len(AppendScanResponse(nil, &page))+scanChecksumLen {
			t.Fatalf("version 2 page: %x", b)
		}
		got, err := DecodeScanResponse(b)
		if err != nil || !got.Checksummed || len(got.Rows) != len(page.Rows) || !bytes.Equal(got.Next, page.Next) || (got.Next == nil) != (page.Next == nil) {
			t.Fatalf("page %+v came back as %+v, %v", page, got, err)
		}
		for i := range page.Rows {
			if !bytes.Equal(got.Rows[i].Key, page.Rows[i].Key) || !enginetest.RowsEqual(got.Rows[i].Row, page.Rows[i].Row) {
				t.Fatalf("row %d changed in transit", i)
			}
		}
		for i := range b {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(b)
				bad[i] ^= flip
				if _, err := DecodeScanResponse(bad); err == nil {
					t.Fatalf("byte %d of %d xor %#x: decoded", i, len(b), flip)
				}
			}
		}
		if _, err := DecodeScanResponse(b[:len(b)-1]); err == nil {
			t.Fatal("a page short of a byte decoded")
		}
	}
	// A damaged body with its checksum intact is ErrChecksum, which a streamer re-asks.
	b := AppendScanResponseVersion(nil, &ScanResponse{Rows: []row.Mutation{{Key: []byte("k1"), Row: scanRow()}}}, 0)
	b[5] ^= 1
	if _, err := DecodeScanResponse(b); !errors.Is(err, ErrChecksum) {
		t.Fatalf("damaged page: %v, want ErrChecksum", err)
	}
	if _, err := DecodeScanResponse([]byte{ScanVersion, 0, 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 2 page too short for its checksum: %v", err)
	}
}

func FuzzDecodeScanPage(f *testing.F) {
	page := &ScanResponse{Rows: []row.Mutation{{Key: []byte("k"), Row: scanRow()}}, Next: []byte("k\x00")}
	f.Add(AppendScanResponse(nil, page))
	f.Add(AppendScanResponseVersion(nil, page, ScanVersion))
	f.Add(AppendScanRequest(nil, &ScanRequest{Lo: []byte("a"), Rows: 5, Bytes: 500, Stream: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeScanResponse(b); err == nil {
			v := Version
			if s.Checksummed {
				v = ScanVersion
			}
			again, err := DecodeScanResponse(AppendScanResponseVersion(nil, &s, v))
			if err != nil || again.Checksummed != s.Checksummed || len(again.Rows) != len(s.Rows) || !bytes.Equal(again.Next, s.Next) {
				t.Fatalf("page %+v re-encoded as %+v, %v", s, again, err)
			}
		}
		if r, err := DecodeScanRequest(b); err == nil {
			again, err := DecodeScanRequest(AppendScanRequest(nil, &r))
			if err != nil || again.Version != r.Version || again.Stream != r.Stream {
				t.Fatalf("request %+v re-encoded as %+v, %v", r, again, err)
			}
		}
	})
}
