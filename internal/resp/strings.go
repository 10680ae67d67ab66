package resp

import (
	"github.com/kuradb/kura/internal/row"
)

// GET key
func cmdGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkReadKey(dst, args[1])
	if !ok {
		return dst
	}
	r, err := h.read(s, args[1])
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	if v, ok := stringValue(&r, now); ok {
		return appendBulk(dst, v)
	}
	if kindOf(&r, now) != kindNone {
		return appendWrongType(dst)
	}
	return s.proto.appendNull(dst)
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ts-ms|KEEPTTL]
func cmdSet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	key, val := args[1], args[2]
	o, ok := parseSetOptions(args[3:])
	if !ok {
		return appendSyntaxErr(dst)
	}
	now := h.now()
	expiresAt, dst, ok := o.expiry(dst, now)
	if !ok {
		return dst
	}
	if dst, ok = h.checkWriteKey(dst, key); !ok {
		return dst
	}
	if dst, ok = h.checkValue(dst, val); !ok {
		return dst
	}
	var old []byte
	if o.nx || o.xx || o.get || o.keepTTL {
		if s.store == nil {
			// These forms read the key before writing it: they run at the key's leader,
			// as the leader commands do, so that SET NX (what go-redis's SetNX and
			// redis-py's set(nx=True) send, and locks are built on) is SETNX.
			req := LeaderRequest{Key: key, Level: s.consistency, Proto: int(s.proto), Cmds: [][][]byte{args}}
			return h.sendToLeader(dst, &req, [][]byte{key}, nil)
		}
		var proceed bool
		if old, expiresAt, dst, proceed = h.setPrecondition(s, dst, key, &o, expiresAt, now); !proceed {
			return dst
		}
	}
	muts := s.mutations(1)
	setString(&muts[0], s.cellScratch(1), key, val, h.cfg.Clock.Now(), expiresAt)
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	if o.get {
		return s.proto.appendOld(dst, old)
	}
	return appendOK(dst)
}

// setPrecondition reads the key for SET's NX, XX, GET and KEEPTTL. It returns the old
// string cell and the expiry to write, or proceed=false with the reply written when the
// SET must not happen (a condition failed, a hash under GET, a store error).
func (h *Handler) setPrecondition(s *Session, dst, key []byte, o *setOptions, expiresAt, now int64) (old []byte, _ int64, _ []byte, proceed bool) {
	r, err := h.read(s, key)
	if err != nil {
		return nil, 0, h.appendStoreErr(dst, err), false
	}
	k := kindOf(&r, now)
	if o.get && k == kindHash {
		return nil, 0, appendWrongType(dst), false
	}
	old, _ = stringValue(&r, now)
	if (o.nx && k != kindNone) || (o.xx && k == kindNone) {
		if !o.get {
			return nil, 0, s.proto.appendNull(dst), false
		}
		return nil, 0, s.proto.appendOld(dst, old), false
	}
	if o.keepTTL {
		expiresAt = keyExpiry(&r, k, now)
	}
	return old, expiresAt, dst, true
}

// appendOld replies with SET GET's previous value, or nil. A string's value is never
// nil (an empty string is empty, not nil).
func (p proto) appendOld(dst []byte, old []byte) []byte {
	if old == nil {
		return p.appendNull(dst)
	}
	return appendBulk(dst, old)
}

// setString fills m with a blind overwrite of key: a row tombstone just below ts shadows
// whatever the key held, and the string cell at ts survives it. cell is one cell of
// scratch.
func setString(m *row.Mutation, cell []row.Cell, key, val []byte, ts, expiresAt int64) {
	cell[0] = row.Cell{Name: stringColumn, Value: val, Timestamp: ts, ExpiresAt: expiresAt}
	if val == nil {
		cell[0].Value = []byte{} // a live cell's value is never nil
	}
	m.Key = key
	m.Row = row.Row{Deleted: ts - 1, Cells: cell[:1:1]}
}

// checkPairs validates the key value pairs of MSET and MSETNX (cmd): their count, keys
// and values.
func (h *Handler) checkPairs(dst []byte, args [][]byte, cmd string) ([]byte, bool) {
	if len(args)%2 == 0 {
		return appendArityErr(dst, cmd), false
	}
	var ok bool
	for i := 1; i < len(args); i += 2 {
		if dst, ok = h.checkWriteKey(dst, args[i]); !ok {
			return dst, false
		}
		if dst, ok = h.checkValue(dst, args[i+1]); !ok {
			return dst, false
		}
	}
	return dst, true
}

// MSET key value [key value ...]: one atomic batch.
func cmdMSet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkPairs(dst, args, "mset")
	if !ok {
		return dst
	}
	n := len(args) / 2
	muts, cells := s.mutations(n), s.cellScratch(n)
	for i := range n {
		// One timestamp per pair, increasing, so that a key given twice ends with its
		// last value as in Redis (equal timestamps would pick the larger value).
		setString(&muts[i], cells[i:i+1], args[1+2*i], args[2+2*i], h.cfg.Clock.Now(), 0)
	}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendOK(dst)
}

// MGET key [key ...]: nil for missing keys and keys of another type, as Redis.
func cmdMGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	keys := args[1:]
	var ok bool
	for _, k := range keys {
		if dst, ok = h.checkReadKey(dst, k); !ok {
			return dst
		}
	}
	// Read everything before replying so that a store error replaces the whole reply.
	start := len(dst)
	dst = appendArray(dst, len(keys))
	now := h.now()
	for _, k := range keys {
		r, err := h.read(s, k)
		if err != nil {
			return h.appendStoreErr(dst[:start], err)
		}
		if v, ok := stringValue(&r, now); ok {
			dst = appendBulk(dst, v)
		} else {
			dst = s.proto.appendNull(dst)
		}
	}
	return dst
}

// DEL key [key ...]: reads to count the keys that exist, then writes row tombstones.
func cmdDel(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	keys := distinct(args[1:])
	var ok bool
	for _, k := range keys {
		if dst, ok = h.checkReadKey(dst, k); !ok {
			return dst
		}
	}
	now := h.now()
	muts := s.mutations(len(keys))[:0]
	for _, k := range keys {
		r, err := h.read(s, k)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		if kindOf(&r, now) != kindNone {
			muts = append(muts, row.Mutation{Key: k})
		}
	}
	if len(muts) == 0 {
		return appendInt(dst, 0)
	}
	ts := h.cfg.Clock.Now()
	for i := range muts {
		muts[i].Row.Deleted = ts
	}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, int64(len(muts)))
}

// EXISTS key [key ...]: counts keys, a repeated key each time, as Redis.
func cmdExists(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	var ok bool
	for _, k := range args[1:] {
		if dst, ok = h.checkReadKey(dst, k); !ok {
			return dst
		}
	}
	now := h.now()
	var n int64
	for _, k := range args[1:] {
		r, err := h.read(s, k)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		if kindOf(&r, now) != kindNone {
			n++
		}
	}
	return appendInt(dst, n)
}
