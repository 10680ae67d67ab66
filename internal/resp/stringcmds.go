package resp

import (
	"github.com/kuradb/kura/internal/row"
)

// The string commands beyond GET, SET, MGET and MSET (strings.go): GETDEL, GETEX, SETNX,
// SETEX, PSETEX, STRLEN, APPEND, GETRANGE (SUBSTR), SETRANGE and MSETNX. Those that read
// the key before writing it carry flagLeader; what they guarantee under concurrent
// writers is in doc.go, "Read-modify-write commands".

// errStringSize is Redis's reply when APPEND or SETRANGE would make a string longer than
// proto-max-bulk-len, which is MaxValueBytes in kura (CONFIG GET reports it so).
const errStringSize = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

// readString reads key for a string command: its value (nil when the key does not exist),
// the row read, and ok=false with the reply written when the key is too long, the store
// fails or the key holds a hash.
func (h *Handler) readString(s *Session, dst, key []byte, now int64) (val []byte, r row.Row, _ []byte, ok bool) {
	if dst, ok = h.checkReadKey(dst, key); !ok {
		return nil, r, dst, false
	}
	r, err := h.read(s, key)
	if err != nil {
		return nil, r, h.appendStoreErr(dst, err), false
	}
	if v, isString := stringValue(&r, now); isString {
		return v, r, dst, true
	}
	if kindOf(&r, now) != kindNone {
		return nil, r, appendWrongType(dst), false
	}
	return nil, r, dst, true
}

// GETDEL key replies with the string's value and deletes the key.
func cmdGetDel(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	v, _, dst, ok := h.readString(s, dst, args[1], h.now())
	if !ok {
		return dst
	}
	if v == nil {
		return s.proto.appendNull(dst)
	}
	muts := s.mutations(1)
	muts[0] = row.Mutation{Key: args[1], Row: row.Row{Deleted: h.cfg.Clock.Now()}}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendBulk(dst, v)
}

// GETEX key [EX s|PX ms|EXAT ts|PXAT ts-ms|PERSIST] replies with the string's value and
// sets or removes its expiry. As in Redis, the options' syntax is checked first, their
// values only once the key is found to be a string.
func cmdGetEx(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	o, persist, ok := parseGetExOptions(args[2:])
	if !ok {
		return appendSyntaxErr(dst)
	}
	now := h.now()
	v, r, dst, ok := h.readString(s, dst, args[1], now)
	if !ok {
		return dst
	}
	if v == nil {
		return s.proto.appendNull(dst)
	}
	at, dst, ok := o.expiryOf(dst, now, "getex")
	if !ok {
		return dst
	}
	cur := keyExpiry(&r, kindString, now)
	var m row.Mutation
	switch {
	case o.expireArg != nil && at <= now: // EXAT or PXAT in the past deletes, as in Redis
		m = row.Mutation{Key: args[1], Row: row.Row{Deleted: h.cfg.Clock.Now()}}
	case o.expireArg != nil:
		m = rewriteExpiry(args[1], &r, kindString, now, h.cfg.Clock.Now(), at, s)
	case persist && cur != 0:
		m = rewriteExpiry(args[1], &r, kindString, now, h.cfg.Clock.Now(), 0, s)
	default:
		return appendBulk(dst, v)
	}
	muts := s.mutations(1)
	muts[0] = m
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendBulk(dst, v)
}

// parseGetExOptions accepts one expiry kind (repeatable, the last value wins) or PERSIST
// (repeatable), as Redis 7 does; anything else is a syntax error.
func parseGetExOptions(opts [][]byte) (o setOptions, persist, ok bool) {
	for j := 0; j < len(opts); j++ {
		switch {
		case equalFold(opts[j], "persist") && o.expireArg == nil:
			persist = true
		case j+1 < len(opts) && !persist && o.setExpiry(opts[j], opts[j+1]):
			j++
		default:
			return o, false, false
		}
	}
	return o, persist, true
}

// SETNX key value sets the key only when it does not exist (of any type): 1 if it did.
func cmdSetNX(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	key, val := args[1], args[2]
	dst, ok := h.checkWriteKey(dst, key)
	if !ok {
		return dst
	}
	if dst, ok = h.checkValue(dst, val); !ok {
		return dst
	}
	r, err := h.read(s, key)
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	if kindOf(&r, h.now()) != kindNone {
		return appendInt(dst, 0)
	}
	muts := s.mutations(1)
	setString(&muts[0], s.cellScratch(1), key, val, h.cfg.Clock.Now(), 0)
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, 1)
}

// SETEX key seconds value
func cmdSetEx(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.setWithTTL(dst, args, s, microsPerSecond, "setex")
}

// PSETEX key milliseconds value
func cmdPSetEx(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.setWithTTL(dst, args, s, microsPerMilli, "psetex")
}

