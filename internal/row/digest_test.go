package row

import "testing"

// A replica that hashes a row's encoding (DigestEncoded) agrees with one that hashes the
// row (Digest), found or not.
func TestDigestOfAnEncodingIsTheRowsDigest(t *testing.T) {
	rows := []Row{
		{Cells: []Cell{{Name: []byte("a"), Value: []byte("x"), Timestamp: 5}}},
		{Deleted: 3, Cells: []Cell{{Name: []byte("b"), Timestamp: 9, Tombstone: true}}},
		{Cells: []Cell{{Name: []byte("c"), Value: []byte("y"), Timestamp: 7, ExpiresAt: 99}}},
	}
	for _, r := range rows {
		if got, want := DigestEncoded(Encode(&r), true), Digest(r, true); got != want {
			t.Errorf("row %v: DigestEncoded %x, Digest %x", r, got, want)
		}
		if DigestEncoded(Encode(&r), true) == DigestEncoded(nil, false) {
			t.Errorf("row %v hashes like no row", r)
		}
	}
	if DigestEncoded(nil, false) != Digest(rows[0], false) {
		t.Error("no row hashes differently by the two functions")
	}
}
