package resp

import (
	"math"
	"strconv"

	"github.com/kuradb/kura/internal/row"
)

// The counter commands run at the key's leader (flagLeader): each reads the key, adds to
// this node's shard of the column (counter.go) and writes that shard alone.

// INCR key
func cmdIncr(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.incr(dst, s, args[1], nil, number{i: 1})
}

// DECR key
func cmdDecr(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.incr(dst, s, args[1], nil, number{i: -1})
}

// INCRBY key increment
func cmdIncrBy(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	d, ok := parseInt(args[2])
	if !ok {
		return appendNotInt(dst)
	}
	return h.incr(dst, s, args[1], nil, number{i: d})
}

// DECRBY key decrement
func cmdDecrBy(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	d, ok := parseInt(args[2])
	if !ok || d == math.MinInt64 {
		if ok {
			return appendErr(dst, "ERR decrement would overflow")
		}
		return appendNotInt(dst)
	}
	return h.incr(dst, s, args[1], nil, number{i: -d})
}

// parseIncrement parses INCRBYFLOAT's increment as Redis does: a float, infinities
// included (the sum is then refused as infinite), NaN and out-of-range values not.
func parseIncrement(b []byte) (float64, bool) {
	if f, ok := parseFloat(b); ok {
		return f, true
	}
	if len(b) == 0 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && math.IsInf(f, 0)
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	f, ok := parseIncrement(args[2])
	if !ok {
		return appendErr(dst, errNotFloat)
	}
	return h.incr(dst, s, args[1], nil, number{f: f, isFloat: true})
}

// HINCRBY key field increment
func cmdHIncrBy(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	d, ok := parseInt(args[3])
	if !ok {
		return appendNotInt(dst)
	}
	return h.incr(dst, s, args[1], args[2], number{i: d})
}

// HINCRBYFLOAT key field increment
func cmdHIncrByFloat(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	f, ok := parseIncrement(args[3])
	if !ok {
		return appendErr(dst, errNotFloat)
	}
	return h.incr(dst, s, args[1], args[2], number{f: f, isFloat: true})
}

// incr adds delta to the string key (field nil) or to the hash field, and replies with the
// new value: an integer for integer deltas, a bulk string for float ones.
func (h *Handler) incr(dst []byte, s *Session, key, field []byte, delta number) []byte {
	dst, ok := h.checkWriteKey(dst, key)
	if !ok {
		return dst
	}
	if field != nil {
		if dst, ok = h.checkField(dst, field); !ok {
			return dst
		}
	}
	raw, err := h.readRaw(s, key)
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	view := fold(raw, now)
	k, want := kindOf(&view, now), kindString
	col := stringColumn
	if field != nil {
		want, col = kindHash, fieldName(nil, field)
	}
	if k != kindNone && k != want {
		return appendWrongType(dst)
	}
	cur := number{}
	if c := view.Find(col); c != nil && c.Live(now) {
		var okv bool
		if cur, okv = parseNumber(c.Value); !okv || (!delta.isFloat && cur.isFloat) {
			return appendErr(dst, notNumberErr(field != nil, delta.isFloat))
		}
	}
	total := cur.add(delta)
	switch {
	case !delta.isFloat && total.isFloat:
		return appendErr(dst, errOverflow)
	case delta.isFloat:
		total = number{f: cur.float() + delta.f, isFloat: true}
		if math.IsNaN(total.f) || math.IsInf(total.f, 0) {
			return appendErr(dst, errNaN)
		}
	}
	// The shard: this node's contribution plus delta, in the base's generation, with the
	// key's expiry (INCR keeps a TTL, as in Redis), at a timestamp above everything the
	// row holds (a row tombstone from a faster clock must not shadow it).
	own, _ := ownShard(&raw, col, h.cfg.ShardID, now, nil)
	own = own.add(delta)
	var gen int64
	if base := raw.Find(col); base != nil {
		gen = base.Timestamp
	}
	var expiresAt int64
	if k != kindNone {
		expiresAt = keyExpiry(&view, k, now)
	}
	h.cfg.Clock.Observe(raw.Newest())
	ts := h.cfg.Clock.Now()
	cells := s.cellScratch(2)[:0]
	if field != nil {
		// As HSET: the string column's tombstone settles a race with SET on the later.
		cells = append(cells, row.Cell{Name: stringColumn, Timestamp: ts, Tombstone: true})
	}
	cells = append(cells, row.Cell{Name: shardColumn(nil, col, h.cfg.ShardID),
		Value: encodeShard(nil, gen, own), Timestamp: ts, ExpiresAt: expiresAt})
	muts := s.mutations(1)
	muts[0] = row.Mutation{Key: key, Row: row.Row{Cells: cells}}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	if !delta.isFloat {
		return appendInt(dst, total.i)
	}
	// The reply is what GET will show: the sum folded in the same order.
	after := fold(row.Merge(raw, muts[0].Row), now)
	if c := after.Find(col); c != nil {
		return appendBulk(dst, c.Value)
	}
	return appendBulk(dst, total.appendText(nil))
}

// notNumberErr is Redis's error for a value the command cannot add to.
func notNumberErr(hash, float bool) string {
	switch {
	case hash && float:
		return errHashNotFloat
	case hash:
		return errHashNotInt
	case float:
		return errNotFloat
	}
	return errNotInt
}
