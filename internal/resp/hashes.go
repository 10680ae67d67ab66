package resp

import (
	"github.com/kuradb/kura/internal/row"
)

// readHash reads key for a hash command. It returns ok=false with the reply written when
// the key is too long, the store fails or the key holds a string.
func (h *Handler) readHash(s *Session, dst []byte, key []byte, now int64) (row.Row, []byte, bool) {
	dst, ok := h.checkReadKey(dst, key)
	if !ok {
		return row.Row{}, dst, false
	}
	r, err := h.read(s, key)
	if err != nil {
		return r, h.appendStoreErr(dst, err), false
	}
	if stringCell(&r, now) != nil {
		return r, appendWrongType(dst), false
	}
	return r, dst, true
}

// HSET key field value [field value ...] replies with the number of new fields.
func cmdHSet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if len(args)%2 != 0 {
		return appendArityErr(dst, "hset")
	}
	n, dst, ok := h.hset(dst, args, s)
	if !ok {
		return dst
	}
	return appendInt(dst, int64(n))
}

// HMSET key field value [field value ...] is HSET replying OK.
func cmdHMSet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if len(args)%2 != 0 {
		return appendArityErr(dst, "hmset")
	}
	if _, dst, ok := h.hset(dst, args, s); !ok {
		return dst
	}
	return appendOK(dst)
}

// hset validates, reads the key (WRONGTYPE on a string, the key's expiry for new
// fields), and writes the fields plus a tombstone of the string column (see doc.go).
func (h *Handler) hset(dst []byte, args [][]byte, s *Session) (added int, _ []byte, ok bool) {
	key := args[1]
	size, dst, ok := h.checkFieldValues(dst, args)
	if !ok {
		return 0, dst, false
	}
	now := h.now()
	r, dst, ok := h.readHash(s, dst, key, now)
	if !ok {
		return 0, dst, false
	}
	expiresAt := keyExpiry(&r, kindHash, now)
	ts := h.cfg.Clock.Now()
	nf := (len(args) - 2) / 2
	cells := s.cellScratch(nf + 1)
	cells[0] = row.Cell{Name: stringColumn, Timestamp: ts, Tombstone: true}
	names := s.names(size)
	for i := range nf {
		f, v := args[2+2*i], args[3+2*i]
		names = fieldName(names, f)
		col := names[len(names)-1-len(f) : len(names) : len(names)]
		if v == nil {
			v = []byte{}
		}
		cells[1+i] = row.Cell{Name: col, Value: v, Timestamp: ts, ExpiresAt: expiresAt}
	}
	cells = sortDedupCells(cells)
	for i := range cells[1:] {
		if hashCell(&r, cells[1+i].Name, now) == nil {
			added++
		}
	}
	if hasShards(&r) { // the new values replace counters (counter.go)
		for _, c := range cells[1:] {
			cells = shardTombstones(cells, &r, c.Name, ts)
		}
		cells = sortDedupCells(cells)
	}
	muts := s.mutations(1)
	muts[0] = row.Mutation{Key: key, Row: row.Row{Cells: cells}}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return 0, dst, false
	}
	return added, dst, true
}

// checkFieldValues validates HSET's key, fields and values, and returns the bytes their
// column names need.
func (h *Handler) checkFieldValues(dst []byte, args [][]byte) (size int, _ []byte, ok bool) {
	if dst, ok = h.checkWriteKey(dst, args[1]); !ok {
		return 0, dst, false
	}
	for i := 2; i < len(args); i += 2 {
		if dst, ok = h.checkField(dst, args[i]); !ok {
			return 0, dst, false
		}
		if dst, ok = h.checkValue(dst, args[i+1]); !ok {
			return 0, dst, false
		}
		size += 1 + len(args[i])
	}
	return size, dst, true
}

// names returns the session's name buffer emptied, with capacity for size bytes, so that
// column names sliced from it never move while it is filled.
func (s *Session) names(size int) []byte {
	if cap(s.buf) < size {
		s.buf = make([]byte, 0, size)
	}
	return s.buf[:0]
}

// HGET key field
func cmdHGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	if c := hashCell(&r, s.column(args[2]), now); c != nil {
		return appendBulk(dst, c.Value)
	}
	return s.proto.appendNull(dst)
}

// column returns the column name of field f in the session's buffer, valid until the
// next call.
func (s *Session) column(f []byte) []byte {
	s.buf = fieldName(s.buf[:0], f)
	return s.buf
}

// HMGET key field [field ...]
func cmdHMGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	dst = appendArray(dst, len(args)-2)
	for _, f := range args[2:] {
		if c := hashCell(&r, s.column(f), now); c != nil {
			dst = appendBulk(dst, c.Value)
		} else {
			dst = s.proto.appendNull(dst)
		}
	}
	return dst
}

// HGETALL key replies with a map of field to value (RESP2: field, value, field, value...),
// sorted by field name.
func cmdHGetAll(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	n := 0
	for i := range r.Cells {
		if isField(r.Cells[i].Name) && r.Cells[i].Live(now) {
			n++
		}
	}
	dst = s.proto.appendMap(dst, n)
	for i := range r.Cells {
		if c := &r.Cells[i]; isField(c.Name) && c.Live(now) {
			dst = appendBulk(dst, c.Name[1:])
			dst = appendBulk(dst, c.Value)
		}
	}
	return dst
}

// HLEN key
func cmdHLen(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	var n int64
	for i := range r.Cells {
		if isField(r.Cells[i].Name) && r.Cells[i].Live(now) {
			n++
		}
	}
	return appendInt(dst, n)
}

// HEXISTS key field
func cmdHExists(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	return appendBool(dst, hashCell(&r, s.column(args[2]), now) != nil)
}

// HDEL key field [field ...] writes tombstones for the fields that exist and counts them.
func cmdHDel(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	fields := distinct(args[2:])
	cells := s.cellScratch(len(fields))[:0]
	for _, f := range fields {
		// Names alias the row read above, which nothing else holds.
		if c := hashCell(&r, s.column(f), now); c != nil {
			cells = append(cells, row.Cell{Name: c.Name})
		}
	}
	if len(cells) == 0 {
		return appendInt(dst, 0)
	}
	ts := h.cfg.Clock.Now()
	for i := range cells {
		cells[i].Timestamp, cells[i].Tombstone = ts, true
	}
	n := len(cells)
	if hasShards(&r) { // the fields' counters go with them (counter.go)
		for _, c := range cells[:n] {
			cells = shardTombstones(cells, &r, c.Name, ts)
		}
	}
	cells = sortDedupCells(cells)
	muts := s.mutations(1)
	muts[0] = row.Mutation{Key: args[1], Row: row.Row{Cells: cells}}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, int64(n))
}
