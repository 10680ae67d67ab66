package resp

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/kuradb/kura/internal/row"
)

// The hash commands beyond HSET, HGET and their family (hashes.go): HKEYS, HVALS,
// HSTRLEN, HSETNX and HRANDFIELD. Fields come in field-name order, as HGETALL's do.

// visibleFields returns the visible field cells of r, in name order.
func visibleFields(r *row.Row, now int64) []row.Cell {
	var out []row.Cell
	for i := range r.Cells {
		if c := &r.Cells[i]; isField(c.Name) && c.Live(now) {
			out = append(out, *c)
		}
	}
	return out
}

// HKEYS key
func cmdHKeys(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.hashList(dst, args[1], s, true)
}

// HVALS key
func cmdHVals(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return h.hashList(dst, args[1], s, false)
}

// hashList replies with the hash's field names (names) or values.
func (h *Handler) hashList(dst, key []byte, s *Session, names bool) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, key, now)
	if !ok {
		return dst
	}
	fields := visibleFields(&r, now)
	dst = appendArray(dst, len(fields))
	for _, c := range fields {
		if names {
			dst = appendBulk(dst, c.Name[1:])
		} else {
			dst = appendBulk(dst, c.Value)
		}
	}
	return dst
}

// HSTRLEN key field: the length of the field's value, 0 when there is none.
func cmdHStrLen(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	if c := hashCell(&r, s.column(args[2]), now); c != nil {
		return appendInt(dst, int64(len(c.Value)))
	}
	return appendInt(dst, 0)
}

// HSETNX key field value sets the field only when the hash does not have it: 1 if it did.
// It writes what HSET writes (see doc.go).
func cmdHSetNX(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	key, f, v := args[1], args[2], args[3]
	_, dst, ok := h.checkFieldValues(dst, args)
	if !ok {
		return dst
	}
	now := h.now()
	r, dst, ok := h.readHash(s, dst, key, now)
	if !ok {
		return dst
	}
	col := fieldName(nil, f)
	if hashCell(&r, col, now) != nil {
		return appendInt(dst, 0)
	}
	ts := h.cfg.Clock.Now()
	if v == nil {
		v = []byte{}
	}
	cells := []row.Cell{
		{Name: stringColumn, Timestamp: ts, Tombstone: true},
		{Name: col, Value: v, Timestamp: ts, ExpiresAt: keyExpiry(&r, kindHash, now)},
	}
	if hasShards(&r) { // the new value replaces a counter's dead shards (counter.go)
		cells = sortDedupCells(shardTombstones(cells, &r, col, ts))
	}
	muts := s.mutations(1)
	muts[0] = row.Mutation{Key: key, Row: row.Row{Cells: cells}}
	if dst, ok = h.apply(s, dst, muts); !ok {
		return dst
	}
	return appendInt(dst, 1)
}

// maxRandomFields bounds the reply of HRANDFIELD with a negative count, which repeats
// fields and so is not bounded by the hash: Redis would try to build any reply asked for.
const maxRandomFields = 1 << 20

// HRANDFIELD key [count [WITHVALUES]]: without count, one random field (nil for a missing
// key); with a positive count, up to count distinct fields; with a negative one, exactly
// -count fields that may repeat. Redis's argument checks and texts.
func cmdHRandField(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if len(args) == 2 {
		return h.hrandOne(dst, args[1], s)
	}
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		return appendNotInt(dst)
	case n == math.MinInt64:
		return appendErr(dst, "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	case len(args) > 4 || (len(args) == 4 && !equalFold(args[3], "withvalues")):
		return appendSyntaxErr(dst)
	case len(args) == 4 && (n < -math.MaxInt64/2 || n > math.MaxInt64/2):
		return appendErr(dst, "ERR value is out of range")
	case n < -maxRandomFields:
		return appendErrf(dst, "ERR HRANDFIELD count %d asks for more than %d fields", n, maxRandomFields)
	}
	now := h.now()
	r, dst, ok := h.readHash(s, dst, args[1], now)
	if !ok {
		return dst
	}
	fields := visibleFields(&r, now)
	if n == 0 || len(fields) == 0 {
		return appendArray(dst, 0)
	}
	picked := h.rng.pick(len(fields), n)
	withValues := len(args) == 4
	if withValues && s.proto == resp3 {
		dst = appendArray(dst, len(picked))
		for _, i := range picked {
			dst = appendBulk(appendBulk(appendArray(dst, 2), fields[i].Name[1:]), fields[i].Value)
		}
		return dst
	}
	dst = appendArray(dst, len(picked)*(1+int(b2i(withValues))))
	for _, i := range picked {
		dst = appendBulk(dst, fields[i].Name[1:])
		if withValues {
			dst = appendBulk(dst, fields[i].Value)
		}
	}
	return dst
}

// hrandOne is HRANDFIELD without a count.
func (h *Handler) hrandOne(dst, key []byte, s *Session) []byte {
	now := h.now()
	r, dst, ok := h.readHash(s, dst, key, now)
	if !ok {
		return dst
	}
	fields := visibleFields(&r, now)
	if len(fields) == 0 {
		return s.proto.appendNull(dst)
	}
	return appendBulk(dst, fields[h.rng.pick(len(fields), -1)[0]].Name[1:])
}

// lockedRand is the handler's randomness (Config.Rand), shared by its connections.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// pick returns indexes into n items for HRANDFIELD's count: all of them in order when
// count >= n, count distinct ones in random order when 0 < count < n, and -count random
// ones, repeats allowed, when count < 0.
func (l *lockedRand) pick(n int, count int64) []int {
	if count >= int64(n) {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if count < 0 {
		out := make([]int, -count)
		for i := range out {
			out[i] = l.r.IntN(n)
		}
		return out
	}
	perm := l.r.Perm(n)
	return perm[:count]
}
