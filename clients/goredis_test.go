package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// goRedis is go-redis's part of the matrix. It runs in the test's own process, since the
// test is written in the client's language; like the other programs it prints the
// canonical lines to w.
func goRedis(ctx context.Context, w io.Writer, addr, other, prefix string) {
	variants := []struct {
		name  string
		proto int
	}{{"resp3-default", 0}, {"resp2", 2}} // go-redis v9 sends HELLO 3 unless told otherwise
	for _, v := range variants {
		r := redis.NewClient(&redis.Options{Addr: addr, Protocol: v.proto, MaxRetries: -1, ReadTimeout: 20 * time.Second})
		o := redis.NewClient(&redis.Options{Addr: other, Protocol: v.proto, MaxRetries: -1, ReadTimeout: 20 * time.Second})
		for _, c := range goRedisChecks {
			g := &gr{ctx: ctx, r: r, o: o, p: prefix + ":" + v.name + ":" + c.name + ":"}
			c.run(g)
			fmt.Fprintln(w, v.name, c.name, g.line())
		}
		r.Close()
		o.Close()
	}
}

var goRedisChecks = []struct {
	name string
	run  func(g *gr)
}{
	{"proto", func(g *gr) {
		info, err := g.r.ClientInfo(g.ctx).Result()
		if g.fail(err) {
			return
		}
		g.add("resp", info.Resp)
	}},
	{"strings", grStrings},
	{"set_options", grSetOptions},
	{"hashes", grHashes},
	{"ttl", grTTL},
	{"scan", grScan},
	{"counters", grCounters},
	{"pipeline", grPipeline},
	{"multi", grMulti},
}

// gr is one check's connections, key prefix and findings: name=value pairs in order, or
// the first error, which ends the check.
type gr struct {
	ctx   context.Context
	r, o  *redis.Client
	p     string
	pairs []string
	err   error
}

// put returns what records a command's result as name=value, or its error (redis.Nil is
// a null reply).
func (g *gr) put(name string) func(v any, err error) {
	return func(v any, err error) {
		if errors.Is(err, redis.Nil) {
			v, err = nil, nil
		}
		if !g.fail(err) {
			g.add(name, v)
		}
	}
}

// add records name=value.
func (g *gr) add(name string, v any) {
	if g.err == nil {
		g.pairs = append(g.pairs, name+"="+text(v))
	}
}

func (g *gr) fail(err error) bool {
	if err != nil && g.err == nil {
		g.err = err
	}
	return g.err != nil
}

func (g *gr) line() string {
	if g.err != nil {
		return "ERROR " + strings.ReplaceAll(g.err.Error(), "\n", " ")
	}
	return strings.Join(g.pairs, " ")
}

// text prints a reply in the matrix's canonical form.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case bool:
		if v {
			return "1"
		}
		return "0"
	case time.Duration: // TTL and PTTL keep -1 and -2 as they came
		if v < 0 {
			return fmt.Sprint(int64(v))
		}
		return fmt.Sprint(int64(v / time.Second))
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = text(x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, k+":"+v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v)
}

// within prints lo..hi when d (a TTL) falls in the range, so both servers print the same.
func within(d time.Duration, unit time.Duration, lo, hi int64) string {
	if n := int64(d / unit); d > 0 && n >= lo && n <= hi {
		return fmt.Sprintf("%d..%d", lo, hi)
	}
	return text(d)
}

func grStrings(g *gr) {
	r, p, ctx := g.r, g.p, g.ctx
	r.Del(ctx, p+"k1", p+"k2", p+"k3", p+"none")
	g.put("set")(r.Set(ctx, p+"k1", "v1", 0).Result())
	g.put("get")(r.Get(ctx, p+"k1").Result())
	g.put("get_other")(g.o.Get(ctx, p+"k1").Result())
	g.put("get_missing")(r.Get(ctx, p+"none").Result())
	g.put("mset")(r.MSet(ctx, p+"k2", "a", p+"k3", "b").Result())
	g.put("mget")(r.MGet(ctx, p+"k1", p+"k2", p+"k3", p+"none").Result())
	g.put("exists")(r.Exists(ctx, p+"k1", p+"k2", p+"none").Result())
	g.put("del")(r.Del(ctx, p+"k2", p+"none").Result())
	g.put("exists_after")(r.Exists(ctx, p+"k2").Result())
}

func grSetOptions(g *gr) {
	r, p, ctx := g.r, g.p, g.ctx
	r.Del(ctx, p+"k", p+"none")
	g.put("nx")(r.SetArgs(ctx, p+"k", "v1", redis.SetArgs{Mode: "NX"}).Result())
	g.put("nx_again")(r.SetArgs(ctx, p+"k", "v2", redis.SetArgs{Mode: "NX"}).Result())
	g.put("xx")(r.SetArgs(ctx, p+"k", "v3", redis.SetArgs{Mode: "XX"}).Result())
	g.put("xx_missing")(r.SetArgs(ctx, p+"none", "x", redis.SetArgs{Mode: "XX"}).Result())
	g.put("get_option")(r.SetArgs(ctx, p+"k", "v4", redis.SetArgs{Get: true}).Result())
	g.put("value")(r.Get(ctx, p+"k").Result())
}

func grHashes(g *gr) {
	r, h, ctx := g.r, g.p+"h", g.ctx
	r.Del(ctx, h, g.p+"none")
	g.put("hset")(r.HSet(ctx, h, "f1", "v1", "f2", "v2").Result())
	g.put("hset_update")(r.HSet(ctx, h, "f1", "x").Result())
	g.put("hget")(r.HGet(ctx, h, "f1").Result())
	g.put("hget_missing")(r.HGet(ctx, h, "nofield").Result())
	g.put("hgetall")(r.HGetAll(ctx, h).Result())
	g.put("hlen")(r.HLen(ctx, h).Result())
	g.put("hdel")(r.HDel(ctx, h, "f2", "nofield").Result())
	g.put("hlen_after")(r.HLen(ctx, h).Result())
	g.put("hgetall_other")(g.o.HGetAll(ctx, h).Result())
	g.put("hgetall_missing")(r.HGetAll(ctx, g.p+"none").Result())
}

