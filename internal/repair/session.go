package repair

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// Store is a replica's rows as a session reads and writes them, by engine key
// (ring.EngineKey). engine.Scanner is the Store of an engine.Engine.
type Store interface {
	// Scan calls fn for every row stored with lo <= ekey < hi (nil: unbounded), as
	// engine.Engine.NewIterator returns them; fn must not keep ekey or r.
	Scan(lo, hi []byte, fn func(ekey []byte, r row.Row) error) error
	// Get returns the row stored under ekey, as engine.Engine.Get does.
	Get(ekey []byte) (row.Row, bool, error)
	// Apply merges rows into the store (row.Merge), as engine.Engine.Apply does; the
	// mutations' keys are engine keys.
	Apply(ms []row.Mutation) error
}

// Peer carries one encoded request to the responder and returns its encoded response.
type Peer func(req []byte) ([]byte, error)

// Errors of a session.
var (
	// ErrProtocol is a peer's answer that does not fit the session: a wrong number of
	// bits, a row outside the range.
	ErrProtocol = errors.New("repair: protocol error")
	// ErrNoSession is the responder's answer to a step of a session it does not hold
	// (never opened, closed, or evicted).
	ErrNoSession = errors.New("repair: no such session")
)

// Budgets of one step, which keep every message far below the transport's 16 MiB.
const (
	// leafBatchEntries bounds the entries of one RepairLeaves, and leafBatchLeaves its
	// leaves.
	leafBatchEntries = 4096
	leafBatchLeaves  = 1024
	// rowBatchBytes bounds the row bytes of one RepairRows and of one response's rows
	// (one row alone may pass it).
	rowBatchBytes = 4 << 20
)

// Stats describe a session, from the initiator's side.
type Stats struct {
	// Rows and PeerRows are the rows each side hashed; Depth the tree's depth (0 when
	// the roots matched).
	Rows, PeerRows int64
	Depth          int
	// Messages counts the requests (each has one response); BytesSent and
	// BytesReceived are their encoded payloads, without the transport's frame headers.
	Messages                 int64
	BytesSent, BytesReceived int64
	// NodesDiffering counts the tree nodes found to differ, leaves included, and
	// LeavesDiffering the leaves among them.
	NodesDiffering, LeavesDiffering int64
	// RowsSent and RowsReceived count the rows the initiator sent and received, merges
	// sent back included.
	RowsSent, RowsReceived int64
	// RowsDiffering counts the keys whose rows differed (sent one way or both), and
	// BytesDiffering the encoded size of the newer version of each: the merge of both
	// sides' rows, as the initiator holds it at the end.
	RowsDiffering, BytesDiffering int64
}

// Add adds o's counts to s (Depth is the larger).
func (s *Stats) Add(o Stats) {
	s.Rows += o.Rows
	s.PeerRows += o.PeerRows
	s.Depth = max(s.Depth, o.Depth)
	s.Messages += o.Messages
	s.BytesSent += o.BytesSent
	s.BytesReceived += o.BytesReceived
	s.NodesDiffering += o.NodesDiffering
	s.LeavesDiffering += o.LeavesDiffering
	s.RowsSent += o.RowsSent
	s.RowsReceived += o.RowsReceived
	s.RowsDiffering += o.RowsDiffering
	s.BytesDiffering += o.BytesDiffering
}

// Done tells a replica over peer that the range (start, end] has been repaired with all
// its replicas as of at (Unix microseconds): every replica held every delete
// timestamped before at (Responder.Repaired).
func Done(peer Peer, start, end ring.Token, at int64) error {
	b, err := peer(wire.AppendRepairRequest(nil, &wire.RepairRequest{Step: wire.RepairDone, Start: int64(start), End: int64(end), Now: at}))
	if err != nil {
		return err
	}
	_, err = wire.DecodeRepairResponse(b)
	return err
}

// scanRange feeds every row of the shape's range in st to b.
func scanRange(st Store, shape Shape, b *Builder) error {
	for _, kr := range ring.EngineKeyRanges(shape.Start, shape.End) {
		if err := st.Scan(kr.Lo, kr.Hi, b.Add); err != nil {
			return err
		}
	}
	return nil
}

