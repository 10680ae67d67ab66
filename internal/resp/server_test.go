package resp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/row"
)

// testServer is a Server on a loopback port with the reference store and a test clock.
type testServer struct {
	srv   *Server
	addr  string
	store *memStore
	clock *testClock
	done  chan error
}

// startServer serves cfg (Store and Clock filled in unless set) until the test ends.
func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	ts := &testServer{store: newMemStore(), clock: newTestClock(), done: make(chan error, 1)}
	if cfg.Store == nil {
		cfg.Store = ts.store
	}
	cfg.Clock = ts.clock.hlc()
	if cfg.KeysEstimate == nil {
		cfg.KeysEstimate = ts.store.keys
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.srv, ts.addr = srv, ln.Addr().String()
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(func() { ts.close(t) })
	return ts
}

// close shuts the server down (once) and checks that Serve returned ErrServerClosed.
func (ts *testServer) close(t *testing.T) {
	if ts.srv == nil {
		return
	}
	if err := ts.srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
	ts.srv = nil
}

func (ts *testServer) client(t *testing.T, opt *redis.Options) *redis.Client {
	if opt == nil {
		opt = &redis.Options{}
	}
	opt.Addr = ts.addr
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a plain TCP client for checking bytes on the wire.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second)) // a hung test fails instead of hanging
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, raw); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next reply rendered as redis-cli would, or the read error.
func (c *rawConn) read() (string, error) {
	var buf []byte
	for {
		line, err := c.br.ReadBytes('\n')
		buf = append(buf, line...)
		if err != nil {
			return "", err
		}
		if r, rest, err := parseReply(buf); err == nil && len(rest) == 0 {
			return render(r), nil
		}
	}
}

func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.send(b.String())
	r, err := c.read()
	if err != nil {
		c.t.Fatalf("%q: %v", args, err)
	}
	return r
}

// expectClosed checks that the server closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	if r, err := c.read(); err == nil {
		c.t.Fatalf("connection still open, read %q", r)
	}
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func TestServerServesGoRedis(t *testing.T) {
	for _, protocol := range []int{2, 3} { // go-redis's default is 3: HELLO 3, then RESP3
		t.Run(fmt.Sprintf("resp%d", protocol), func(t *testing.T) { testGoRedis(t, protocol) })
	}
}

func testGoRedis(t *testing.T, protocol int) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	c := ts.client(t, &redis.Options{Protocol: protocol})
	check(t, "ping", c.Ping(ctx).Val(), "PONG")
	check(t, "set", c.Set(ctx, "a", "1", 0).Err(), nil)
	check(t, "get", c.Get(ctx, "a").Val(), "1")
	_, err := c.Get(ctx, "missing").Result()
	check(t, "get missing", err, redis.Nil)
	check(t, "mset", c.MSet(ctx, "b", "2", "c", "3").Err(), nil)
	check(t, "mget", c.MGet(ctx, "a", "b", "nope").Val(), []any{"1", "2", nil})
	check(t, "exists", c.Exists(ctx, "a", "b", "nope").Val(), 2)
	check(t, "del", c.Del(ctx, "a", "nope").Val(), 1)
	check(t, "hset", c.HSet(ctx, "h", "f1", "v1", "f2", "v2").Val(), 2)
	check(t, "hgetall", c.HGetAll(ctx, "h").Val(), map[string]string{"f1": "v1", "f2": "v2"})
	check(t, "hgetall missing", c.HGetAll(ctx, "nope").Val(), map[string]string{})
	check(t, "hmget", c.HMGet(ctx, "h", "f2", "zz").Val(), []any{"v2", nil})
	_, err = c.HGet(ctx, "h", "zz").Result()
	check(t, "hget missing", err, redis.Nil)
	check(t, "hdel", c.HDel(ctx, "h", "f1").Val(), 1)
	check(t, "hlen", c.HLen(ctx, "h").Val(), 1)
	check(t, "hexists", c.HExists(ctx, "h", "f2").Val(), true)
	err = c.Get(ctx, "h").Err()
	check(t, "get hash", err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"), true)
	info := c.Do(ctx, "CLIENT", "INFO").String()
	check(t, "go-redis sent CLIENT SETINFO", strings.Contains(info, "lib-name=go-redis"), true)
	check(t, "connection's protocol", strings.Contains(info, fmt.Sprintf("resp=%d", protocol)), true)
	check(t, "config get", c.ConfigGet(ctx, "maxclients").Val(), map[string]string{"maxclients": "10000"})
	check(t, "dbsize", c.DBSize(ctx).Val(), 4)
	check(t, "info", strings.Contains(c.Info(ctx, "keyspace").Val(), "db0:keys=4"), true)
	// HELLO without a version describes the connection: a map in RESP3, a flat array in
	// RESP2.
	hello, err := c.Do(ctx, "HELLO").Result()
	check(t, "hello", err, nil)
	fields := map[string]any{}
	switch h := hello.(type) {
	case map[any]any:
		check(t, "hello is a map", protocol, 3)
		for k, v := range h {
			fields[fmt.Sprint(k)] = v
		}
	case []any:
		check(t, "hello is an array", protocol, 2)
		for i := 0; i+1 < len(h); i += 2 {
			fields[fmt.Sprint(h[i])] = h[i+1]
		}
	}
	check(t, "hello's protocol", fields["proto"], protocol)
	check(t, "hello's server", fields["server"], "kura")
}

