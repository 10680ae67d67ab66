package resp

import (
	"github.com/kuradb/kura/internal/row"
)

// EXPIRE key seconds [NX|XX|GT|LT]
func cmdExpire(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expire(dst, args, s, microsPerSecond, "expire")
}

// PEXPIRE key milliseconds [NX|XX|GT|LT]
func cmdPExpire(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expire(dst, args, s, microsPerMilli, "pexpire")
}

// expireFlags are EXPIRE's Redis 7 conditions.
type expireFlags struct{ nx, xx, gt, lt bool }

// parseExpireFlags checks the options with Redis's texts for conflicts.
func parseExpireFlags(dst []byte, opts [][]byte) (expireFlags, []byte, bool) {
	var f expireFlags
	for _, o := range opts {
		switch {
		case equalFold(o, "nx"):
			f.nx = true
		case equalFold(o, "xx"):
			f.xx = true
		case equalFold(o, "gt"):
			f.gt = true
		case equalFold(o, "lt"):
			f.lt = true
		default:
			return f, appendErrf(dst, "ERR Unsupported option %s", sanitize(o)), false
		}
	}
	switch {
	case f.nx && (f.xx || f.gt || f.lt):
		return f, appendErr(dst, "ERR NX and XX, GT or LT options at the same time are not compatible"), false
	case f.gt && f.lt:
		return f, appendErr(dst, "ERR GT and LT options at the same time are not compatible"), false
	}
	return f, dst, true
}

func sanitize(b []byte) string { return string(appendSanitized(nil, b, unknownQuoteLimit)) }

// allows reports whether the conditions let a key whose expiry is cur (0 for none) get
// the expiry at. A key without expiry counts as an infinite TTL for GT and LT, as Redis.
func (f expireFlags) allows(cur, at int64) bool {
	switch {
	case f.nx && cur != 0, f.xx && cur == 0:
		return false
	case f.gt && (cur == 0 || at <= cur):
		return false
	case f.lt && cur != 0 && at >= cur:
		return false
	}
	return true
}

// expire rewrites the key's visible cells with the new expiry, or deletes the key when the
// expiry is not in the future.
func (h *Handler) expire(dst []byte, args [][]byte, s *Session, unit int64, name string) []byte {
	flags, dst, ok := parseExpireFlags(dst, args[3:])
	if !ok {
		return dst
	}
	ttl, isInt := parseInt(args[2])
	if !isInt {
		return appendNotInt(dst)
	}
	now := h.now()
	at, fits := expiryAt(now, ttl, unit)
	if !fits {
		return appendExpireErr(dst, name)
	}
	return h.expireAt(dst, args[1], at, now, flags, s)
}

// expireAt gives key the expiry at (EXPIRE, EXPIREAT...) when flags allow, or deletes it
// when at is not in the future; it replies 1 if it did either.
func (h *Handler) expireAt(dst, key []byte, at, now int64, flags expireFlags, s *Session) []byte {
	dst, ok := h.checkReadKey(dst, key)
	if !ok {
		return dst
	}
	r, err := h.read(s, key)
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	k := kindOf(&r, now)
	if k == kindNone || !flags.allows(keyExpiry(&r, k, now), at) {
		return appendInt(dst, 0)
	}
	ts := h.cfg.Clock.Now()
	muts := s.mutations(1)
	if at <= now {
		muts[0] = row.Mutation{Key: key, Row: row.Row{Deleted: ts}}
	} else {
		muts[0] = rewriteExpiry(key, &r, k, now, ts, at, s)
	}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, 1)
}

// rewriteExpiry returns a mutation that rewrites the visible cells of type k at ts with
// expiry at (0 for none). The newer timestamp makes the rewrite win over the old cells.
func rewriteExpiry(key []byte, r *row.Row, k kind, now, ts, at int64, s *Session) row.Mutation {
	cells := visibleOfKind(s.cellScratch(len(r.Cells))[:0], r, k, now)
	for i := range cells {
		cells[i].Timestamp, cells[i].ExpiresAt = ts, at
	}
	m := row.Mutation{Key: key, Row: row.Row{Cells: cells}}
	if hasShards(r) {
		// Counters fold into their columns' new values; a row tombstone just below ts
		// ends their shards (counter.go), as SET's does.
		m.Row.Deleted = ts - 1
	}
	return m
}

// PERSIST key removes the key's expiry.
func cmdPersist(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkReadKey(dst, args[1])
	if !ok {
		return dst
	}
	r, err := h.read(s, args[1])
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	k := kindOf(&r, now)
	if k == kindNone || keyExpiry(&r, k, now) == 0 {
		return appendInt(dst, 0)
	}
	muts := s.mutations(1)
	muts[0] = rewriteExpiry(args[1], &r, k, now, h.cfg.Clock.Now(), 0, s)
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, 1)
}

// TTL key: seconds left, -1 without expiry, -2 for a missing key.
func cmdTTL(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.ttl(s, dst, args[1], false)
}

// PTTL key: milliseconds left, -1 without expiry, -2 for a missing key.
func cmdPTTL(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.ttl(s, dst, args[1], true)
}

func (h *Handler) ttl(s *Session, dst []byte, key []byte, millis bool) []byte {
	at, now, dst, ok := h.expiryOf(s, dst, key)
	if !ok {
		return dst
	}
	// Rounded to the nearest unit as Redis rounds milliseconds to seconds.
	ms := (at - now + microsPerMilli/2) / microsPerMilli
	if millis {
		return appendInt(dst, ms)
	}
	return appendInt(dst, (ms+500)/1000)
}

// expiryOf reads key's expiry (µs) for TTL and EXPIRETIME and their millisecond forms,
// with the time it was read at. For a missing key (-2), a key without expiry (-1), a key
// too long or a store error it writes the reply and returns ok=false.
func (h *Handler) expiryOf(s *Session, dst, key []byte) (at, now int64, _ []byte, ok bool) {
	if dst, ok = h.checkReadKey(dst, key); !ok {
		return 0, 0, dst, false
	}
	r, err := h.read(s, key)
	if err != nil {
		return 0, 0, h.appendStoreErr(dst, err), false
	}
	now = h.now()
	k := kindOf(&r, now)
	if k == kindNone {
		return 0, 0, appendInt(dst, -2), false
	}
	if at = keyExpiry(&r, k, now); at == 0 {
		return 0, 0, appendInt(dst, -1), false
	}
	return at, now, dst, true
}