// Run repairs one range between the local store (the initiator) and a peer's (the
// responder, over peer): afterwards both hold, for every row of the range, the merge of
// what both held when their trees were built (rows written since may be newer still).
// session names the session at the responder and must be unique among the sessions it
// holds. It is synchronous and makes no decision of its own beyond the protocol's: every
// side effect goes through st and peer.
func Run(st Store, peer Peer, session uint64, start, end ring.Token, v View) (Stats, error) {
	in := &initiator{st: st, peer: peer, session: session, differing: map[string]int{}}
	err := in.run(Shape{Start: start, End: end}, v)
	if err == nil {
		for _, n := range in.differing {
			in.stats.BytesDiffering += int64(n)
		}
		in.stats.RowsDiffering = int64(len(in.differing))
	}
	if in.opened {
		if _, cerr := in.call(&wire.RepairRequest{Step: wire.RepairClose}); err == nil && cerr != nil {
			err = cerr
		}
	}
	return in.stats, err
}

type initiator struct {
	st      Store
	peer    Peer
	session uint64
	opened  bool
	stats   Stats
	// differing holds, by engine key, the encoded size of the newest version of each
	// row exchanged.
	differing map[string]int
}

func (in *initiator) call(req *wire.RepairRequest) (wire.RepairResponse, error) {
	req.Session = in.session
	payload := wire.AppendRepairRequest(nil, req)
	in.stats.Messages++
	in.stats.BytesSent += int64(len(payload))
	b, err := in.peer(payload)
	if err != nil {
		return wire.RepairResponse{}, err
	}
	in.stats.BytesReceived += int64(len(b))
	return wire.DecodeRepairResponse(b)
}

func (in *initiator) run(shape Shape, v View) error {
	b := NewBuilder(shape, v)
	if err := scanRange(in.st, shape, b); err != nil {
		return err
	}
	in.stats.Rows = int64(b.Rows())
	resp, err := in.call(&wire.RepairRequest{
		Step: wire.RepairOpen, Start: int64(shape.Start), End: int64(shape.End),
		Salt: v.Salt, Now: v.Now, Grace: v.Grace, Root: b.Root(),
	})
	if err != nil {
		return err
	}
	in.stats.PeerRows = resp.Held
	if len(resp.Differ) != 1 {
		return fmt.Errorf("%w: open answered with %d bits", ErrProtocol, len(resp.Differ))
	}
	if !resp.Differ[0] { // the responder holds no session
		return nil
	}
	in.opened = true
	d := DepthFor(int(max(in.stats.Rows, in.stats.PeerRows)))
	t := b.Tree(d)
	in.stats.Depth = d
	in.stats.NodesDiffering = 1
	suspects := []int{1}
	for level := 0; level < d; {
		k := descentLevels(len(suspects), d-level)
		per := 1<<k - 1
		var next []int
		for lo := 0; lo < len(suspects); {
			hi := min(lo+max(1, wire.MaxRepairHashes/per), len(suspects))
			batch := suspects[lo:hi]
			lo = hi
			hashes := make([]uint64, 0, len(batch)*per)
			for _, s := range batch {
				hashes = appendLefts(hashes, t, s, k)
			}
			resp, err := in.call(&wire.RepairRequest{Step: wire.RepairDescend, Depth: uint8(d), Levels: uint8(k), Hashes: hashes})
			if err != nil {
				return err
			}
			if len(resp.Differ) != len(batch)<<k {
				return fmt.Errorf("%w: %d nodes %d levels down answered with %d bits", ErrProtocol, len(batch), k, len(resp.Differ))
			}
			for i, s := range batch {
				for j := range 1 << k {
					if resp.Differ[i<<k+j] {
						next = append(next, s<<k+j)
					}
				}
			}
		}
		suspects = next
		level += k
		in.stats.NodesDiffering += int64(len(next))
	}
	in.stats.LeavesDiffering = int64(len(suspects))
	n := t.shape.Leaves()
	for lo := 0; lo < len(suspects); {
		var counts []uint32
		var entries []wire.LeafEntry
		hi := lo
		for hi < len(suspects) && hi-lo < leafBatchLeaves {
			es := t.leaf(suspects[hi] - n)
			if hi > lo && len(entries)+len(es) > leafBatchEntries {
				break
			}
			counts = append(counts, uint32(len(es)))
			for i := range es {
				entries = append(entries, wire.LeafEntry{KeyHash: es[i].keyHash, RowHash: es[i].rowHash, Newest: es[i].newest})
			}
			hi++
		}
		batch := suspects[lo:hi]
		lo = hi
		resp, err := in.call(&wire.RepairRequest{Step: wire.RepairLeaves, Counts: counts, Entries: entries})
		if err != nil {
			return err
		}
		if len(resp.Differ) != len(entries) {
			return fmt.Errorf("%w: %d entries answered with %d bits", ErrProtocol, len(entries), len(resp.Differ))
		}
		var want []pick
		off := 0
		for i, c := range counts {
			p := pick{leaf: batch[i] - n}
			for j := range int(c) {
				if resp.Differ[off+j] {
					p.hashes = append(p.hashes, entries[off+j].KeyHash)
				}
			}
			if len(p.hashes) > 0 {
				want = append(want, p)
			}
			off += int(c)
		}
		pushback, err := in.merge(shape, resp.Rows)
		if err != nil {
			return err
		}
		more := resp.Held
		// Send what the responder wants and the merges it lacks, a batch at a time,
		// and take the rest of what it gives with each answer.
		for len(want) > 0 || len(pushback) > 0 || more > 0 {
			var rows []row.Mutation
			size := 0
			for len(pushback) > 0 && (len(rows) == 0 || size < rowBatchBytes) {
				rows = append(rows, pushback[0])
				size += len(pushback[0].Key) + row.EncodedSize(&pushback[0].Row)
				pushback = pushback[1:]
			}
			sent := len(rows) // merges sent back; the wanted rows follow
			for len(want) > 0 && (len(rows) == 0 || size < rowBatchBytes) {
				var err error
				var n int
				if rows, size, n, err = pickRows(in.st, t, want, rows, size); err != nil {
					return err
				}
				want = want[n:]
			}
			for i := sent; i < len(rows); i++ {
				in.note(ring.EngineKey(rows[i].Key), &rows[i].Row)
			}
			in.stats.RowsSent += int64(len(rows))
			resp, err := in.call(&wire.RepairRequest{Step: wire.RepairRows, Rows: rows})
			if err != nil {
				return err
			}
			// The answer holds the merges of rows just sent that the responder held
			// newer cells of, then more of the rows it gives.
			back, err := in.merge(shape, resp.Rows)
			if err != nil {
				return err
			}
			pushback = append(pushback, back...)
			more = resp.Held
		}
	}
	return nil
}

