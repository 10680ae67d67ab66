package meta

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// EntryVersion is the version byte every encoded entry starts with. Entries live on disk
// in the log for as long as it is kept: a new version adds a decoder, and never changes
// what an old version's bytes mean.
//
// Version 2 adds StartChange.Handoffs (after Level). An entry is written in the lowest
// version that can carry it, so a cluster whose nodes run builds that read only version 1
// keeps working until a change hands tokens off (and the planner hands none off until
// every member announces it reads version 2: cluster.Member.MetaVersion).
//
// Version 3 adds SetACL (the cluster's users); a node proposes one only once every member
// announces it reads version 3.
const (
	EntryVersion    = 3
	entryVersionOne = 1
	// EntryVersionHandoffs and EntryVersionUsers are the versions that first carry
	// StartChange.Handoffs and SetACL: what every member must announce reading before a
	// node proposes them.
	EntryVersionHandoffs = 2
	EntryVersionUsers    = 3
)

// MaxACLBytes bounds the encoded users of a SetACL, and so of a State.
const MaxACLBytes = 1 << 20

// Limits on what a decoder accepts: an entry comes from the log, but a corrupt or
// hostile one must be an error, not a huge allocation.
const (
	maxString = 1 << 10 // IDs, hosts, racks, addresses, strategy names
	maxItems  = 1 << 20 // any list: members, tokens, transfers, ranges
)

// ErrCorrupt is wrapped by every Decode error.
var ErrCorrupt = errors.New("meta: corrupt entry")

// Encode returns e's bytes: EntryVersion, the entry's kind, then its fields.
func Encode(e Entry) []byte {
	version := byte(entryVersionOne)
	if sc, ok := e.(StartChange); ok && len(sc.Handoffs) > 0 {
		version = EntryVersionHandoffs
	}
	if _, ok := e.(SetACL); ok {
		version = EntryVersionUsers
	}
	b := []byte{version, byte(e.kind())}
	switch e := e.(type) {
	case Bootstrap:
		b = appendString(b, e.Strategy)
		b = binary.AppendUvarint(b, uint64(e.RF))
		b = binary.AppendUvarint(b, uint64(len(e.Members)))
		for _, m := range e.Members {
			b = appendMember(b, m)
		}
	case Register:
		b = appendMember(b, Member{ID: e.ID, Host: e.Host, Rack: e.Rack, Role: e.Role, Addr: e.Addr})
	case StartChange:
		b = binary.AppendUvarint(b, e.ID)
		b = binary.AppendUvarint(b, e.Epoch)
		b = binary.AppendUvarint(b, uint64(len(e.Joins)))
		for _, j := range e.Joins {
			b = appendString(b, string(j.ID))
			b = appendTokens(b, j.Tokens)
		}
		b = appendIDs(b, e.Leaves)
		b = appendIDs(b, e.Removes)
		b = binary.AppendUvarint(b, uint64(len(e.Replaces)))
		for _, r := range e.Replaces {
			b = appendString(appendString(b, string(r.Old)), string(r.New))
		}
		b = appendTransfers(b, e.Transfers)
		b = appendIDs(b, e.Down)
		b = append(b, byte(e.Level))
		if version >= 2 {
			b = binary.AppendUvarint(b, uint64(len(e.Handoffs)))
			for _, h := range e.Handoffs {
				b = appendString(binary.AppendVarint(b, int64(h.Token)), string(h.To))
			}
		}
	case RangesMoved:
		b = binary.AppendUvarint(b, e.Change)
		b = binary.AppendUvarint(b, uint64(len(e.Ranges)))
		for _, r := range e.Ranges {
			b = appendRange(b, r)
		}
	case FinishChange:
		b = binary.AppendUvarint(b, e.Change)
	case CancelChange:
		b = binary.AppendUvarint(b, e.Change)
		b = appendTransfers(b, e.Transfers)
		b = appendIDs(b, e.Down)
	case SetVoters:
		b = appendIDs(b, e.Voters)
	case TransfersDone:
		b = binary.AppendUvarint(b, e.Change)
		b = appendInts(b, e.Transfers)
	case SetACL:
		b = binary.AppendUvarint(b, e.Base)
		b = appendBytes(b, e.Users)
	}
	return b
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func appendIDs(b []byte, ids []ring.NodeID) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendString(b, string(id))
	}
	return b
}

func appendInts(b []byte, vs []int) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

func appendTokens(b []byte, ts []ring.Token) []byte {
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = binary.AppendVarint(b, int64(t))
	}
	return b
}

func appendMember(b []byte, m Member) []byte {
	b = appendString(b, string(m.ID))
	b = appendString(b, m.Host)
	b = appendString(b, m.Rack)
	b = append(b, byte(m.Role), byte(m.State))
	b = appendString(b, m.Addr)
	return appendTokens(b, m.Tokens)
}

func appendRange(b []byte, r move.Range) []byte {
	return binary.AppendVarint(binary.AppendVarint(b, int64(r.Start)), int64(r.End))
}

func appendTransfers(b []byte, ts []move.Transfer) []byte {
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = appendRange(b, t.Range)
		b = appendString(b, string(t.Source))
		b = appendString(b, string(t.Destination))
		b = binary.AppendVarint(b, t.Bytes)
		b = append(b, b2byte(t.Leaving))
	}
	return b
}

