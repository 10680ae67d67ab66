package resp

import "math"

// parseInt parses a decimal int64 the way Redis's string2ll does: an optional '-', no '+',
// no spaces, no leading zeros (so "-0" and "007" are not integers), within int64. Clients
// see "value is not an integer or out of range" for anything else, as with Redis.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	if i == len(b) || b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		d := uint64(b[i] - '0')
		if d > 9 || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	switch {
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	case neg && v <= 1<<63:
		return int64(-v), true // -v wraps to MinInt64 for v == 1<<63
	}
	return 0, false
}

// equalFold reports whether b equals the ASCII word w (lowercase) ignoring case, without
// allocating.
func equalFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// Units of expiry arguments, in microseconds.
const (
	microsPerMilli  = 1000
	microsPerSecond = 1000 * 1000
)

// expiryAt turns a relative TTL (ttl in units of unit microseconds) into an absolute
// expiry in microseconds after now, or reports overflow.
func expiryAt(now, ttl, unit int64) (int64, bool) {
	if ttl > math.MaxInt64/unit || ttl < math.MinInt64/unit {
		return 0, false
	}
	d := ttl * unit
	if (d > 0 && now > math.MaxInt64-d) || (d < 0 && now < math.MinInt64-d) {
		return 0, false
	}
	return now + d, true
}

// setOptions are SET's flags after parsing.
type setOptions struct {
	nx, xx, get, keepTTL bool
	// expireArg is the EX/PX/EXAT/PXAT argument (nil for none) and expireUnit its unit in
	// microseconds; expireAbs marks EXAT/PXAT.
	expireArg  []byte
	expireUnit int64
	expireAbs  bool
}

// parseSetOptions parses SET's options (args after the value) with Redis's rules:
// options may repeat, but NX and XX, and the expiry kinds with each other and KEEPTTL,
// exclude one another; any violation is a syntax error.
func parseSetOptions(opts [][]byte) (setOptions, bool) {
	var o setOptions
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		hasNext := j+1 < len(opts)
		exp := o.expireArg != nil
		switch {
		case equalFold(a, "nx") && !o.xx:
			o.nx = true
		case equalFold(a, "xx") && !o.nx:
			o.xx = true
		case equalFold(a, "get"):
			o.get = true
		case equalFold(a, "keepttl") && !exp:
			o.keepTTL = true
		case hasNext && !o.keepTTL && o.setExpiry(a, opts[j+1]):
			j++
		default:
			return o, false
		}
	}
	return o, true
}

// setExpiry accepts EX, PX, EXAT or PXAT unless a different expiry kind was given before.
func (o *setOptions) setExpiry(kind, arg []byte) bool {
	var unit int64
	var abs bool
	switch {
	case equalFold(kind, "ex"):
		unit = microsPerSecond
	case equalFold(kind, "px"):
		unit = microsPerMilli
	case equalFold(kind, "exat"):
		unit, abs = microsPerSecond, true
	case equalFold(kind, "pxat"):
		unit, abs = microsPerMilli, true
	default:
		return false
	}
	if o.expireArg != nil && (o.expireUnit != unit || o.expireAbs != abs) {
		return false
	}
	o.expireArg, o.expireUnit, o.expireAbs = arg, unit, abs
	return true
}

// expiry resolves the expiry option against now: 0 for none; ok is false with the reply to
// send (not an integer, or an invalid expire time) otherwise.
func (o *setOptions) expiry(dst []byte, now int64) (at int64, _ []byte, ok bool) {
	return o.expiryOf(dst, now, "set")
}

// expiryOf is expiry for command cmd (SET, GETEX), which its error reply names.
func (o *setOptions) expiryOf(dst []byte, now int64, cmd string) (at int64, _ []byte, ok bool) {
	if o.expireArg == nil {
		return 0, dst, true
	}
	v, isInt := parseInt(o.expireArg)
	if !isInt {
		return 0, appendNotInt(dst), false
	}
	if v <= 0 {
		return 0, appendExpireErr(dst, cmd), false
	}
	base := now
	if o.expireAbs {
		base = 0
	}
	at, fits := expiryAt(base, v, o.expireUnit)
	if !fits {
		return 0, appendExpireErr(dst, cmd), false
	}
	return at, dst, true
}
