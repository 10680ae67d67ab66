package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/kuradb/kura/internal/row"
)

// MethodRepair carries an anti-entropy repair session between two replicas of one token
// range (RepairRequest -> RepairResponse; package repair runs it). The initiator sends
// every request; the responder keeps the session's state between them under its ID. A
// node that predates the method answers with the transport's unknown method error.
const MethodRepair uint16 = 8

// RepairVersion is the format of RepairRequest and RepairResponse, which carry their own
// version byte.
const RepairVersion byte = 1

// RepairStep is what a RepairRequest asks.
type RepairStep byte

// The steps of a session, in the order the initiator sends them (package repair says what
// each does).
const (
	// RepairOpen starts a session: the range, the tree's shape and what is hashed, and
	// the initiator's root.
	RepairOpen RepairStep = 1
	// RepairDescend gives, for each of a batch of the nodes found differing at one
	// level, the initiator's hashes of the left children in the subtree of Levels levels
	// below it.
	RepairDescend RepairStep = 2
	// RepairLeaves gives the initiator's rows (as LeafEntry) of a batch of differing
	// leaves.
	RepairLeaves RepairStep = 3
	// RepairRows gives rows for the responder to merge.
	RepairRows RepairStep = 4
	// RepairClose ends the session; the responder drops its state.
	RepairClose RepairStep = 5
	// RepairDone tells a replica, outside any session (Session 0), that the range
	// (Start, End] has been repaired with all its replicas: every one held every delete
	// timestamped before Now. It may purge their tombstones from then on.
	RepairDone RepairStep = 6
)

// Bounds of one repair message, checked by the decoders.
const (
	// MaxRepairHashes is the most hashes one RepairDescend carries (512 KiB).
	MaxRepairHashes = 1 << 16
	// MaxRepairEntries is the most leaf entries one RepairLeaves carries.
	MaxRepairEntries = 1 << 16
	// MaxRepairDepth is the deepest tree a session may use: 2^20 leaves.
	MaxRepairDepth = 20
)

// LeafEntry is one row of a leaf as the initiator describes it: its key's hash, its
// row's hash (key and row, both salted by the session) and its newest timestamp.
type LeafEntry struct {
	KeyHash uint32
	RowHash uint64
	Newest  int64
}

// RepairRequest is one step of a session. Which fields a step uses: Open, Start through
// Root but Depth; Descend, Depth, Levels and Hashes; Leaves, Counts and Entries (Counts[i] entries for the i-th leaf
// of the batch); Rows, Rows; Done, Start, End and Now.
type RepairRequest struct {
	Session uint64
	Step    RepairStep

	// Start and End are the token range (Start, End] (ring.Token values).
	Start, End int64
	// Depth is the tree's depth: 2^Depth leaves of equal token width (Descend; Open
	// carries it too, and the initiator leaves it 0: the depth is chosen once both
	// sides' row counts are known).
	Depth uint8
	// Levels is how many levels one Descend goes down (1 to Depth).
	Levels uint8
	// Salt seeds every hash of the session; Now (microseconds) is the time at which
	// both sides view rows (expired cells as tombstones), and Grace (microseconds) the
	// age past which tombstones are left out of the hashes.
	Salt       uint64
	Now, Grace int64
	// Root is the initiator's root hash.
	Root uint64

	Hashes  []uint64
	Counts  []uint32
	Entries []LeafEntry
	// Rows carry client keys (not engine keys).
	Rows []row.Mutation
}

// RepairResponse answers a step. Differ holds one bit per question: for Open, whether
// the roots differ; for Descend, 2^Levels per node (the nodes Levels below it, left to
// right, set for those that differ); for Leaves,
// one per entry, set when the responder wants the initiator's row. Rows are rows for the
// initiator to merge: for Leaves, those the responder gives; for Rows, the merges it
// sends back. Held is, for Open, the rows the responder's tree holds.
type RepairResponse struct {
	Differ []bool
	Rows   []row.Mutation
	Held   int64
}