func grTTL(g *gr) {
	r, k, px, none, ctx := g.r, g.p+"k", g.p+"px", g.p+"none", g.ctx
	r.Del(ctx, k, px, none)
	g.put("set_px")(r.Set(ctx, px, "v", 2000*time.Millisecond).Result())
	start := time.Now()
	g.add("pttl", within(r.PTTL(ctx, px).Val(), time.Millisecond, 1, 2000))
	g.put("set")(r.Set(ctx, k, "v", 0).Result())
	g.put("ttl_none")(r.TTL(ctx, k).Result())
	g.put("expire")(r.Expire(ctx, k, 100*time.Second).Result())
	g.add("ttl", within(r.TTL(ctx, k).Val(), time.Second, 1, 100))
	g.put("persist")(r.Persist(ctx, k).Result())
	g.put("ttl_persisted")(r.TTL(ctx, k).Result())
	g.put("persist_again")(r.Persist(ctx, k).Result())
	g.put("set_ex")(r.Set(ctx, k, "v", 50*time.Second).Result())
	g.add("ttl_ex", within(r.TTL(ctx, k).Val(), time.Second, 1, 50))
	g.put("ttl_missing")(r.TTL(ctx, none).Result())
	g.put("expire_missing")(r.Expire(ctx, none, 10*time.Second).Result())
	time.Sleep(time.Until(start.Add(2300 * time.Millisecond)))
	g.put("expired")(r.Get(ctx, px).Result())
	g.put("ttl_expired")(r.TTL(ctx, px).Result())
}

func grScan(g *gr) {
	r, p, ctx := g.r, g.p, g.ctx
	want := map[string]bool{p + "h": true}
	var kv []any
	for i := range 40 {
		k := fmt.Sprintf("%sk%02d", p, i)
		want[k] = true
		kv = append(kv, k, "v")
	}
	g.fail(r.MSet(ctx, kv...).Err())
	g.fail(r.HSet(ctx, p+"h", "f", "v").Err())
	got := map[string]bool{}
	it := r.Scan(ctx, 0, p+"*", 7).Iterator()
	for it.Next(ctx) {
		got[it.Val()] = true
	}
	g.fail(it.Err())
	g.add("keys", len(got))
	g.add("same", maps.Equal(got, want))
}

func grCounters(g *gr) {
	r, n, s, none, ctx := g.r, g.p+"n", g.p+"s", g.p+"none", g.ctx
	r.Del(ctx, n, s, none)
	g.put("incr")(r.Incr(ctx, n).Result())
	g.put("incr_again")(r.Incr(ctx, n).Result())
	g.put("incrby")(r.IncrBy(ctx, n, 10).Result())
	g.put("decr")(r.Decr(ctx, n).Result())
	g.put("get")(r.Get(ctx, n).Result())
	g.put("get_other")(g.o.Get(ctx, n).Result())
	r.Set(ctx, s, "abc", 0)
	if err := r.Incr(ctx, s).Err(); err != nil {
		g.add("incr_text", "error")
	} else {
		g.add("incr_text", "no error")
	}
	g.put("decr_missing")(r.Decr(ctx, none).Result())
}

func grPipeline(g *gr) {
	k, n, h, none := g.p+"k", g.p+"n", g.p+"h", g.p+"none"
	g.r.Del(g.ctx, k, n, h, none)
	cmds, err := g.r.Pipelined(g.ctx, func(p redis.Pipeliner) error {
		p.Set(g.ctx, k, "v", 0)
		p.Incr(g.ctx, n)
		p.Incr(g.ctx, n)
		p.Get(g.ctx, k)
		p.HSet(g.ctx, h, "f", "x")
		p.HGet(g.ctx, h, "f")
		p.Get(g.ctx, none)
		p.Del(g.ctx, k)
		return nil
	})
	g.put("replies")(replies(cmds), ignoreNil(err))
}

// grMulti is go-redis's transaction (MULTI/EXEC) on one key, as redis-py's default
// pipeline() sends.
func grMulti(g *gr) {
	n := g.p + "n"
	g.r.Del(g.ctx, n)
	cmds, err := g.r.TxPipelined(g.ctx, func(p redis.Pipeliner) error {
		p.Incr(g.ctx, n)
		p.Incr(g.ctx, n)
		p.Expire(g.ctx, n, 100*time.Second)
		p.Get(g.ctx, n)
		return nil
	})
	g.put("replies")(replies(cmds), ignoreNil(err))
	g.add("ttl", within(g.r.TTL(g.ctx, n).Val(), time.Second, 1, 100))
}

// ignoreNil drops the redis.Nil a pipeline returns when one of its replies was a null.
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// replies are a pipeline's replies, a null as nil.
func replies(cmds []redis.Cmder) []any {
	out := make([]any, len(cmds))
	for i, c := range cmds {
		if errors.Is(c.Err(), redis.Nil) {
			continue
		}
		switch c := c.(type) {
		case *redis.StatusCmd:
			out[i] = c.Val()
		case *redis.StringCmd:
			out[i] = c.Val()
		case *redis.IntCmd:
			out[i] = c.Val()
		case *redis.BoolCmd:
			out[i] = c.Val()
		default:
			out[i] = fmt.Sprintf("%T", c)
		}
		if c.Err() != nil {
			out[i] = "error"
		}
	}
	return out
}
