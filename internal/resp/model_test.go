package resp

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var modelSeed = flag.Uint64("model-seed", 1, "seed for TestHandlerMatchesModel (0: time-based)")

// model is Redis's semantics for strings, hashes and key expiry written the obvious way
// (a map of typed values with one expiry per key), the reference that the row-based
// handler must agree with.
type model struct {
	now  int64 // microseconds
	keys map[string]*modelKey
}

type modelKey struct {
	str    *string
	hash   map[string]string
	expiry int64 // 0: none
}

// get returns the live key, dropping it when expired.
func (m *model) get(k string) *modelKey {
	v := m.keys[k]
	if v != nil && v.expiry != 0 && m.now >= v.expiry {
		delete(m.keys, k)
		return nil
	}
	return v
}

var (
	rOK       = reply{kind: '+', str: "OK"}
	rNil      = reply{kind: '$', null: true}
	rWrongTyp = reply{kind: '-', str: errWrongType}
)

func rInt(n int64) reply   { return reply{kind: ':', num: n} }
func rBulk(s string) reply { return reply{kind: '$', str: s} }

// do executes a command on the model; commands come from genCommand, so they are valid.
func (m *model) do(args []string) reply {
	switch args[0] {
	case "SET":
		return m.set(args)
	case "GET":
		v := m.get(args[1])
		switch {
		case v == nil:
			return rNil
		case v.str == nil:
			return rWrongTyp
		}
		return rBulk(*v.str)
	case "MSET":
		for i := 1; i < len(args); i += 2 {
			s := args[i+1]
			m.keys[args[i]] = &modelKey{str: &s}
		}
		return rOK
	case "MGET":
		var out []reply
		for _, k := range args[1:] {
			if v := m.get(k); v != nil && v.str != nil {
				out = append(out, rBulk(*v.str))
			} else {
				out = append(out, rNil)
			}
		}
		return reply{kind: '*', elems: out}
	case "DEL":
		var n int64
		for _, k := range args[1:] {
			if m.get(k) != nil {
				delete(m.keys, k)
				n++
			}
		}
		return rInt(n)
	case "EXISTS":
		var n int64
		for _, k := range args[1:] {
			if m.get(k) != nil {
				n++
			}
		}
		return rInt(n)
	}
	return m.doKeyCommand(args)
}

func (m *model) doKeyCommand(args []string) reply {
	switch args[0] {
	case "EXPIRE", "PEXPIRE":
		return m.expire(args)
	case "TTL", "PTTL":
		v := m.get(args[1])
		switch {
		case v == nil:
			return rInt(-2)
		case v.expiry == 0:
			return rInt(-1)
		}
		ms := (v.expiry - m.now + 500) / 1000
		if args[0] == "TTL" {
			return rInt((ms + 500) / 1000)
		}
		return rInt(ms)
	case "PERSIST":
		v := m.get(args[1])
		if v == nil || v.expiry == 0 {
			return rInt(0)
		}
		v.expiry = 0
		return rInt(1)
	}
	return m.doHash(args)
}

func (m *model) set(args []string) reply {
	k, val := args[1], args[2]
	var nx, xx, get, keep bool
	var expiry int64
	for i := 3; i < len(args); i++ {
		switch args[i] {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GET":
			get = true
		case "KEEPTTL":
			keep = true
		case "EX", "PX":
			n, _ := strconv.ParseInt(args[i+1], 10, 64)
			expiry = m.now + n*map[string]int64{"EX": 1e6, "PX": 1e3}[args[i]]
			i++
		}
	}
	old := m.get(k)
	if get && old != nil && old.str == nil {
		return rWrongTyp
	}
	prev := rNil
	if old != nil && old.str != nil {
		prev = rBulk(*old.str)
	}
	if (nx && old != nil) || (xx && old == nil) {
		if get {
			return prev
		}
		return rNil
	}
	if keep && old != nil {
		expiry = old.expiry
	}
	m.keys[k] = &modelKey{str: &val, expiry: expiry}
	if get {
		return prev
	}
	return rOK
}

func (m *model) expire(args []string) reply {
	n, _ := strconv.ParseInt(args[2], 10, 64)
	unit := int64(1e6)
	if args[0] == "PEXPIRE" {
		unit = 1e3
	}
	at := m.now + n*unit
	v := m.get(args[1])
	if v == nil {
		return rInt(0)
	}
	if len(args) > 3 {
		cur := v.expiry
		ok := map[string]bool{
			"NX": cur == 0,
			"XX": cur != 0,
			"GT": cur != 0 && at > cur,
			"LT": cur == 0 || at < cur,
		}[args[3]]
		if !ok {
			return rInt(0)
		}
	}
	if at <= m.now {
		delete(m.keys, args[1])
	} else {
		v.expiry = at
	}
	return rInt(1)
}

// hash returns the key's hash for a hash command: nil with ok for a missing key, ok=false
// for a string.
func (m *model) hash(k string) (*modelKey, bool) {
	v := m.get(k)
	return v, v == nil || v.str == nil
}

