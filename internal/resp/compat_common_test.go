package resp

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/redistest"
)

// commonScript is one connection's session of the common commands (issue 34, point 5):
// every reply, errors included, must be what redis-server 7 sends, in both protocols. It
// leaves out what cannot match: random picks, client IDs and addresses, sizes, timings and
// help texts, and Redis's encodings of strings that APPEND or SETRANGE made (always raw
// in Redis).
var commonScript = []string{
	// TYPE, UNLINK, TOUCH.
	"SET s v", "HSET h a 1 b 2 c 3", "TYPE s", "TYPE h", "TYPE nope", "TOUCH s h nope s", "TOUCH",
	"UNLINK s nope", "UNLINK", "EXISTS s",
	// EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME.
	"SET k v", "EXPIRETIME k", "PEXPIRETIME k", "EXPIRETIME nope", "PEXPIRETIME nope",
	"EXPIREAT k 4000000000", "EXPIRETIME k", "PEXPIRETIME k", "PEXPIREAT k 4000000000500",
	"EXPIRETIME k", "PEXPIRETIME k", "EXPIREAT k 4100000000 NX", "EXPIREAT k 4100000000 XX",
	"EXPIREAT k 4000000000 GT", "EXPIREAT k 4000000000 LT", "EXPIRETIME k",
	"EXPIREAT nope 4000000000", "EXPIREAT k abc", "EXPIREAT k 4000000000 foo",
	"EXPIREAT k 4000000000 NX XX", "EXPIREAT k 4000000000 GT LT", "EXPIREAT k 9999999999999999",
	"PEXPIREAT k 99999999999999999999", "EXPIREAT k 1", "EXISTS k", "SET k v", "PEXPIREAT k -5",
	"EXISTS k", "EXPIREAT h 4000000000", "EXPIRETIME h", "PERSIST h", "EXPIRETIME h", "EXPIREAT",
	// GETDEL, GETEX.
	"SET g v", "GETDEL g", "GETDEL g", "GETDEL h", "GETDEL",
	"SET x v", "GETEX x", "GETEX x EXAT 4000000000", "EXPIRETIME x", "GETEX x PXAT 4000000000123",
	"PEXPIRETIME x", "GETEX x PERSIST", "EXPIRETIME x", "GETEX x PERSIST PERSIST",
	"GETEX x EX 10 EX 20", "TTL x", "GETEX x ex 10 px 10", "GETEX x persist ex 10",
	"GETEX x ex 10 persist", "GETEX x foo", "GETEX x ex", "GETEX x ex abc", "GETEX x ex 0",
	"GETEX x px -1", "GETEX x ex 9999999999999999", "GETEX nope", "GETEX nope ex abc",
	"GETEX nope foo", "GETEX h", "GETEX h ex 10", "GETEX x EXAT 1", "EXISTS x",
	// SETNX, SETEX, PSETEX, STRLEN.
	"SETNX a 1", "SETNX a 2", "GET a", "SETNX h 1", "SETNX", "SETEX b 100 v", "TTL b",
	"SETEX b 0 v", "SETEX b -1 v", "SETEX b abc v", "SETEX b 9999999999999999 v",
	"PSETEX c 100000 v", "TTL c", "PSETEX c 0 v", "SETEX h2 10 v", "SETEX b 10",
	"STRLEN a", "STRLEN nope", "STRLEN h", `SET e ""`, "STRLEN e",
	// APPEND, GETRANGE, SUBSTR, SETRANGE.
	"APPEND a1 abc", "APPEND a1 def", "GET a1", `APPEND a2 ""`, "EXISTS a2", "SET t v EX 100",
	"APPEND t x", "TTL t", "APPEND h x", "SET r Hello", "GETRANGE r 0 -1", "GETRANGE r -3 -1",
	"GETRANGE r 0 100", "GETRANGE r 3 1", "GETRANGE r -1 -3", "GETRANGE r -100 -90",
	"GETRANGE r -100 2", "GETRANGE r 5 10", "SUBSTR r 1 2", "GETRANGE nope 0 -1",
	"GETRANGE r a 1", "GETRANGE h 0 1", "GETRANGE r 0", `SETRANGE n 0 ""`, "EXISTS n",
	"SETRANGE n 3 ab", "GET n", "SET w hello EX 100", `SETRANGE w 1 ""`, `SETRANGE w 10 ""`,
	"SETRANGE w 1 EY", "GET w", "TTL w", "SETRANGE w 7 !", "GET w", "SETRANGE w -1 x",
	"SETRANGE w a x", "SETRANGE h 0 x", `SETRANGE h 0 ""`, "SETRANGE w 536870912 x",
	`SETRANGE nope2 536870912 ""`,
	// MSETNX.
	"MSETNX", "MSETNX m1 1 m2", "MSETNX m1 1 m2 2", "MGET m1 m2", "MSETNX m1 3 m3 4", "GET m3",
	"MSETNX h 1 m4 2", "EXISTS m4", "MSETNX d 1 d 2", "GET d",
	// HKEYS, HVALS, HSTRLEN, HSETNX, HRANDFIELD (fields inserted in name order, which
	// Redis's small hashes keep).
	"HKEYS h", "HVALS h", "HKEYS nope", "HVALS nope", "HKEYS a", "HSTRLEN h c", "HSTRLEN h z",
	"HSTRLEN nope f", "HSTRLEN a f", "HSETNX h a 9", "HSETNX h d 4", "HGETALL h", "HSETNX a f v",
	"HSETNX new f v", "HRANDFIELD nope", "HRANDFIELD nope 3", "HRANDFIELD nope -3 WITHVALUES",
	"HRANDFIELD h 0", "HRANDFIELD h 0 WITHVALUES", "HRANDFIELD h 10", "HRANDFIELD h 10 WITHVALUES",
	"HRANDFIELD new", "HRANDFIELD new -3", "HRANDFIELD new -2 WITHVALUES", "HRANDFIELD h x",
	"HRANDFIELD h 1 foo", "HRANDFIELD h 1 WITHVALUES x", "HRANDFIELD h -9223372036854775808",
	"HRANDFIELD h -9223372036854775807 WITHVALUES", "HRANDFIELD a", "HRANDFIELD a 0",
	"HRANDFIELD nope x",
	// OBJECT ENCODING, MEMORY USAGE.
	"SET i 12345", "SET i2 0123", "SET l2 12345678901234567890123456789012345678901234",
	"SET l 123456789012345678901234567890123456789012345", "OBJECT ENCODING i",
	"OBJECT ENCODING i2", "OBJECT ENCODING l2", "OBJECT ENCODING l", "OBJECT ENCODING h",
	"HSET big f 12345678901234567890123456789012345678901234567890123456789012345",
	"OBJECT ENCODING big", "OBJECT ENCODING nope", "OBJECT", "OBJECT foo", "OBJECT ENCODING",
	"OBJECT ENCODING a b", "MEMORY USAGE nope", "MEMORY USAGE a SAMPLES", "MEMORY USAGE a SAMPLES x",
	"MEMORY USAGE a SAMPLES -1", "MEMORY USAGE a foo 1", "MEMORY USAGE", "MEMORY", "MEMORY nope",
	// CLIENT (what does not name this connection), SLOWLOG, LATENCY.
	"CLIENT SETNAME conn", "CLIENT GETNAME", "CLIENT LIST TYPE master", "CLIENT LIST TYPE foo",
	"CLIENT LIST ID x", "CLIENT LIST ID", "CLIENT LIST TYPE", "CLIENT LIST foo", "CLIENT LIST ID 999999",
	"CLIENT KILL", "CLIENT KILL 1.2.3.4:5", "CLIENT KILL ADDR 1.2.3.4:5", "CLIENT KILL LADDR 1.2.3.4:5",
	"CLIENT KILL ID 0", "CLIENT KILL ID x", "CLIENT KILL ID 999999", "CLIENT KILL TYPE foo",
	"CLIENT KILL TYPE master", "CLIENT KILL USER nobody", "CLIENT KILL USER default",
	"CLIENT KILL SKIPME maybe", "CLIENT KILL foo bar", "CLIENT KILL ID 1 foo",
	"CONFIG GET slowlog-max-len", "CONFIG GET slowlog-log-slower-than", "SLOWLOG GET x", "SLOWLOG GET -2", "SLOWLOG GET 1 2", "SLOWLOG LEN x",
	"SLOWLOG", "SLOWLOG foo", "SLOWLOG RESET",
	"LATENCY HISTORY nope", "LATENCY HISTORY", "LATENCY HISTOGRAM nosuch", "LATENCY foo", "LATENCY",
	// FLUSHDB, FLUSHALL.
	"FLUSHALL foo", "FLUSHDB ASYNC SYNC", "FLUSHDB", "EXISTS h a", "SET a 1", "FLUSHALL SYNC",
	"GET a", "FLUSHALL ASYNC", "FLUSHDB sync",
}

