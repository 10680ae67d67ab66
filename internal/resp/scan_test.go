package resp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/redistest"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/scan"
)

// Scan makes the reference store a Scanner, as a single node's store is: one pass over
// its rows per page, keeping the keys of the lowest tokens from the cursor on.
func (m *memStore) Scan(_ string, cursor uint64, count int) ([]row.Mutation, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, 0, m.fail
	}
	pass := func(sel *scan.Selector) {
		for k, r := range m.rows {
			sel.Add(ring.TokenOf([]byte(k)), []byte(k), &r)
		}
	}
	sel := scan.NewSelector(scan.From(cursor), count)
	pass(sel)
	rows, through, stuck := sel.Result()
	if stuck {
		sel = scan.Whole(scan.From(cursor))
		pass(sel)
		rows, through, _ = sel.Result()
	}
	return rows, scan.After(through), nil
}

var _ Scanner = (*memStore)(nil)

// seedOf returns a randomized test's seed, KURA_SCAN_SEED when set, and prints it.
func seedOf(t *testing.T) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("KURA_SCAN_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("KURA_SCAN_SEED: %v", err)
		}
	}
	t.Logf("seed %d (KURA_SCAN_SEED=%d reruns it)", s, s)
	return s
}

func TestGlobMatchesAsRedisDoes(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", false}, {"*", "anything", true}, {"", "", true}, {"", "a", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h*llo", "hllo", true}, {"h*llo", "heeeello", true},
		{"h[ae]llo", "hello", true}, {"h[ae]llo", "hallo", true}, {"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true}, {"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hallo", true}, {"h[a-b]llo", "hbllo", true}, {"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true}, // a range written backwards
		{`h\*llo`, "h*llo", true}, {`h\*llo`, "hello", false}, {`[\]]`, "]", true}, {`[\-]`, "-", true},
		{"a[bc", "ab", true}, {"a[bc", "ad", false}, // an unterminated set takes the rest
		{"a[", "a", false}, {`a\`, `a\`, true}, {"[]", "]", false},
		{"**a**", "xa", true}, {"a*", "a", true}, {"*a", "ba", true}, {"*a", "ab", false},
		{"user:*:name", "user:42:name", true}, {"user:*:name", "user:42:mail", false},
		{"\xff", "\xff", true}, {"[\x01-\xff]", "a", false}, // 0xff is -1 to C's signed char
	} {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// A pathological pattern is decided quickly (Redis's skipLongerMatches).
func TestGlobFailsFastOnManyStars(t *testing.T) {
	p := []byte("a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b")
	s := make([]byte, 4000)
	for i := range s {
		s[i] = 'a'
	}
	if globMatch(p, s) {
		t.Fatal("matched")
	}
}

// Random patterns over a small alphabet, with every special byte, against the keys of a
// real redis-server: KEYS there and globMatch here agree on every key.
func TestGlobAgreesWithRedisServer(t *testing.T) {
	addr := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	rng := rand.New(rand.NewPCG(seedOf(t), 3))
	alphabet := []byte("ab-]^\\[*?\x80\xff")
	str := func(n int, from []byte) string {
		b := make([]byte, 1+rng.IntN(n))
		for i := range b {
			b[i] = from[rng.IntN(len(from))]
		}
		return string(b)
	}
	var keys []string
	for range 200 {
		keys = append(keys, str(5, []byte("ab-]^\\[\x80\xff")))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		p := str(6, alphabet)
		want, err := c.Keys(ctx, p).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		var got []string
		for _, k := range keys {
			if globMatch([]byte(p), []byte(k)) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %q: kura matches %q, redis-server %q", p, got, want)
		}
	}
}

// SCAN through go-redis's iterator, with pages of random sizes, returns every key once,
// and its options and KEYS agree with a filter of the whole keyspace.
func TestScanThroughGoRedisReturnsEveryKeyOnce(t *testing.T) {
	ts := startServer(t, Config{KeysLimit: 450})
	rng := rand.New(rand.NewPCG(seedOf(t), 4))
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		c := ts.client(t, &redis.Options{Protocol: proto})
		want := map[string]bool{}
		for i := range 500 {
			k := fmt.Sprintf("key:%d", i)
			if i%5 == 0 {
				if err := c.HSet(ctx, k, "f", "v").Err(); err != nil {
					t.Fatal(err)
				}
			} else if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			want[k] = true
		}
		if err := c.Del(ctx, "key:1", "key:2").Err(); err != nil {
			t.Fatal(err)
		}
		delete(want, "key:1")
		delete(want, "key:2")
		got := map[string]int{}
		cursor := uint64(0)
		for {
			keys, next, err := c.Scan(ctx, cursor, "", int64(1+rng.IntN(40))).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				got[k]++
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("RESP%d: SCAN returned %d keys, want %d", proto, len(got), len(want))
		}
		for k, n := range got {
			if !want[k] || n != 1 {
				t.Fatalf("RESP%d: %q returned %d times (want: %v)", proto, k, n, want[k])
			}
		}
		var hashes []string
		it := c.ScanType(ctx, 0, "key:1*", 7, "hash").Iterator()
		for it.Next(ctx) {
			hashes = append(hashes, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(hashes)
		var wantHashes []string
		for k := range want {
			if n, _ := strconv.Atoi(k[4:]); n%5 == 0 && k[4] == '1' {
				wantHashes = append(wantHashes, k)
			}
		}
		slices.Sort(wantHashes)
		if !slices.Equal(hashes, wantHashes) {
			t.Errorf("RESP%d: SCAN MATCH key:1* TYPE hash: %v, want %v", proto, hashes, wantHashes)
		}
		keys, err := c.Keys(ctx, "key:4?").Result()
		if slices.Sort(keys); err != nil || !slices.Equal(keys, []string{"key:40", "key:41", "key:42", "key:43", "key:44", "key:45", "key:46", "key:47", "key:48", "key:49"}) {
			t.Errorf("RESP%d: KEYS key:4?: %v %v", proto, keys, err)
		}
		if _, err := c.Keys(ctx, "*").Result(); err == nil || err.Error() != "ERR KEYS matched more than 450 keys (keys-limit): use SCAN, which pages" {
			t.Errorf("RESP%d: KEYS past the limit: %v", proto, err)
		}
		fields, cur, err := c.HScan(ctx, "key:0", 0, "", 1).Result()
		if err != nil || cur != 0 || !slices.Equal(fields, []string{"f", "v"}) {
			t.Errorf("RESP%d: HSCAN: %v %d %v", proto, fields, cur, err)
		}
	}
}

// noScanStore is a Store without the Scanner capability.
type noScanStore struct{ Store }

func TestScanWithoutAScannerIsAnError(t *testing.T) {
	e := newHandlerEnv(t, Config{})
	h, err := NewHandler(Config{Store: noScanStore{e.store}, Clock: e.clock.hlc()})
	if err != nil {
		t.Fatal(err)
	}
	s := h.NewSession()
	for _, cmd := range [][]string{{"SCAN", "0"}, {"KEYS", "*"}} {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		if got := string(h.Do(nil, args, s)); got != "-"+errNoScanner+"\r\n" {
			t.Errorf("%v: %q", cmd, got)
		}
	}
}

// SCAN, KEYS and HSCAN reply as a real redis-server does, lists compared as sets (kura's
// order is token order, Redis's its hash table's): errors, MATCH, TYPE in any case and of
// types kura does not have, and HSCAN's options.
func TestScanRepliesAsRedisServerDoes(t *testing.T) {
	redisAddr := redistest.Start(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	setup := [][]any{{"MSET", "k1", "a", "k2", "b", "k3", "c", "k10", "d", "other", "e"},
		{"HSET", "h", "f1", "1", "f2", "2", "g", "3"}, {"SET", "gone", "x"}, {"DEL", "gone"}}
	script := [][]any{
		{"SCAN", "0", "COUNT", "1000"}, {"SCAN", "0", "COUNT", "1000", "MATCH", "k[1-2]*"},
		{"SCAN", "0", "COUNT", "1000", "TYPE", "hash"}, {"SCAN", "0", "COUNT", "1000", "TYPE", "STRING"},
		{"SCAN", "0", "COUNT", "1000", "TYPE", "list"}, {"SCAN", "0", "COUNT", "1000", "TYPE", "nosuchtype"},
		{"SCAN", "0", "MATCH", "*", "COUNT", "1000"}, {"SCAN", "x"}, {"SCAN", "0", "COUNT", "0"},
		{"SCAN", "0", "COUNT", "-1"}, {"SCAN", "0", "COUNT", "x"}, {"SCAN", "0", "MATCH"}, {"SCAN", "0", "foo", "bar"},
		{"KEYS", "k?"}, {"KEYS", "*"}, {"KEYS", "k1"}, {"KEYS", "nope"}, {"KEYS", "[^k]*"},
		{"HSCAN", "h", "0"}, {"HSCAN", "h", "0", "MATCH", "f*"}, {"HSCAN", "h", "0", "COUNT", "1"},
		{"HSCAN", "nope", "0"}, {"HSCAN", "k1", "0"}, {"HSCAN", "h", "x"}, {"HSCAN", "h", "0", "COUNT", "0"},
	}
	run := func(addr string) []string {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer c.Close()
		for _, cmd := range setup {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		out := make([]string, len(script))
		for i, cmd := range script {
			v, err := c.Do(ctx, cmd...).Result()
			if err != nil {
				out[i] = "error: " + err.Error()
				continue
			}
			out[i] = fmt.Sprint(normalize(v, cmd[0] == "HSCAN"))
		}
		return out
	}
	want, got := run(redisAddr), run(ts.addr)
	for i := range script {
		if got[i] != want[i] {
			t.Errorf("%v:\n kura         %s\n redis-server %s", script[i], got[i], want[i])
		}
	}
}

// normalize sorts the lists of a SCAN or KEYS reply (HSCAN's as field-value pairs).
func normalize(v any, pairs bool) any {
	sortList := func(l []any) []any {
		if !pairs {
			slices.SortFunc(l, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			return l
		}
		var ps [][2]any
		for i := 0; i+1 < len(l); i += 2 {
			ps = append(ps, [2]any{l[i], l[i+1]})
		}
		slices.SortFunc(ps, func(a, b [2]any) int { return strings.Compare(fmt.Sprint(a[0]), fmt.Sprint(b[0])) })
		out := []any{}
		for _, p := range ps {
			out = append(out, p[0], p[1])
		}
		return out
	}
	switch l := v.(type) {
	case []any:
		if len(l) == 2 {
			if inner, ok := l[1].([]any); ok {
				return []any{l[0], sortList(inner)}
			}
		}
		return sortList(l)
	}
	return v
}

// FuzzGlobMatch: any pattern is decided without a panic, a pattern without glob bytes
// matches exactly itself, and a string escaped byte by byte matches itself alone.
func FuzzGlobMatch(f *testing.F) {
	f.Add([]byte("h[a-c]*o?"), []byte("hello"))
	f.Add([]byte(`a\`), []byte(`a\`))
	f.Add([]byte("[^"), []byte("x"))
	f.Fuzz(func(t *testing.T, p, s []byte) {
		got := globMatch(p, s)
		if !isGlob(p) && len(s) > 0 && got != (string(p) == string(s)) {
			t.Fatalf("literal %q against %q: %v", p, s, got)
		}
		if len(s) == 0 {
			return
		}
		var esc []byte
		for _, c := range s {
			esc = append(esc, '\\', c)
		}
		if !globMatch(esc, s) {
			t.Fatalf("%q does not match its escape %q", s, esc)
		}
		if len(p) > 0 && string(p) != string(s) && globMatch(esc, p) {
			t.Fatalf("the escape of %q matches %q", s, p)
		}
	})
}