func TestServerExpiry(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	c := ts.client(t, nil)
	check(t, "set ex", c.Set(ctx, "k", "v", 10*time.Second).Err(), nil)
	check(t, "ttl", c.TTL(ctx, "k").Val(), 10*time.Second)
	check(t, "pexpire", c.PExpire(ctx, "k", 2500*time.Millisecond).Val(), true)
	check(t, "pttl", c.PTTL(ctx, "k").Val(), 2500*time.Millisecond)
	check(t, "hset", c.HSet(ctx, "h", "f", "v").Err(), nil)
	check(t, "expire", c.Expire(ctx, "h", time.Second).Val(), true)
	check(t, "persist", c.Persist(ctx, "k").Val(), true)
	ts.clock.advance(3 * microsPerSecond)
	check(t, "persisted key", c.Get(ctx, "k").Val(), "v")
	check(t, "expired hash", c.Exists(ctx, "h").Val(), 0)
	check(t, "ttl of missing", c.TTL(ctx, "h").Val(), time.Duration(-2))
}

func TestServerPipelines(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	c := ts.client(t, nil)
	const n = 2000
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.Set(ctx, fmt.Sprint("key", i), strings.Repeat("v", i%100), 0)
			p.Get(ctx, fmt.Sprint("key", i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		check(t, "pipelined get", cmds[2*i+1].(*redis.StringCmd).Val(), strings.Repeat("v", i%100))
	}
}

func TestServerLimitsKeepTheConnectionForOversizedArguments(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{MaxValueBytes: 1024, MaxRequestBytes: 4096})
	ctx := context.Background()
	c := ts.client(t, &redis.Options{PoolSize: 1}) // retries reconnect after the refusal
	err := c.Set(ctx, "k", strings.Repeat("x", 2000), 0).Err()
	check(t, "oversized value", err != nil && strings.Contains(err.Error(), "max-value-bytes"), true)
	check(t, "same connection goes on", c.Set(ctx, "k", "small", 0).Err(), nil)
	check(t, "one connection", c.PoolStats().TotalConns, 1)

	err = c.Set(ctx, "k", strings.Repeat("x", 8000), 0).Err()
	check(t, "oversized request", err != nil && strings.Contains(err.Error(), "max-request-bytes"), true)
	check(t, "the client reconnects", c.Get(ctx, "k").Val(), "small")
}

func TestServerRefusesOversizedFrameBeforeItArrives(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{MaxRequestBytes: 1 << 20})
	rc := dialRaw(t, ts.addr)
	check(t, "before", rc.do("SET", "a", "1"), "OK")
	// Pipelined ahead of the bad frame, GET still runs; the body never needs to arrive.
	rc.send("*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$999999999\r\n")
	r, _ := rc.read()
	check(t, "pipelined get", r, `"1"`)
	r, _ = rc.read()
	check(t, "refusal", r, "(error) ERR Protocol error: request larger than max-request-bytes (1048576)")
	rc.expectClosed()

	rc = dialRaw(t, ts.addr)
	rc.send("*3\r\n$3\r\nGET\r\n$abc\r\n")
	r, _ = rc.read()
	check(t, "bad header", r, "(error) ERR Protocol error: invalid bulk length")
	rc.expectClosed()
}