// setWithTTL is SET key value EX|PX ttl with SETEX's argument order and error texts: a
// blind write.
func (h *Handler) setWithTTL(dst []byte, args [][]byte, s *Session, unit int64, name string) []byte {
	key, val := args[1], args[3]
	ttl, isInt := parseInt(args[2])
	if !isInt {
		return appendNotInt(dst)
	}
	now := h.now()
	at, fits := expiryAt(now, ttl, unit)
	if ttl <= 0 || !fits {
		return appendExpireErr(dst, name)
	}
	dst, ok := h.checkWriteKey(dst, key)
	if !ok {
		return dst
	}
	if dst, ok = h.checkValue(dst, val); !ok {
		return dst
	}
	muts := s.mutations(1)
	setString(&muts[0], s.cellScratch(1), key, val, h.cfg.Clock.Now(), at)
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendOK(dst)
}

// STRLEN key: the string's length, 0 for a missing key.
func cmdStrLen(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	v, _, dst, ok := h.readString(s, dst, args[1], h.now())
	if !ok {
		return dst
	}
	return appendInt(dst, int64(len(v)))
}

// APPEND key value appends to the string (creating it) and keeps its expiry; it replies
// with the new length.
func cmdAppend(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	key, suffix := args[1], args[2]
	dst, ok := h.checkWriteKey(dst, key)
	if !ok {
		return dst
	}
	now := h.now()
	old, r, dst, ok := h.readString(s, dst, key, now)
	if !ok {
		return dst
	}
	if len(old)+len(suffix) > h.cfg.MaxValueBytes {
		return appendErr(dst, errStringSize)
	}
	v := make([]byte, 0, len(old)+len(suffix))
	v = append(append(v, old...), suffix...)
	return h.writeString(s, dst, key, v, keyExpiry(&r, kindString, now))
}

// writeString overwrites key with the string v expiring at (0: never), as SET does, and
// replies with v's length.
func (h *Handler) writeString(s *Session, dst, key, v []byte, at int64) []byte {
	muts := s.mutations(1)
	setString(&muts[0], s.cellScratch(1), key, v, h.cfg.Clock.Now(), at)
	dst, ok := h.apply(s, dst, muts)
	if !ok {
		return dst
	}
	return appendInt(dst, int64(len(v)))
}

// GETRANGE key start end (and SUBSTR, its old name): the bytes from start to end
// inclusive, negative offsets counting from the end, "" for a missing key.
func cmdGetRange(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return appendNotInt(dst)
	}
	v, _, dst, ok := h.readString(s, dst, args[1], h.now())
	if !ok {
		return dst
	}
	return appendBulk(dst, byteRange(v, start, end))
}

// byteRange is Redis 7.0's GETRANGE arithmetic: both offsets clamped into the string
// after negative ones count from its end, empty when start > end.
func byteRange(v []byte, start, end int64) []byte {
	n := int64(len(v))
	if (start < 0 && end < 0 && start > end) || n == 0 {
		return []byte{}
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, n-1)
	if start > end {
		return []byte{}
	}
	return v[start : end+1]
}

// SETRANGE key offset value overwrites the string from offset on, padding with zero
// bytes, keeps its expiry, and replies with the new length. Nothing is written when value
// is empty (a missing key stays missing), as in Redis.
func cmdSetRange(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	key, patch := args[1], args[3]
	off, isInt := parseInt(args[2])
	if !isInt {
		return appendNotInt(dst)
	}
	if off < 0 {
		return appendErr(dst, "ERR offset is out of range")
	}
	dst, ok := h.checkWriteKey(dst, key)
	if !ok {
		return dst
	}
	now := h.now()
	old, r, dst, ok := h.readString(s, dst, key, now)
	if !ok {
		return dst
	}
	if len(patch) == 0 {
		return appendInt(dst, int64(len(old)))
	}
	if off > int64(h.cfg.MaxValueBytes)-int64(len(patch)) {
		return appendErr(dst, errStringSize)
	}
	end := int(off) + len(patch)
	v := make([]byte, max(len(old), end))
	copy(v, old)
	copy(v[off:], patch)
	return h.writeString(s, dst, key, v, keyExpiry(&r, kindString, now))
}

// MSETNX key value [key value ...] sets every key, or none when any of them exists (of any
// type): 1 if it set them. All its writes share one timestamp. On a single node it holds
// the leader locks of its keys, so that it is serialized with the leader commands and the
// other MSETNXs on any of them; in a cluster it is not (see doc.go).
func cmdMSetNX(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkPairs(dst, args, "msetnx")
	if !ok {
		return dst
	}
	// The last value of a key given twice wins, as in Redis.
	last := make(map[string]int, len(args)/2)
	var keys [][]byte
	for i := 1; i < len(args); i += 2 {
		if _, seen := last[string(args[i])]; !seen {
			keys = append(keys, args[i])
		}
		last[string(args[i])] = i
	}
	if _, cluster := h.store.(Leader); !cluster && s.store == nil {
		defer h.locks.lock(keys)()
	}
	now := h.now()
	for _, k := range keys {
		r, err := h.read(s, k)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		if kindOf(&r, now) != kindNone {
			return appendInt(dst, 0)
		}
	}
	ts := h.cfg.Clock.Now()
	muts, cells := s.mutations(len(keys)), s.cellScratch(len(keys))
	for i, k := range keys {
		setString(&muts[i], cells[i:i+1], k, args[last[string(k)]+1], ts, 0)
	}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, 1)
}
