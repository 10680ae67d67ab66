package resp

// The generic key commands beyond DEL, EXISTS, EXPIRE and TTL (strings.go, expire.go):
// TYPE, UNLINK, TOUCH, EXPIREAT, PEXPIREAT, EXPIRETIME and PEXPIRETIME.

// kindName is a type's name as TYPE replies it.
func kindName(k kind) string {
	switch k {
	case kindString:
		return "string"
	case kindHash:
		return "hash"
	}
	return "none"
}

// TYPE key: string, hash or none, as a status reply.
func cmdType(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkReadKey(dst, args[1])
	if !ok {
		return dst
	}
	r, err := h.read(s, args[1])
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	return appendStatus(dst, kindName(kindOf(&r, h.now())))
}

// UNLINK key [key ...] is DEL: kura frees nothing in the request path either way (a
// delete is a tombstone, purged by compaction).
func cmdUnlink(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return cmdDel(h, dst, args, s)
}

// TOUCH key [key ...] counts the keys that exist, a repeated key each time, as Redis
// does. kura keeps no access times, so it changes nothing else.
func cmdTouch(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return cmdExists(h, dst, args, s)
}

// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
func cmdExpireAt(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expireAtArg(dst, args, s, microsPerSecond, "expireat")
}

// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
func cmdPExpireAt(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expireAtArg(dst, args, s, microsPerMilli, "pexpireat")
}

// expireAtArg is EXPIRE with an absolute time: a time not in the future deletes the key,
// as in Redis.
func (h *Handler) expireAtArg(dst []byte, args [][]byte, s *Session, unit int64, name string) []byte {
	flags, dst, ok := parseExpireFlags(dst, args[3:])
	if !ok {
		return dst
	}
	t, isInt := parseInt(args[2])
	if !isInt {
		return appendNotInt(dst)
	}
	at, fits := expiryAt(0, t, unit)
	if !fits {
		return appendExpireErr(dst, name)
	}
	return h.expireAt(dst, args[1], at, h.now(), flags, s)
}

// EXPIRETIME key: the absolute expiry in unix seconds, -1 without one, -2 for a missing
// key.
func cmdExpireTime(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expireTime(dst, args[1], s, microsPerSecond)
}

// PEXPIRETIME key: EXPIRETIME in milliseconds.
func cmdPExpireTime(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.expireTime(dst, args[1], s, microsPerMilli)
}

func (h *Handler) expireTime(dst, key []byte, s *Session, unit int64) []byte {
	at, _, dst, ok := h.expiryOf(s, dst, key)
	if !ok {
		return dst
	}
	// Rounded to the millisecond, then to the second, as Redis rounds its milliseconds.
	ms := (at + microsPerMilli/2) / microsPerMilli
	if unit == microsPerMilli {
		return appendInt(dst, ms)
	}
	return appendInt(dst, (ms+500)/1000)
}