// AppendRepairRequest appends m's encoding to dst.
func AppendRepairRequest(dst []byte, m *RepairRequest) []byte {
	dst = append(dst, RepairVersion, byte(m.Step))
	dst = binary.AppendUvarint(dst, m.Session)
	switch m.Step {
	case RepairOpen:
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Start))
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.End))
		dst = append(dst, m.Depth)
		dst = binary.BigEndian.AppendUint64(dst, m.Salt)
		dst = binary.AppendVarint(dst, m.Now)
		dst = binary.AppendVarint(dst, m.Grace)
		dst = binary.BigEndian.AppendUint64(dst, m.Root)
	case RepairDescend:
		dst = append(dst, m.Depth, m.Levels)
		dst = binary.AppendUvarint(dst, uint64(len(m.Hashes)))
		for _, h := range m.Hashes {
			dst = binary.BigEndian.AppendUint64(dst, h)
		}
	case RepairLeaves:
		dst = binary.AppendUvarint(dst, uint64(len(m.Counts)))
		for _, c := range m.Counts {
			dst = binary.AppendUvarint(dst, uint64(c))
		}
		for _, e := range m.Entries {
			dst = binary.BigEndian.AppendUint32(dst, e.KeyHash)
			dst = binary.BigEndian.AppendUint64(dst, e.RowHash)
			dst = binary.AppendVarint(dst, e.Newest)
		}
	case RepairRows:
		dst = appendMutations(dst, m.Rows)
	case RepairDone:
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Start))
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.End))
		dst = binary.AppendVarint(dst, m.Now)
	}
	return dst
}

// DecodeRepairRequest parses a RepairRequest; keys and rows alias b.
func DecodeRepairRequest(b []byte) (RepairRequest, error) {
	d, err := newRepairDecoder(b)
	if err != nil {
		return RepairRequest{}, err
	}
	step, err := d.byte()
	if err != nil {
		return RepairRequest{}, err
	}
	m := RepairRequest{Step: RepairStep(step)}
	if m.Session, err = d.uvarint(); err != nil {
		return RepairRequest{}, err
	}
	switch m.Step {
	case RepairOpen:
		var v [5]uint64
		for i, n := range []int{8, 8, 1, 8} {
			if v[i], err = d.fixed(n); err != nil {
				return RepairRequest{}, err
			}
		}
		m.Start, m.End, m.Depth, m.Salt = int64(v[0]), int64(v[1]), uint8(v[2]), v[3]
		if m.Depth > MaxRepairDepth {
			return RepairRequest{}, fmt.Errorf("%w: repair tree depth %d (limit %d)", ErrCorrupt, m.Depth, MaxRepairDepth)
		}
		if m.Now, err = d.varint(); err != nil {
			return RepairRequest{}, err
		}
		if m.Grace, err = d.varint(); err != nil {
			return RepairRequest{}, err
		}
		if m.Root, err = d.fixed(8); err != nil {
			return RepairRequest{}, err
		}
	case RepairDescend:
		depth, err := d.byte()
		if err != nil {
			return RepairRequest{}, err
		}
		if m.Depth = depth; m.Depth > MaxRepairDepth {
			return RepairRequest{}, fmt.Errorf("%w: repair tree depth %d (limit %d)", ErrCorrupt, m.Depth, MaxRepairDepth)
		}
		if m.Levels, err = d.byte(); err != nil {
			return RepairRequest{}, err
		}
		if m.Levels == 0 || m.Levels > m.Depth {
			return RepairRequest{}, fmt.Errorf("%w: repair descent of %d levels in a tree of depth %d", ErrCorrupt, m.Levels, m.Depth)
		}
		n, err := d.count(MaxRepairHashes)
		if err != nil {
			return RepairRequest{}, err
		}
		if len(d.buf) < 8*n {
			return RepairRequest{}, fmt.Errorf("%w: %d hashes announced, %d bytes left", ErrCorrupt, n, len(d.buf))
		}
		m.Hashes = make([]uint64, n)
		for i := range m.Hashes {
			m.Hashes[i], _ = d.fixed(8)
		}
	case RepairLeaves:
		n, err := d.count(MaxRepairEntries)
		if err != nil {
			return RepairRequest{}, err
		}
		m.Counts = make([]uint32, n)
		total := 0
		for i := range m.Counts {
			c, err := d.count(MaxRepairEntries - total)
			if err != nil {
				return RepairRequest{}, err
			}
			m.Counts[i] = uint32(c)
			total += c
		}
		m.Entries = make([]LeafEntry, total)
		for i := range m.Entries {
			kh, err := d.fixed(4)
			if err != nil {
				return RepairRequest{}, err
			}
			rh, err := d.fixed(8)
			if err != nil {
				return RepairRequest{}, err
			}
			nw, err := d.varint()
			if err != nil {
				return RepairRequest{}, err
			}
			m.Entries[i] = LeafEntry{KeyHash: uint32(kh), RowHash: rh, Newest: nw}
		}
	case RepairRows:
		if m.Rows, err = d.mutations(); err != nil {
			return RepairRequest{}, err
		}
	case RepairClose:
	case RepairDone:
		var se [2]uint64
		for i := range se {
			if se[i], err = d.fixed(8); err != nil {
				return RepairRequest{}, err
			}
		}
		m.Start, m.End = int64(se[0]), int64(se[1])
		if m.Now, err = d.varint(); err != nil {
			return RepairRequest{}, err
		}
	default:
		return RepairRequest{}, fmt.Errorf("%w: repair step %d", ErrCorrupt, step)
	}
	return m, d.end()
}

