package repair

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Shape is a tree's token range, (Start, End] as a ring range (wrapping past MaxToken
// when Start >= End; Start == End is the whole ring), cut into 2^Depth leaves of equal
// token width. Both sides of a session build their trees with the same Shape, so that
// node i covers the same tokens on both.
type Shape struct {
	Start, End ring.Token
	Depth      int
}

// Leaves returns the number of leaves, 2^Depth.
func (s Shape) Leaves() int { return 1 << s.Depth }

// Contains reports whether token t lies in (Start, End].
func (s Shape) Contains(t ring.Token) bool {
	if s.Start == s.End {
		return true
	}
	return uint64(t-s.Start-1) < uint64(s.End-s.Start)
}

// Intervals returns the range's tokens as inclusive intervals [lo, hi] of the token
// line: one, or two when the range wraps past MaxToken.
func (s Shape) Intervals() [][2]ring.Token {
	switch {
	case s.Start == s.End:
		return [][2]ring.Token{{ring.MinToken, ring.MaxToken}}
	case s.Start < s.End:
		return [][2]ring.Token{{s.Start + 1, s.End}}
	}
	out := [][2]ring.Token{{ring.MinToken, s.End}}
	if s.Start != ring.MaxToken {
		out = append(out, [2]ring.Token{s.Start + 1, ring.MaxToken})
	}
	return out
}

// Intersect returns the ring ranges that lie in both s and o (Depth left 0).
func (s Shape) Intersect(o Shape) []Shape {
	var out []Shape
	for _, x := range s.Intervals() {
		for _, y := range o.Intervals() {
			if lo, hi := max(x[0], y[0]), min(x[1], y[1]); lo <= hi {
				out = append(out, Shape{Start: lo - 1, End: hi}) // lo-1 wraps at MinToken, as the ring does
			}
		}
	}
	return out
}

// offset returns t's position in the range, 0 for the first token after Start.
func (s Shape) offset(t ring.Token) uint64 { return uint64(t - s.Start - 1) }

// leafOf returns the leaf of a token at offset off at depth d: floor(off × 2^d / width).
func (s Shape) leafOf(off uint64, d int) int {
	if d == 0 {
		return 0
	}
	if s.Start == s.End { // width 2^64
		return int(off >> (64 - d))
	}
	hi, lo := bits.Mul64(off, 1<<d)
	q, _ := bits.Div64(hi, lo, uint64(s.End-s.Start)) // off < width, so hi < width
	return int(q)
}

// View is what both sides of a session hash of a row, so that two replicas holding the
// same data hash the same thing whatever their engines and whenever their compactions
// ran: the row as read at Now (expired cells as tombstones, engine.ReadView's rule),
// without the tombstones older than Now - Grace (which an engine may already have
// purged, row.Purge's rule). A row left empty is not hashed at all, as if absent. Salt
// seeds every hash, so that two sessions' hashes are independent: a collision that hid
// a difference in one session does not hide it in the next.
type View struct {
	Salt       uint64
	Now, Grace int64
}

// entry is one hashed row of a tree: 24 bytes a row, and no key (a session that must
// send a row finds it again by scanning its leaf's range, see Tree.rowsOf).
type entry struct {
	leaf    uint32 // the row's leaf at MaxDepth; at depth d, leaf >> (MaxDepth - d)
	keyHash uint32
	rowHash uint64
	newest  int64
}

// Builder hashes a replica's rows of one range into a Tree. Not safe for concurrent use.
type Builder struct {
	shape   Shape
	view    View
	entries []entry
	cells   []row.Cell
	enc     []byte
	digest  *xxhash.Digest
	salt    [8]byte
}

// NewBuilder returns a builder of trees of shape's range (its Depth is set later, by
// Tree) hashing rows as v says.
func NewBuilder(shape Shape, v View) *Builder {
	b := &Builder{shape: shape, view: v, digest: xxhash.New()}
	binary.LittleEndian.PutUint64(b.salt[:], v.Salt)
	return b
}