// pick is rows of one leaf, by key hash: what one side asks of the other, or gives it.
type pick struct {
	leaf   int
	hashes []uint32
}

// pickGap is the most leaves between two picks that pickRows reads in one scan: about
// pickGap × LeafRows rows scanned for nothing, against an iterator per pick (a snapshot on
// some engines).
const pickGap = 64

// pickRows appends to rows (of size bytes so far) copies of the rows of the first picks
// as st holds them, with client keys, and returns them, their size, and how many picks
// it took: a run of picks whose leaves lie within pickGap of each other, read in one
// scan.
func pickRows(st Store, t *Tree, picks []pick, rows []row.Mutation, size int) ([]row.Mutation, int, int, error) {
	n := 1
	for n < len(picks) && n < leafBatchLeaves && picks[n].leaf-picks[n-1].leaf <= pickGap {
		n++
	}
	err := t.rowsOf(st, picks[:n], func(ekey []byte, r row.Row) error {
		_, key, err := ring.SplitEngineKey(ekey)
		if err != nil {
			return err
		}
		rows = append(rows, row.Mutation{Key: bytes.Clone(key), Row: r.Clone()})
		size += len(key) + row.EncodedSize(&r)
		return nil
	})
	return rows, size, n, err
}

// roundTripBytes is what one more request and response cost on the wire beyond their
// contents: two frame headers (transport.HeaderSize) and a few bytes of each payload's
// own header.
const roundTripBytes = 2*44 + 8

// descentLevels returns how many levels one Descend of n nodes goes down, at most left:
// the most for which the hashes it adds to one level at a time, if every node had one
// child differing, cost less than the round trips it saves. From one node it goes six
// levels at once; from thirteen or more, one.
func descentLevels(n, left int) int {
	k := 1
	for k < left && n*8*(1<<(k+1)-1-(k+1)) <= k*roundTripBytes {
		k++
	}
	return k
}

// appendLefts appends to dst the hashes of the left children in the k levels below node
// s, level by level, left to right: what a Descend carries of s.
func appendLefts(dst []uint64, t *Tree, s, k int) []uint64 {
	for j := range k {
		for m := range 1 << j {
			dst = append(dst, t.Hash(2*(s<<j+m)))
		}
	}
	return dst
}