// TestCommonCommandsReplyAsRedisServerDoes runs commonScript on one connection in RESP2
// and RESP3 against kura and a real redis-server, after FLUSHALL on both, and compares
// the replies as parsed.
func TestCommonCommandsReplyAsRedisServerDoes(t *testing.T) {
	redisAddr := redistest.Start(t)
	checkLeaks(t)
	ts := startServer(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			want := runCommonScript(t, redisAddr, proto)
			got := runCommonScript(t, ts.addr, proto)
			for i := range commonScript {
				if got[i] != want[i] {
					t.Errorf("%s:\nkura:\n%s\nredis-server:\n%s", commonScript[i], got[i], want[i])
				}
			}
		})
	}
}

func runCommonScript(t *testing.T, addr string, proto int) []string {
	c := dialRaw(t, addr)
	if proto == 3 {
		c.do("HELLO", "3")
	}
	if r := c.do("FLUSHALL"); r != "OK" {
		t.Fatalf("FLUSHALL on %s: %s", addr, r)
	}
	out := make([]string, len(commonScript))
	for i, line := range commonScript {
		args, err := splitArgs(line)
		if err != nil {
			t.Fatal(err)
		}
		words := make([]string, len(args))
		for j, a := range args {
			words[j] = string(a)
		}
		out[i] = c.do(words...)
	}
	return out
}
