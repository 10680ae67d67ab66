package wire

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

func repairSamples() ([]RepairRequest, []RepairResponse) {
	rows := []row.Mutation{{Key: []byte("k1"), Row: row.Row{Cells: []row.Cell{{Name: []byte("f"), Value: []byte("v"), Timestamp: 7}}}},
		{Key: []byte("k2"), Row: row.Row{Deleted: 9}}}
	reqs := []RepairRequest{
		{Session: 1, Step: RepairOpen, Start: math.MinInt64, End: 42, Salt: 99, Now: 1_700_000_000_000_000, Grace: 864e9, Root: math.MaxUint64},
		{Session: 2, Step: RepairDescend, Depth: 20, Levels: 6, Hashes: []uint64{1, 2, math.MaxUint64}},
		{Session: 3, Step: RepairLeaves, Counts: []uint32{2, 0, 1}, Entries: []LeafEntry{{1, 2, 3}, {math.MaxUint32, 5, -1}, {0, 0, math.MaxInt64}}},
		{Session: 4, Step: RepairRows, Rows: rows},
		{Session: math.MaxUint64, Step: RepairClose},
	}
	resps := []RepairResponse{{}, {Differ: []bool{true}, Held: 12}, {Differ: []bool{false, true, true, false, false, false, false, false, true}, Rows: rows}}
	return reqs, resps
}

func TestRepairMessagesRoundTrip(t *testing.T) {
	reqs, resps := repairSamples()
	for _, m := range reqs {
		got, err := DecodeRepairRequest(AppendRepairRequest(nil, &m))
		if err != nil || !reflect.DeepEqual(normRequest(got), normRequest(m)) {
			t.Fatalf("request %+v: %+v %v", m, got, err)
		}
	}
	for _, m := range resps {
		got, err := DecodeRepairResponse(AppendRepairResponse(nil, &m))
		if err != nil || len(got.Differ) != len(m.Differ) || got.Held != m.Held || len(got.Rows) != len(m.Rows) {
			t.Fatalf("response %+v: %+v %v", m, got, err)
		}
		for i := range m.Differ {
			if got.Differ[i] != m.Differ[i] {
				t.Fatalf("response %+v: bit %d", m, i)
			}
		}
	}
}

// normRequest re-encodes rows so that DeepEqual compares their contents.
func normRequest(m RepairRequest) RepairRequest {
	for i := range m.Rows {
		m.Rows[i].Row = row.Row{Deleted: m.Rows[i].Row.Deleted, Cells: append([]row.Cell{}, m.Rows[i].Row.Cells...)}
	}
	if len(m.Rows) == 0 {
		m.Rows = nil
	}
	return m
}

func TestRepairDecodersRefuseWhatTheyDoNotKnow(t *testing.T) {
	descend := AppendRepairRequest(nil, &RepairRequest{Step: RepairDescend, Depth: 3, Levels: 1, Hashes: []uint64{1}})
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":          {nil, ErrCorrupt},
		"newer version":  {append([]byte{RepairVersion + 1}, descend[1:]...), ErrVersion},
		"unknown step":   {[]byte{RepairVersion, 9, 0}, ErrCorrupt},
		"too deep":       {[]byte{RepairVersion, byte(RepairDescend), 0, MaxRepairDepth + 1, 1, 0}, ErrCorrupt},
		"no levels":      {[]byte{RepairVersion, byte(RepairDescend), 0, 3, 0, 0}, ErrCorrupt},
		"levels > depth": {[]byte{RepairVersion, byte(RepairDescend), 0, 3, 4, 0}, ErrCorrupt},
		"hashes missing": {descend[:len(descend)-1], ErrCorrupt},
		"trailing":       {append(descend, 0), ErrCorrupt},
		"too many hashes": {append([]byte{RepairVersion, byte(RepairDescend), 0, 3, 1},
			0x81, 0x80, 0x04), ErrCorrupt}, // 65537
	} {
		if _, err := DecodeRepairRequest(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := DecodeRepairResponse([]byte{RepairVersion, 9, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bits missing: %v", err)
	}
}

func FuzzRepairDecoders(f *testing.F) {
	reqs, resps := repairSamples()
	for _, m := range reqs {
		f.Add(AppendRepairRequest(nil, &m))
	}
	for _, m := range resps {
		f.Add(AppendRepairResponse(nil, &m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeRepairRequest(b); err == nil {
			again, err := DecodeRepairRequest(AppendRepairRequest(nil, &m))
			if err != nil || again.Step != m.Step || len(again.Hashes) != len(m.Hashes) || len(again.Entries) != len(m.Entries) || len(again.Rows) != len(m.Rows) {
				t.Fatalf("request %x does not survive a re-encoding: %v", b, err)
			}
		}
		if m, err := DecodeRepairResponse(b); err == nil {
			again, err := DecodeRepairResponse(AppendRepairResponse(nil, &m))
			if err != nil || len(again.Differ) != len(m.Differ) || len(again.Rows) != len(m.Rows) || again.Held != m.Held {
				t.Fatalf("response %x does not survive a re-encoding: %v", b, err)
			}
		}
	})
}