// merge applies rows received from the peer (client keys) to the local store and returns
// those whose merge with what the store held differs from what was received: the merges
// to send back.
func (in *initiator) merge(shape Shape, rows []row.Mutation) ([]row.Mutation, error) {
	in.stats.RowsReceived += int64(len(rows))
	back, sizes, err := mergeInto(in.st, shape, rows)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		in.differing[string(ring.EngineKey(rows[i].Key))] = sizes[i]
	}
	return back, nil
}

// note records the size of the newest version of the row of ekey: r, a row sent as the
// newer version.
func (in *initiator) note(ekey []byte, r *row.Row) {
	in.differing[string(ekey)] = len(row.AppendEncode(nil, r))
}

// mergeInto applies rows (client keys) to st and returns, for each whose merge with what
// st held differs from the row received, the merge (the sender lacks part of it), and
// the encoded size of the merge each row leaves in st.
func mergeInto(st Store, shape Shape, rows []row.Mutation) (back []row.Mutation, sizes []int, err error) {
	sizes = make([]int, len(rows))
	ms := make([]row.Mutation, 0, len(rows))
	for i := range rows {
		if err := row.ValidateKey(rows[i].Key); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if err := rows[i].Row.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%w: row of %q: %w", ErrProtocol, rows[i].Key, err)
		}
		if !shape.Contains(ring.TokenOf(rows[i].Key)) {
			return nil, nil, fmt.Errorf("%w: row of %q outside the range", ErrProtocol, rows[i].Key)
		}
		ek := ring.EngineKey(rows[i].Key)
		own, found, err := st.Get(ek)
		if err != nil {
			return nil, nil, err
		}
		received := row.AppendEncode(nil, &rows[i].Row)
		sizes[i] = len(received)
		if found {
			m := row.Merge(own, rows[i].Row)
			if merged := row.AppendEncode(nil, &m); !bytes.Equal(merged, received) {
				back = append(back, row.Mutation{Key: rows[i].Key, Row: m})
				sizes[i] = len(merged)
			}
		}
		ms = append(ms, row.Mutation{Key: ek, Row: rows[i].Row})
	}
	if len(ms) == 0 {
		return nil, sizes, nil
	}
	return back, sizes, st.Apply(ms)
}

// Responder answers the sessions peers open with this replica. Safe for concurrent use;
// each session's steps must come one at a time, as Run sends them.
type Responder struct {
	// Store is this replica's rows.
	Store Store
	// MaxSessions bounds the sessions held at once; opening one more evicts the least
	// recently used (its initiator then gets ErrNoSession). 0 means 64.
	MaxSessions int
	// Repaired, when set, is told of each range a peer reports repaired with all its
	// replicas (Done): the time before which every replica held every delete of it.
	Repaired func(start, end ring.Token, at int64) error

	mu       sync.Mutex
	sessions map[uint64]*responderSession
	clock    uint64 // counts steps, for least-recently-used eviction
}

type responderSession struct {
	mu       sync.Mutex
	shape    Shape
	builder  *Builder
	tree     *Tree
	used     uint64
	suspects []int    // the nodes found differing at the current level
	theirs   []uint64 // the initiator's hash of each suspect
	gives    []pick   // rows still to give
}