// AppendRepairResponse appends m's encoding to dst.
func AppendRepairResponse(dst []byte, m *RepairResponse) []byte {
	dst = append(dst, RepairVersion)
	dst = binary.AppendUvarint(dst, uint64(len(m.Differ)))
	var cur byte
	for i, b := range m.Differ {
		if b {
			cur |= 1 << (i % 8)
		}
		if i%8 == 7 || i == len(m.Differ)-1 {
			dst = append(dst, cur)
			cur = 0
		}
	}
	dst = appendMutations(dst, m.Rows)
	return binary.AppendVarint(dst, m.Held)
}

// DecodeRepairResponse parses a RepairResponse; keys and rows alias b.
func DecodeRepairResponse(b []byte) (RepairResponse, error) {
	d, err := newRepairDecoder(b)
	if err != nil {
		return RepairResponse{}, err
	}
	n, err := d.count(2 * MaxRepairHashes)
	if err != nil {
		return RepairResponse{}, err
	}
	if len(d.buf) < (n+7)/8 {
		return RepairResponse{}, fmt.Errorf("%w: %d bits announced, %d bytes left", ErrCorrupt, n, len(d.buf))
	}
	var m RepairResponse
	if n > 0 {
		m.Differ = make([]bool, n)
		for i := range m.Differ {
			m.Differ[i] = d.buf[i/8]&(1<<(i%8)) != 0
		}
		d.buf = d.buf[(n+7)/8:]
	}
	if m.Rows, err = d.mutations(); err != nil {
		return RepairResponse{}, err
	}
	if m.Held, err = d.varint(); err != nil {
		return RepairResponse{}, err
	}
	return m, d.end()
}

// appendMutations appends a count and that many keys and rows (decoder.mutations reads
// them back).
func appendMutations(dst []byte, ms []row.Mutation) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ms)))
	var enc []byte
	for i := range ms {
		mu := &ms[i]
		dst = binary.AppendUvarint(dst, uint64(len(mu.Key)))
		dst = append(dst, mu.Key...)
		enc = row.AppendEncode(enc[:0], &mu.Row)
		dst = binary.AppendUvarint(dst, uint64(len(enc)))
		dst = append(dst, enc...)
	}
	return dst
}

func newRepairDecoder(b []byte) (*decoder, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != RepairVersion {
		return nil, fmt.Errorf("%w %d of a repair message (this node speaks %d)", ErrVersion, b[0], RepairVersion)
	}
	return &decoder{buf: b[1:]}, nil
}

// fixed reads an n-byte big-endian integer.
func (d *decoder) fixed(n int) (uint64, error) {
	if len(d.buf) < n {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	var v uint64
	for _, c := range d.buf[:n] {
		v = v<<8 | uint64(c)
	}
	d.buf = d.buf[n:]
	return v, nil
}

func (d *decoder) varint() (int64, error) {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
	}
	d.buf = d.buf[n:]
	return v, nil
}