func TestServerInlineCommandsAndQuit(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	rc := dialRaw(t, ts.addr)
	rc.send("PING\r\nSET k \"a b\"\r\nGET k\r\n")
	for _, want := range []string{"PONG", "OK", `"a b"`} {
		r, err := rc.read()
		check(t, "inline", r+fmt.Sprint(err), want+"<nil>")
	}
	rc.send("QUIT\r\nPING\r\n")
	r, _ := rc.read()
	check(t, "quit", r, "OK")
	rc.expectClosed()
}

func TestServerMaxConnections(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{MaxConnections: 2})
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	check(t, "first", a.do("PING"), "PONG")
	check(t, "second", b.do("PING"), "PONG")
	c := dialRaw(t, ts.addr)
	r, _ := c.read()
	check(t, "third", r, "(error) ERR max number of clients reached")
	c.expectClosed()
	if !strings.Contains(a.do("INFO", "stats"), `rejected_connections:1`) {
		t.Fatal("INFO does not count the rejected connection")
	}
	a.send("QUIT\r\n")
	a.read()
	a.expectClosed()
	// The slot frees when the server's goroutine for a has ended: retry until then.
	for i := 0; ; i++ {
		d := dialRaw(t, ts.addr)
		if d.do("PING") == "PONG" {
			break
		}
		if i == 1000 {
			t.Fatal("slot never freed")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestServerAuth(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{Password: "s3cret"})
	ctx := context.Background()
	err := ts.client(t, &redis.Options{MaxRetries: -1}).Get(ctx, "a").Err()
	check(t, "no password", err != nil && strings.HasPrefix(err.Error(), "NOAUTH"), true)
	err = ts.client(t, &redis.Options{Password: "wrong", MaxRetries: -1}).Get(ctx, "a").Err()
	check(t, "wrong password", err != nil && strings.Contains(err.Error(), "WRONGPASS"), true)
	c := ts.client(t, &redis.Options{Password: "s3cret"})
	check(t, "password", c.Set(ctx, "a", "1", 0).Err(), nil)
	c = ts.client(t, &redis.Options{Username: "default", Password: "s3cret", Protocol: 2})
	check(t, "user and password", c.Get(ctx, "a").Val(), "1")
}

func TestServerIdleTimeoutClosesConnections(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{IdleTimeout: 20 * time.Millisecond})
	rc := dialRaw(t, ts.addr)
	check(t, "ping", rc.do("PING"), "PONG")
	rc.expectClosed() // the read blocks until the server gives up on the idle client
}

// blockingStore holds Apply until released, to catch Close in the middle of a command.
type blockingStore struct {
	*memStore
	entered, release chan struct{}
}

func (b *blockingStore) Apply(batch []row.Mutation) error {
	b.entered <- struct{}{}
	<-b.release
	return b.memStore.Apply(batch)
}

func TestServerCloseFinishesCommandsInFlight(t *testing.T) {
	checkLeaks(t)
	store := &blockingStore{newMemStore(), make(chan struct{}), make(chan struct{})}
	ts := startServer(t, Config{Store: store})
	busy, idle := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	check(t, "idle client", idle.do("PING"), "PONG")
	busy.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	<-store.entered
	closed := make(chan struct{})
	go func() { ts.close(t); close(closed) }()
	idle.expectClosed() // Close has begun: idle connections go at once
	select {
	case <-closed:
		t.Fatal("Close returned while a command was in flight")
	default:
	}
	close(store.release)
	r, err := busy.read()
	check(t, "in-flight reply", r+fmt.Sprint(err), "OK<nil>")
	busy.expectClosed()
	<-closed
	check(t, "write applied", store.dump("k", testEpoch), "deleted=t-1\n\"\\x00\" ts=t+0 value=\"v\"\n")
}