// Add hashes the row stored under the engine key ekey (ring.EngineKey). Rows may come
// in any order. It returns an error for a key whose token is outside the range or too
// short to hold one; the builder keeps neither ekey nor r.
func (b *Builder) Add(ekey []byte, r row.Row) error {
	t, _, err := ring.SplitEngineKey(ekey)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if !b.shape.Contains(t) {
		return fmt.Errorf("repair: key of token %d outside the range (%d, %d]", t, b.shape.Start, b.shape.End)
	}
	v, ok := b.viewOf(r)
	if !ok {
		return nil
	}
	b.enc = row.AppendEncode(b.enc[:0], &v)
	kh := b.keyHash(ekey)
	b.digest.Write(b.enc)
	b.entries = append(b.entries, entry{
		leaf: uint32(b.shape.leafOf(b.shape.offset(t), MaxDepth)), keyHash: kh, rowHash: b.digest.Sum64(), newest: v.Newest(),
	})
	return nil
}

// keyHash returns ekey's salted hash, leaving the digest holding the salt and the key.
func (b *Builder) keyHash(ekey []byte) uint32 {
	b.digest.Reset()
	b.digest.Write(b.salt[:])
	b.digest.Write(ekey)
	return uint32(b.digest.Sum64())
}

// viewOf returns what is hashed of r (see View), and false when that is nothing. The
// result may share memory with r and with the builder's buffers.
func (b *Builder) viewOf(r row.Row) (row.Row, bool) {
	horizon := b.view.Now - b.view.Grace
	out := row.Row{Deleted: r.Deleted}
	if out.Deleted != 0 && out.Deleted < horizon {
		out.Deleted = 0
	}
	b.cells = b.cells[:0]
	for _, c := range r.Cells {
		if c.ExpiresAt != 0 && b.view.Now >= c.ExpiresAt {
			c = row.Cell{Name: c.Name, Timestamp: c.Timestamp, Tombstone: true}
		}
		if c.Tombstone && c.Timestamp < horizon {
			continue
		}
		b.cells = append(b.cells, c)
	}
	out.Cells = b.cells
	return out, !out.IsEmpty()
}

// Rows returns how many rows the builder has hashed (rows left empty by the view not
// counted).
func (b *Builder) Rows() int { return len(b.entries) }

// Root returns the root hash of what was added: the XOR of every row's hash, whatever
// the depth.
func (b *Builder) Root() uint64 {
	var h uint64
	for i := range b.entries {
		h ^= b.entries[i].rowHash
	}
	return h
}

// Tree returns the tree of depth d (0 <= d <= MaxDepth) over what was added. The builder
// must not be used afterwards.
func (b *Builder) Tree(d int) *Tree {
	shape := b.shape
	shape.Depth = d
	byLeaf := func(x, y entry) int { return int(x.leaf) - int(y.leaf) }
	if !slices.IsSortedFunc(b.entries, byLeaf) { // a scan adds them in order
		slices.SortStableFunc(b.entries, byLeaf)
	}
	n := shape.Leaves()
	t := &Tree{shape: shape, nodes: make([]uint64, 2*n), starts: make([]int32, n+1), entries: b.entries, builder: b}
	leaf := 0
	for i := range b.entries {
		l := int(b.entries[i].leaf >> (MaxDepth - d))
		for leaf < l {
			leaf++
			t.starts[leaf] = int32(i)
		}
		t.nodes[n+l] ^= b.entries[i].rowHash
	}
	for leaf < n {
		leaf++
		t.starts[leaf] = int32(len(b.entries))
	}
	for i := n - 1; i >= 1; i-- {
		t.nodes[i] = t.nodes[2*i] ^ t.nodes[2*i+1]
	}
	b.entries = nil
	return t
}