// Serve answers one encoded request with an encoded response.
func (r *Responder) Serve(payload []byte) ([]byte, error) {
	req, err := wire.DecodeRepairRequest(payload)
	if err != nil {
		return nil, err
	}
	if req.Step == wire.RepairDone {
		if r.Repaired != nil {
			if err := r.Repaired(ring.Token(req.Start), ring.Token(req.End), req.Now); err != nil {
				return nil, err
			}
		}
		return wire.AppendRepairResponse(nil, &wire.RepairResponse{}), nil
	}
	if req.Step == wire.RepairOpen {
		s, resp, err := r.open(&req)
		if err != nil {
			return nil, err
		}
		if resp.Differ[0] { // equal roots end the session here: no Close comes
			r.hold(req.Session, s)
		}
		return wire.AppendRepairResponse(nil, &resp), nil
	}
	r.mu.Lock()
	s := r.sessions[req.Session]
	if req.Step == wire.RepairClose {
		delete(r.sessions, req.Session)
	} else if s != nil {
		r.clock++
		s.used = r.clock
	}
	r.mu.Unlock()
	if req.Step == wire.RepairClose {
		return wire.AppendRepairResponse(nil, &wire.RepairResponse{}), nil
	}
	if s == nil {
		return nil, fmt.Errorf("%w %d", ErrNoSession, req.Session)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var resp wire.RepairResponse
	switch req.Step {
	case wire.RepairDescend:
		resp, err = s.descend(&req)
	case wire.RepairLeaves:
		resp, err = s.leaves(r.Store, &req)
	case wire.RepairRows:
		resp, err = s.rows(r.Store, &req)
	}
	if err != nil {
		return nil, err
	}
	return wire.AppendRepairResponse(nil, &resp), nil
}

// Sessions returns the number of sessions held.
func (r *Responder) Sessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

func (r *Responder) open(req *wire.RepairRequest) (*responderSession, wire.RepairResponse, error) {
	shape := Shape{Start: ring.Token(req.Start), End: ring.Token(req.End)}
	b := NewBuilder(shape, View{Salt: req.Salt, Now: req.Now, Grace: req.Grace})
	if err := scanRange(r.Store, shape, b); err != nil {
		return nil, wire.RepairResponse{}, err
	}
	root := b.Root()
	s := &responderSession{shape: shape, builder: b, suspects: []int{1}, theirs: []uint64{req.Root}}
	return s, wire.RepairResponse{Differ: []bool{root != req.Root}, Held: int64(b.Rows())}, nil
}

func (r *Responder) hold(id uint64, s *responderSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions == nil {
		r.sessions = map[uint64]*responderSession{}
	}
	limit := r.MaxSessions
	if limit <= 0 {
		limit = 64
	}
	for len(r.sessions) >= limit {
		var oldest uint64
		var used uint64
		first := true
		for k, v := range r.sessions {
			if first || v.used < used {
				oldest, used, first = k, v.used, false
			}
		}
		delete(r.sessions, oldest)
	}
	r.clock++
	s.used = r.clock
	r.sessions[id] = s
}

// descend answers a batch of the initiator's subtrees, one per suspect in order (see
// appendLefts): it rebuilds the initiator's hashes of each subtree from the suspect's
// (each right child is its parent XOR its left) and answers one bit for each node at the
// subtree's bottom, set when it differs here and so does every node above it.
func (s *responderSession) descend(req *wire.RepairRequest) (wire.RepairResponse, error) {
	if s.tree == nil {
		if int(req.Depth) > MaxDepth {
			return wire.RepairResponse{}, fmt.Errorf("%w: depth %d", ErrProtocol, req.Depth)
		}
		s.tree = s.builder.Tree(int(req.Depth))
		s.builder = nil
	}
	k := int(req.Levels)
	per := 1<<k - 1
	if int(req.Depth) != s.tree.shape.Depth || k < 1 || len(req.Hashes)%per != 0 || len(req.Hashes)/per > len(s.suspects) ||
		(len(s.suspects) > 0 && s.suspects[0]<<k >= len(s.tree.nodes)) {
		return wire.RepairResponse{}, fmt.Errorf("%w: descent of %d hashes, %d levels at depth %d; %d nodes left at depth %d",
			ErrProtocol, len(req.Hashes), k, req.Depth, len(s.suspects), s.tree.shape.Depth)
	}
	n := len(req.Hashes) / per
	differ := make([]bool, 0, n<<k)
	var next []int
	var theirs []uint64
	for i := range n {
		lefts := req.Hashes[i*per : (i+1)*per]
		hs, ds := []uint64{s.theirs[i]}, []bool{true}
		for j := range k {
			nh, nd := make([]uint64, 2*len(hs)), make([]bool, 2*len(hs))
			for m := range hs {
				node := s.suspects[i]<<j + m
				left := lefts[0]
				lefts = lefts[1:]
				nh[2*m], nh[2*m+1] = left, hs[m]^left
				nd[2*m] = ds[m] && s.tree.Hash(2*node) != nh[2*m]
				nd[2*m+1] = ds[m] && s.tree.Hash(2*node+1) != nh[2*m+1]
			}
			hs, ds = nh, nd
		}
		for m, d := range ds {
			if d {
				next, theirs = append(next, s.suspects[i]<<k+m), append(theirs, hs[m])
			}
		}
		differ = append(differ, ds...)
	}
	// The suspects not yet answered stay first; this batch's descendants go after those
	// of the batches before it (the initiator's order).
	s.suspects = append(s.suspects[n:], next...)
	s.theirs = append(s.theirs[n:], theirs...)
	return wire.RepairResponse{Differ: differ}, nil
}

// leaves matches a batch of the initiator's leaf entries with this side's rows: it wants
// the initiator's row when it lacks the key or holds an older row, and gives its own
// when the initiator lacks the key or holds an older one (its own, not the initiator's,
// when their newest timestamps tie: the initiator sends back the merge if it differs).
func (s *responderSession) leaves(st Store, req *wire.RepairRequest) (wire.RepairResponse, error) {
	if s.tree == nil {
		// Open found the roots differ and the tree is of depth 0: no descent came.
		s.tree = s.builder.Tree(0)
		s.builder = nil
	}
	n := s.tree.shape.Leaves()
	if len(req.Counts) > len(s.suspects) {
		return wire.RepairResponse{}, fmt.Errorf("%w: %d leaves; %d left", ErrProtocol, len(req.Counts), len(s.suspects))
	}
	want := make([]bool, len(req.Entries))
	off := 0
	for i, c := range req.Counts {
		leaf := s.suspects[i] - n
		if leaf < 0 || leaf >= n || off+int(c) > len(req.Entries) {
			return wire.RepairResponse{}, fmt.Errorf("%w: leaf batch", ErrProtocol)
		}
		theirs := req.Entries[off : off+int(c)]
		mine := s.tree.leaf(leaf)
		give := pick{leaf: leaf}
		matched := make([]bool, len(mine))
		var byHash map[uint32][]int // for a leaf of many rows (a range past 2^20 leaves' worth)
		if len(mine) > 16 {
			byHash = make(map[uint32][]int, len(mine))
			for m := range mine {
				byHash[mine[m].keyHash] = append(byHash[mine[m].keyHash], m)
			}
		}
		for j := range theirs {
			k := -1
			candidates := byHash[theirs[j].KeyHash]
			if byHash == nil {
				candidates = nil
				for m := range mine {
					if mine[m].keyHash == theirs[j].KeyHash {
						candidates = append(candidates, m)
					}
				}
			}
			for _, m := range candidates {
				if !matched[m] {
					k = m
					break
				}
			}
			if k < 0 {
				want[off+j] = true
				continue
			}
			matched[k] = true
			if mine[k].rowHash == theirs[j].RowHash {
				continue
			}
			// The newer row crosses; on a tie this side's does, and the initiator
			// sends back the merge if it held cells this side lacks.
			want[off+j] = theirs[j].Newest > mine[k].newest
			if mine[k].newest >= theirs[j].Newest {
				give.hashes = append(give.hashes, mine[k].keyHash)
			}
		}
		for m := range mine {
			if !matched[m] {
				give.hashes = append(give.hashes, mine[m].keyHash)
			}
		}
		if len(give.hashes) > 0 {
			s.gives = append(s.gives, give)
		}
		off += int(c)
	}
	if off != len(req.Entries) {
		return wire.RepairResponse{}, fmt.Errorf("%w: %d entries for %d counted", ErrProtocol, len(req.Entries), off)
	}
	s.suspects = s.suspects[len(req.Counts):]
	s.theirs = s.theirs[len(req.Counts):]
	resp := wire.RepairResponse{Differ: want}
	var err error
	resp.Rows, err = s.give(st, nil, 0)
	resp.Held = int64(len(s.gives))
	return resp, err
}

// rows merges the initiator's rows and answers with the merges it lacks, then with more
// of the rows this side gives.
func (s *responderSession) rows(st Store, req *wire.RepairRequest) (wire.RepairResponse, error) {
	back, _, err := mergeInto(st, s.shape, req.Rows)
	if err != nil {
		return wire.RepairResponse{}, err
	}
	size := 0
	for i := range back {
		size += len(back[i].Key) + row.EncodedSize(&back[i].Row)
	}
	rows, err := s.give(st, back, size)
	return wire.RepairResponse{Rows: rows, Held: int64(len(s.gives))}, err
}

// give appends to rows (of size bytes so far) the rows still to give, up to the batch's
// bytes.
func (s *responderSession) give(st Store, rows []row.Mutation, size int) ([]row.Mutation, error) {
	for len(s.gives) > 0 && (len(rows) == 0 || size < rowBatchBytes) {
		var err error
		var n int
		if rows, size, n, err = pickRows(st, s.tree, s.gives, rows, size); err != nil {
			return nil, err
		}
		s.gives = s.gives[n:]
	}
	return rows, nil
}