// TestServerShutdownDeadlineBoundsTheLastReplies checks that Shutdown still waits for a
// command running in the store (its write lands) but writes no reply past ctx's deadline.
func TestServerShutdownDeadlineBoundsTheLastReplies(t *testing.T) {
	checkLeaks(t)
	store := &blockingStore{newMemStore(), make(chan struct{}), make(chan struct{})}
	ts := startServer(t, Config{Store: store})
	busy := dialRaw(t, ts.addr)
	busy.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	<-store.entered
	ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // already passed
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a command was in the store", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(store.release)
	check(t, "shutdown", <-done, nil)
	busy.expectClosed() // the reply's deadline had passed: no "+OK", just the close
	check(t, "write applied", store.dump("k", testEpoch), "deleted=t-1\n\"\\x00\" ts=t+0 value=\"v\"\n")
}

func TestServerRejectsUseAfterClose(t *testing.T) {
	checkLeaks(t)
	srv, err := New(Config{Store: newMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "close before serve", srv.Close(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "serve after close", srv.Serve(ln), ErrServerClosed)
	_, err = New(Config{})
	check(t, "missing store", errors.Is(err, ErrConfig), true)
	_, err = New(Config{Store: newMemStore(), MaxKeyBytes: row.MaxKeySize + 1})
	check(t, "key limit above rows'", errors.Is(err, ErrConfig), true)
}

// checkLeaks verifies at the very end of the test, after every cleanup (servers closed,
// clients closed), that no goroutine was left behind. Cleanups run last-in first-out, so
// this one, registered first, runs last.
func checkLeaks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func TestServerMetrics(t *testing.T) {
	checkLeaks(t)
	reg := prometheus.NewRegistry()
	ts := startServer(t, Config{Registerer: reg, MaxConnections: 1})
	ctx := context.Background()
	c := ts.client(t, &redis.Options{PoolSize: 1})
	check(t, "set", c.Set(ctx, "a", "1", 0).Err(), nil)
	check(t, "get", c.Get(ctx, "a").Val(), "1")
	c.Do(ctx, "NOSUCH")
	extra := dialRaw(t, ts.addr)
	r, _ := extra.read()
	check(t, "over the limit", r, "(error) ERR max number of clients reached")

	m := gatherMetrics(t, reg)
	check(t, "HELLO 3", m[`kura_resp_requests_total{command="hello",result="ok"}`], 1)
	check(t, "CLIENT SETINFO", m[`kura_resp_requests_total{command="client",result="ok"}`], 2)
	check(t, "set", m[`kura_resp_requests_total{command="set",result="ok"}`], 1)
	check(t, "unknown", m[`kura_resp_requests_total{command="unknown",result="error"}`], 1)
	check(t, "get latency", m[`kura_resp_request_duration_seconds_count{command="get"}`], 1)
	check(t, "clients", m[`kura_resp_connected_clients`], 1)
	check(t, "rejected", m[`kura_resp_rejected_connections_total`], 1)
}

// gatherMetrics flattens a registry into "name{label="value",...}" -> value; histograms
// contribute their _count.
func gatherMetrics(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[strings.Replace(name, f.GetName(), f.GetName()+"_count", 1)] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// TestServerLargeValues crosses the size at which a connection replaces its reader, alone
// and inside pipelines, and checks that no byte is lost on the way.
func TestServerLargeValues(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	c := ts.client(t, &redis.Options{PoolSize: 1})
	big := strings.Repeat("0123456789", 100_000) // 1 MB
	check(t, "set big", c.Set(ctx, "big", big, 0).Err(), nil)
	check(t, "get big", c.Get(ctx, "big").Val() == big, true)
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 5 {
			p.Set(ctx, fmt.Sprint("k", i), big[:i*bigCommandBytes/2], 0)
			p.Get(ctx, "big")
		}
		return nil
	})
	check(t, "pipeline", err, nil)
	for i := range 5 {
		check(t, "pipelined get", cmds[2*i+1].(*redis.StringCmd).Val() == big, true)
		check(t, "value", len(c.Get(ctx, fmt.Sprint("k", i)).Val()), i*bigCommandBytes/2)
	}
}