// tokensOf returns the ring range (lo, hi] of leaf j at depth d: the tokens whose leaf
// it is.
func (s Shape) tokensOf(j, d int) (lo, hi ring.Token) {
	// The first offset of leaf j is the smallest off with floor(off × 2^d / width) >= j,
	// ceil(j × width / 2^d); with width 2^64 (the whole ring) that is j << (64 - d).
	first := func(j int) uint64 {
		if s.Start == s.End {
			if d == 0 {
				return 0
			}
			return uint64(j) << (64 - d)
		}
		hi, lo := bits.Mul64(uint64(j), uint64(s.End-s.Start))
		lo, carry := bits.Add64(lo, 1<<d-1, 0)
		hi += carry
		return hi<<(64-d) | lo>>d // d < 64; a d of 0 leaves hi at 0
	}
	lo = s.Start + ring.Token(first(j))
	if j+1 == 1<<d {
		return lo, s.End
	}
	return lo, s.Start + ring.Token(first(j+1))
}

// Tree is a hash tree over one replica's rows of a range: a complete binary tree in heap
// order (node 1 the root, node i's children 2i and 2i+1, leaf j at 2^Depth + j), each
// leaf the XOR of its rows' hashes and each inner node the XOR of its children. XOR makes
// a node's hash independent of the order rows were added in, lets a parent and one child
// give the other child, and would let a tree follow writes without a scan (Riak's TicTac
// trees; see docs/design/repair.md for why kura builds them by a scan). Not safe for
// concurrent use.
type Tree struct {
	shape   Shape
	nodes   []uint64
	starts  []int32
	entries []entry
	builder *Builder // its hashing of keys, for rowsOf
}

// Shape returns the tree's shape.
func (t *Tree) Shape() Shape { return t.shape }

// Hash returns node i's hash (1 <= i < 2^(Depth+1)).
func (t *Tree) Hash(i int) uint64 { return t.nodes[i] }

// Root returns the root's hash.
func (t *Tree) Root() uint64 { return t.nodes[1] }

// Rows returns the number of rows hashed.
func (t *Tree) Rows() int { return len(t.entries) }

// leaf returns leaf j's entries.
func (t *Tree) leaf(j int) []entry { return t.entries[t.starts[j]:t.starts[j+1]] }

// rowsOf calls fn for each row stored in st whose leaf is one of picks' and whose key
// hashes to one its pick asks for. picks are in leaf order; it scans once from the first
// pick's leaf to the last's, so the caller groups picks whose leaves lie close together
// (see pickRows). A key whose hash collides with one asked for is returned too, which
// costs a row sent for nothing and changes nothing (rows merge).
func (t *Tree) rowsOf(st Store, picks []pick, fn func(ekey []byte, r row.Row) error) error {
	d := t.shape.Depth
	lo, _ := t.shape.tokensOf(picks[0].leaf, d)
	_, hi := t.shape.tokensOf(picks[len(picks)-1].leaf, d)
	for _, kr := range ring.EngineKeyRanges(lo, hi) {
		// Leaves rise along each key range; a range that wraps past MaxToken is two key
		// ranges, the second holding the first leaves.
		next := 0
		err := st.Scan(kr.Lo, kr.Hi, func(ekey []byte, r row.Row) error {
			tok, _, err := ring.SplitEngineKey(ekey)
			if err != nil {
				return err
			}
			leaf := t.shape.leafOf(t.shape.offset(tok), d)
			for next < len(picks) && picks[next].leaf < leaf {
				next++
			}
			if next < len(picks) && picks[next].leaf == leaf && slices.Contains(picks[next].hashes, t.builder.keyHash(ekey)) {
				return fn(ekey, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// MaxDepth is the deepest tree: 2^20 leaves, 16 MiB of hashes.
const MaxDepth = 20

// LeafRows is the number of rows a leaf holds on average at the depth DepthFor chooses.
// Fewer rows a leaf make the leaf lists of a session cheaper and its descent longer; with
// 8-byte hashes, two is the cheapest for a few differing rows among many (see
// docs/design/repair.md).
const LeafRows = 2

// DepthFor returns the depth whose leaves hold about LeafRows of rows rows.
func DepthFor(rows int) int {
	d := 0
	for d < MaxDepth && rows > LeafRows<<d {
		d++
	}
	return d
}
