package resp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/redistest"
)

// counterScript is one connection's session of counters and transactions; every reply,
// errors included, must be what redis-server replies.
var counterScript = []string{
	"INCR n", "INCRBY n 5", "DECR n", "DECRBY n 10", "GET n", "INCRBY n abc", "INCRBY n 1.5",
	"SET s 10", "INCR s", "SET s abc", "INCR s", "INCRBYFLOAT s 1", "SET s 9223372036854775807",
	"INCR s", "SET s -9223372036854775808", "DECR s", "DECRBY n -9223372036854775808",
	"INCRBYFLOAT f 10.5", "INCRBYFLOAT f 0.25", "GET f", "INCR f", "INCRBYFLOAT f -0.75",
	"INCR f", "INCRBYFLOAT f inf", "INCRBYFLOAT f nope", "INCRBYFLOAT f 5.0e3",
	"HSET h f 1", "INCR h", "HINCRBY h f 5", "HINCRBYFLOAT h f 1.5", "HINCRBY h f 1",
	"HINCRBY h g 2", "HSET h g x", "HINCRBY h g 1", "HINCRBYFLOAT h g 1", "HGETALL h",
	"SET str x", "HINCRBY str f 1",
	"INCR rl", "EXPIRE rl 100", "INCR rl", "TTL rl", "PERSIST rl", "TTL rl",
	"DEL n", "INCR n",
	"MULTI", "SET t 1", "INCR t", "GET t", "INCRBY t nope", "HSET t f v", "EXEC", "GET t",
	"MULTI", "SET t 2", "NOPE", "EXEC", "GET t",
	"EXEC", "DISCARD", "MULTI", "MULTI", "WATCH t", "DISCARD",
	"WATCH t", "MULTI", "INCR t", "EXEC", "UNWATCH",
}

// TestCountersAndTransactionsReplyAsRedisServerDoes runs counterScript on one go-redis
// connection in RESP2 and RESP3 against kura and a real redis-server.
func TestCountersAndTransactionsReplyAsRedisServerDoes(t *testing.T) {
	redisAddr := redistest.Start(t)
	checkLeaks(t)
	ts := startServer(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			want := runScript(t, redisAddr, proto, "redis-server")
			got := runScript(t, ts.addr, proto, "kura")
			for i := range counterScript {
				if got[i] != want[i] {
					t.Errorf("%s: kura %s, redis-server %s", counterScript[i], got[i], want[i])
				}
			}
		})
	}
}

// runScript runs counterScript on one connection to addr, after FLUSHALL on redis-server,
// and returns each reply as text.
func runScript(t *testing.T, addr string, proto int, name string) []string {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, PoolSize: 1})
	defer c.Close()
	conn := c.Conn()
	defer conn.Close()
	if name == "redis-server" {
		if err := conn.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, k := range []string{"n", "s", "f", "h", "str", "rl", "t"} {
			conn.Del(ctx, k)
		}
	}
	out := make([]string, len(counterScript))
	for i, line := range counterScript {
		var args []any
		for _, a := range strings.Fields(line) {
			args = append(args, a)
		}
		v, err := conn.Do(ctx, args...).Result()
		switch {
		case err == redis.Nil:
			out[i] = "(nil)"
		case err != nil:
			out[i] = "(error) " + err.Error()
		default:
			out[i] = fmt.Sprintf("%v", v)
		}
		if strings.HasPrefix(line, "TTL") && out[i] != "-1" && out[i] != "-2" {
			out[i] = "positive" // a second may pass between the two runs
		}
	}
	return out
}