func (m *model) doHash(args []string) reply {
	v, ok := m.hash(args[1])
	if !ok {
		return rWrongTyp
	}
	if v == nil {
		v = &modelKey{hash: map[string]string{}}
	}
	switch args[0] {
	case "HSET":
		var n int64
		for i := 2; i < len(args); i += 2 {
			if _, had := v.hash[args[i]]; !had {
				n++
			}
			v.hash[args[i]] = args[i+1]
		}
		m.keys[args[1]] = v
		return rInt(n)
	case "HGET":
		if s, had := v.hash[args[2]]; had {
			return rBulk(s)
		}
		return rNil
	case "HMGET":
		var out []reply
		for _, f := range args[2:] {
			if s, had := v.hash[f]; had {
				out = append(out, rBulk(s))
			} else {
				out = append(out, rNil)
			}
		}
		return reply{kind: '*', elems: out}
	case "HDEL":
		var n int64
		for _, f := range args[2:] {
			if _, had := v.hash[f]; had {
				delete(v.hash, f)
				n++
			}
		}
		if len(v.hash) == 0 {
			delete(m.keys, args[1])
		}
		return rInt(n)
	case "HLEN":
		return rInt(int64(len(v.hash)))
	case "HEXISTS":
		_, had := v.hash[args[2]]
		return rInt(b2i(had))
	case "HGETALL":
		var out []reply
		for _, f := range slices.Sorted(mapKeys(v.hash)) {
			out = append(out, rBulk(f), rBulk(v.hash[f]))
		}
		return reply{kind: '*', elems: out}
	}
	panic("model: unknown command " + args[0])
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// genCommand draws a valid command over a tiny key and field space so that commands
// collide, overwrite types and race expiries.
func genCommand(r *rand.Rand) []string {
	key := func() string { return []string{"a", "b", "c"}[r.IntN(3)] }
	field := func() string { return []string{"f", "g", "h"}[r.IntN(3)] }
	val := func() string { return strconv.Itoa(r.IntN(100)) }
	switch r.IntN(20) {
	case 0, 1:
		args := []string{"SET", key(), val()}
		args = append(args, pick(r, nil, []string{"NX"}, []string{"XX"})...)
		args = append(args, pick(r, nil, []string{"GET"})...)
		return append(args, pick(r, nil, []string{"EX", strconv.Itoa(1 + r.IntN(3))},
			[]string{"PX", strconv.Itoa(1 + r.IntN(3000))}, []string{"KEEPTTL"})...)
	case 2:
		return []string{"GET", key()}
	case 3:
		return []string{"MSET", key(), val(), key(), val()}
	case 4:
		return []string{"MGET", key(), key()}
	case 5:
		return []string{"DEL", key(), key()}
	case 6:
		return []string{"EXISTS", key(), key()}
	case 7, 8:
		cmd := pick(r, []string{"EXPIRE", strconv.Itoa(r.IntN(5) - 1)}, []string{"PEXPIRE", strconv.Itoa(r.IntN(4000) - 500)})
		args := append([]string{cmd[0], key(), cmd[1]}, pick(r, nil, nil, []string{"NX"}, []string{"XX"}, []string{"GT"}, []string{"LT"})...)
		return args
	case 9:
		return []string{pick(r, []string{"TTL"}, []string{"PTTL"})[0], key()}
	case 10:
		return []string{"PERSIST", key()}
	case 11, 12, 13:
		return []string{"HSET", key(), field(), val(), field(), val()}
	case 14:
		return []string{"HGET", key(), field()}
	case 15:
		return []string{"HMGET", key(), field(), field()}
	case 16:
		return []string{"HDEL", key(), field(), field()}
	case 17:
		return []string{"HLEN", key()}
	case 18:
		return []string{"HEXISTS", key(), field()}
	}
	return []string{"HGETALL", key()}
}

func pick(r *rand.Rand, choices ...[]string) []string { return choices[r.IntN(len(choices))] }

func TestHandlerMatchesModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -model-seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	for run := range 50 {
		e := newHandlerEnv(t, Config{})
		m := &model{now: e.clock.read(), keys: map[string]*modelKey{}}
		s := e.h.NewSession()
		var history []string
		for range 200 {
			if r.IntN(4) == 0 {
				d := int64(r.IntN(1500)) * microsPerMilli
				e.clock.advance(d)
				m.now += d
				history = append(history, fmt.Sprintf("advance %dms", d/microsPerMilli))
			}
			args := genCommand(r)
			bargs := make([][]byte, len(args))
			for i, a := range args {
				bargs[i] = []byte(a)
			}
			got, want := e.do(t, s, bargs), render(m.do(args))
			history = append(history, strings.Join(args, " ")+" -> "+got)
			if got != want {
				t.Fatalf("run %d: %s: got %s, model says %s\nhistory:\n%s", run, strings.Join(args, " "), got, want,
					strings.Join(history, "\n"))
			}
		}
	}
}