func b2byte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// Decode returns the entry encoded in b. It never panics, whatever b holds; an error
// wraps ErrCorrupt. The entry's slices do not alias b.
func Decode(b []byte) (Entry, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	if b[0] < entryVersionOne || b[0] > EntryVersion {
		return nil, fmt.Errorf("%w: version %d (this build reads %d to %d)", ErrCorrupt, b[0], entryVersionOne, EntryVersion)
	}
	d := &decoder{b: b[2:], version: b[0]}
	var e Entry
	switch kind(b[1]) {
	case kindBootstrap:
		v := Bootstrap{Strategy: d.string(), RF: int(d.uvarint(maxRF))}
		for range d.count() {
			v.Members = append(v.Members, d.member())
		}
		e = v
	case kindRegister:
		m := d.member()
		e = Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: m.Addr}
		if m.State != 0 || len(m.Tokens) > 0 {
			d.fail("a registration with a state or tokens")
		}
	case kindStartChange:
		e = d.startChange()
	case kindRangesMoved:
		v := RangesMoved{Change: d.uvarint(1<<64 - 1)}
		for range d.count() {
			v.Ranges = append(v.Ranges, d.rng())
		}
		e = v
	case kindFinishChange:
		e = FinishChange{Change: d.uvarint(1<<64 - 1)}
	case kindCancelChange:
		e = CancelChange{Change: d.uvarint(1<<64 - 1), Transfers: d.transfers(), Down: d.ids()}
	case kindSetVoters:
		e = SetVoters{Voters: d.ids()}
	case kindTransfersDone:
		e = TransfersDone{Change: d.uvarint(1<<64 - 1), Transfers: d.ints()}
	case kindSetACL:
		if d.version < 3 {
			d.fail("SetACL in an entry of version below 3")
		}
		e = SetACL{Base: d.uvarint(1<<64 - 1), Users: d.bytes(MaxACLBytes)}
	default:
		return nil, fmt.Errorf("%w: unknown entry kind %d", ErrCorrupt, b[1])
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return e, nil
}

func (d *decoder) startChange() StartChange {
	v := StartChange{ID: d.uvarint(1<<64 - 1), Epoch: d.uvarint(1<<64 - 1)}
	for range d.count() {
		v.Joins = append(v.Joins, Join{ID: ring.NodeID(d.string()), Tokens: d.tokens()})
	}
	v.Leaves, v.Removes = d.ids(), d.ids()
	for range d.count() {
		v.Replaces = append(v.Replaces, Replacement{Old: ring.NodeID(d.string()), New: ring.NodeID(d.string())})
	}
	v.Transfers, v.Down = d.transfers(), d.ids()
	v.Level = coord.Level(d.byte())
	if d.version >= 2 {
		for range d.count() {
			v.Handoffs = append(v.Handoffs, move.Handoff{Token: ring.Token(d.varint()), To: ring.NodeID(d.string())})
		}
	}
	return v
}

// decoder reads fields from b; after the first error every read returns a zero value.
type decoder struct {
	b       []byte
	err     error
	version byte // of the encoded entry or State
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) uvarint(limit uint64) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong integer")
		return 0
	}
	if v > limit {
		d.fail(fmt.Sprintf("%d exceeds %d", v, limit))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a list's length: at most maxItems, and at most the bytes left (every item
// takes one at least), so a corrupt length cannot make a decoder allocate much.
func (d *decoder) count() int {
	n := d.uvarint(maxItems)
	if n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("%d items in %d bytes", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.uvarint(maxString)
	if n > uint64(len(d.b)) {
		d.fail("truncated string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// bytes reads a length-prefixed byte string of at most limit bytes, copied.
func (d *decoder) bytes(limit uint64) []byte {
	n := d.uvarint(limit)
	if n > uint64(len(d.b)) {
		d.fail("truncated bytes")
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

func (d *decoder) ids() []ring.NodeID {
	var out []ring.NodeID
	for range d.count() {
		out = append(out, ring.NodeID(d.string()))
	}
	return out
}

func (d *decoder) ints() []int {
	var out []int
	for range d.count() {
		out = append(out, int(d.uvarint(maxItems)))
	}
	return out
}

func (d *decoder) tokens() []ring.Token {
	var out []ring.Token
	for range d.count() {
		out = append(out, ring.Token(d.varint()))
	}
	return out
}

func (d *decoder) member() Member {
	m := Member{ID: ring.NodeID(d.string()), Host: d.string(), Rack: d.string()}
	m.Role, m.State = ring.Role(d.byte()), MemberState(d.byte())
	m.Addr, m.Tokens = d.string(), d.tokens()
	return m
}

func (d *decoder) flag() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("a flag other than 0 or 1")
	return false
}

func (d *decoder) rng() move.Range {
	return move.Range{Start: ring.Token(d.varint()), End: ring.Token(d.varint())}
}

func (d *decoder) transfers() []move.Transfer {
	var out []move.Transfer
	for range d.count() {
		out = append(out, move.Transfer{Range: d.rng(), Source: ring.NodeID(d.string()),
			Destination: ring.NodeID(d.string()), Bytes: d.varint(), Leaving: d.flag()})
	}
	return out
}
