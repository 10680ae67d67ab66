package resp

import (
	"strconv"

	"github.com/kuradb/kura/internal/row"
)

// SCAN, KEYS and HSCAN. The keyspace is listed through the store's Scanner (in a cluster,
// the coordinator reading every token range at the connection's level); the handler only
// parses, filters what is visible (MATCH, TYPE, expired and deleted keys) and replies.

const (
	// defaultScanCount is Redis's COUNT default.
	defaultScanCount = 10
	// maxScanCount caps the keys one SCAN page examines, whatever COUNT asks: a page is
	// held in memory and, in a cluster, read from a quorum of replicas before the reply.
	// COUNT is a hint in Redis too.
	maxScanCount = 1 << 16
	// keysPageCount is how many keys each of KEYS's pages examines.
	keysPageCount = 4096
)

const (
	errInvalidCursor = "ERR invalid cursor"
	errNoScanner     = "ERR this store cannot list its keys (SCAN, KEYS)"
)

// scanOptions are SCAN's and HSCAN's options, parsed as Redis parses them.
type scanOptions struct {
	count    int
	pattern  []byte // nil: every key (also for MATCH *)
	typed    bool   // TYPE given
	typ      kind   // the type TYPE names; kindNone for a name kura has no keys of
	noValues bool
}

// parseScanOptions parses the options after the cursor. It writes the error reply and
// returns ok=false for bad ones: Redis's texts, "value is not an integer" for a COUNT
// that is not one, a syntax error for COUNT below 1 or an unknown option.
func parseScanOptions(dst []byte, opts [][]byte, allowType, allowNoValues bool) (scanOptions, []byte, bool) {
	o := scanOptions{count: defaultScanCount}
	for i := 0; i < len(opts); {
		pair := len(opts)-i >= 2
		switch {
		case pair && equalFold(opts[i], "count"):
			n, ok := parseInt(opts[i+1])
			if !ok {
				return o, appendNotInt(dst), false
			}
			if n < 1 {
				return o, appendSyntaxErr(dst), false
			}
			o.count = int(min(n, maxScanCount))
			i += 2
		case pair && equalFold(opts[i], "match"):
			o.pattern = opts[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
			i += 2
		case pair && allowType && equalFold(opts[i], "type"):
			o.typed = true
			switch t := opts[i+1]; {
			case equalFold(t, "string"):
				o.typ = kindString
			case equalFold(t, "hash"):
				o.typ = kindHash
			default: // list, set, zset, stream or a name Redis 7.0 would not know either: no key matches
				o.typ = kindNone
			}
			i += 2
		case allowNoValues && equalFold(opts[i], "novalues"):
			o.noValues = true
			i++
		default:
			return o, appendSyntaxErr(dst), false
		}
	}
	return o, dst, true
}

// parseCursor parses a cursor: a decimal unsigned 64-bit integer.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 || b[0] == '+' {
		return 0, false
	}
	c, err := strconv.ParseUint(string(b), 10, 64)
	return c, err == nil
}

// listed reports whether key, stored as r, is one SCAN and KEYS return under o: visible
// (a live string or hash at now; counters folded), of o's type, matching o's pattern.
func listed(key []byte, r *row.Row, now int64, o *scanOptions) bool {
	if o.pattern != nil && !globMatch(o.pattern, key) {
		return false
	}
	folded := fold(*r, now)
	k := kindOf(&folded, now)
	return k != kindNone && (!o.typed || k == o.typ)
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] replies with the next cursor (a
// bulk string, "0" after the last page) and the keys of one page, in token order.
func cmdScan(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	cursor, ok := parseCursor(args[1])
	if !ok {
		return appendErr(dst, errInvalidCursor)
	}
	o, dst, ok := parseScanOptions(dst, args[2:], true, false)
	if !ok {
		return dst
	}
	sc, ok := h.store.(Scanner)
	if !ok {
		return appendErr(dst, errNoScanner)
	}
	rows, next, err := sc.Scan(s.consistency, cursor, o.count)
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	n := 0
	for i := range rows {
		if listed(rows[i].Key, &rows[i].Row, now, &o) {
			rows[n] = rows[i]
			n++
		}
	}
	dst = appendArray(dst, 2)
	var num [20]byte
	dst = appendBulk(dst, strconv.AppendUint(num[:0], next, 10))
	dst = appendArray(dst, n)
	for _, m := range rows[:n] {
		dst = appendBulk(dst, m.Key)
	}
	return dst
}

// KEYS pattern replies with every key matching pattern, in token order, or an error when
// more than KeysLimit match. A pattern without glob characters is one key, read directly;
// any other reads the whole keyspace, a page at a time.
func cmdKeys(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	o := scanOptions{pattern: args[1]}
	if len(o.pattern) == 1 && o.pattern[0] == '*' {
		o.pattern = nil
	}
	now := h.now()
	if o.pattern != nil && !isGlob(o.pattern) {
		r, err := h.read(s, o.pattern)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		if kindOf(&r, now) == kindNone {
			return appendArray(dst, 0)
		}
		return appendBulk(appendArray(dst, 1), o.pattern)
	}
	sc, ok := h.store.(Scanner)
	if !ok {
		return appendErr(dst, errNoScanner)
	}
	var keys [][]byte
	for cursor := uint64(0); ; {
		rows, next, err := sc.Scan(s.consistency, cursor, keysPageCount)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		for i := range rows {
			if !listed(rows[i].Key, &rows[i].Row, now, &o) {
				continue
			}
			if len(keys) == h.cfg.KeysLimit {
				return appendErrf(dst, "ERR KEYS matched more than %d keys (keys-limit): use SCAN, which pages", h.cfg.KeysLimit)
			}
			keys = append(keys, rows[i].Key)
		}
		if next == 0 {
			break
		}
		if next <= cursor { // cursors only grow: a store that repeats one would loop forever
			return appendErrf(dst, "%s store returned cursor %d after %d", PrefixStore, next, cursor)
		}
		cursor = next
	}
	dst = appendArray(dst, len(keys))
	for _, k := range keys {
		dst = appendBulk(dst, k)
	}
	return dst
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES] replies with cursor "0" and
// every matching field (with its value, unless NOVALUES) in field order, whatever the
// cursor and COUNT: a hash is one row, read whole by every call, so pages would save
// nothing and cost a read each (Redis too replies whole for small hashes).
func cmdHScan(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if _, ok := parseCursor(args[2]); !ok {
		return appendErr(dst, errInvalidCursor)
	}
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	o, dst, ok := parseScanOptions(dst, args[3:], false, true)
	if !ok {
		return dst
	}
	n := 0
	for i := range r.Cells {
		if c := &r.Cells[i]; isField(c.Name) && c.Live(now) && (o.pattern == nil || globMatch(o.pattern, c.Name[1:])) {
			r.Cells[n] = *c
			n++
		}
	}
	dst = appendBulkString(appendArray(dst, 2), "0")
	if o.noValues {
		dst = appendArray(dst, n)
	} else {
		dst = appendArray(dst, 2*n)
	}
	for _, c := range r.Cells[:n] {
		dst = appendBulk(dst, c.Name[1:])
		if !o.noValues {
			dst = appendBulk(dst, c.Value)
		}
	}
	return dst
}
