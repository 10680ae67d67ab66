// Package redis is the benchmark target for Redis-protocol servers: kura nodes and
// redis-server alike. It speaks RESP2 over one plain TCP connection per benchmark thread,
// spreading threads over the listed addresses, and maps YCSB's records onto hashes
// (HSET for inserts and updates, HGETALL or HMGET for reads), which is how kura and
// Redis both store a record of named fields. YCSB's scans (workload E) are SCANs in
// token order from the start key's token, against kura only (scan.go).
//
// With ?route=token each operation goes to a node that holds a replica of its key
// (route.go), as a token-aware Cassandra driver sends it, instead of to the thread's node.
//
// With ?record=string each record is one string value instead (SET to write, GET to
// read; the fields length-prefixed in the value). kura's SET writes blind while its HSET
// reads the key first (for HSET's count of new fields, WRONGTYPE and the key's TTL), so
// this is the mode that benchmarks blind writes, as Cassandra's inserts are in the
// papers' experiments. A SET replaces the whole record: an update writes only the fields
// it is given, so run string records with writeallfields=true to keep them whole.
//
// The client is written here rather than taken from a Redis library because the
// benchmark client shares the machine with the server: it sends each command as one
// write and parses replies without allocating, so that its CPU cost stays small next to
// the server's (go-redis costs several times more per operation). The tests check it
// against kura and, when installed, redis-server.
package redis

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/cert"
)

// Target connects benchmark threads to Redis-protocol servers.
type Target struct {
	Addrs []string // host:port of every server; thread i uses Addrs[i % len(Addrs)]
	// Password, when set, is sent with AUTH on every connection, with User when that is
	// set too (AUTH user password).
	Password string
	User     string
	// TLS, when set, makes every connection a TLS one (rediss:// or resps://).
	TLS *tls.Config
	// Consistency, when set, is sent as KURA.CONSISTENCY on every connection, so that a
	// kura cluster serves the run at that consistency level (ONE, TWO, QUORUM, ALL). A
	// server that does not know the command fails the connection with its error.
	Consistency string
	// Record is how a record is stored: RecordHash (the default) or RecordString.
	Record      string
	DialTimeout time.Duration // default 5 s
	// Timeout bounds each operation when the context has no deadline (default 10 s).
	Timeout time.Duration
	// Route is where operations go: RouteNode ("", the default) or RouteToken.
	Route string

	mu     sync.Mutex
	router *router // RouteToken's, fetched by the first Open
}

// Record layouts.
const (
	RecordHash   = "hash"   // one hash per record, a field per YCSB field: HSET, HGETALL, HMGET
	RecordString = "string" // one string per record, its fields length-prefixed: SET, GET
)

// Consistency levels kura accepts.
var consistencyLevels = []string{"ONE", "TWO", "QUORUM", "ALL"}

// ParseURL parses "resp://host:port[,host:port...][?consistency=QUORUM&user=...&password=...&record=string&route=token]".
// A bare "host:port[,...]" is accepted too. The schemes resps:// and rediss:// connect
// with TLS; there cacert=FILE gives the CA bundle that verifies the servers (default: the
// system's), cert=FILE and key=FILE a client certificate, and servername=NAME the name
// checked in the servers' certificates (default: each address's host).
func ParseURL(s string) (*Target, error) {
	if !strings.Contains(s, "://") {
		s = "resp://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("redis: target %q: %w", s, err)
	}
	if !slices.Contains([]string{"resp", "redis", "resps", "rediss"}, u.Scheme) {
		return nil, fmt.Errorf("redis: target %q: scheme must be resp://, redis://, resps:// or rediss://", s)
	}
	t := &Target{}
	for _, a := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("redis: target %q: address %q: %w", s, a, err)
		}
		t.Addrs = append(t.Addrs, a)
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains([]string{"consistency", "user", "password", "record", "route", "cacert", "cert", "key", "servername"}, k) {
			return nil, fmt.Errorf("redis: target %q: unknown option %q", s, k)
		}
	}
	t.User, t.Password = q.Get("user"), q.Get("password")
	if t.User != "" && t.Password == "" {
		return nil, fmt.Errorf("redis: target %q: user needs a password", s)
	}
	if u.Scheme == "resps" || u.Scheme == "rediss" {
		if t.TLS, err = cert.ToolClientConfig(q.Get("cacert"), q.Get("cert"), q.Get("key"), q.Get("servername")); err != nil {
			return nil, fmt.Errorf("redis: target %q: %w", s, err)
		}
	} else if q.Has("cacert") || q.Has("cert") || q.Has("key") || q.Has("servername") {
		return nil, fmt.Errorf("redis: target %q: cacert, cert, key and servername need resps:// or rediss://", s)
	}
	if c := strings.ToUpper(q.Get("consistency")); c != "" {
		if !slices.Contains(consistencyLevels, c) {
			return nil, fmt.Errorf("redis: consistency %q: want one of %s", c, strings.Join(consistencyLevels, ", "))
		}
		t.Consistency = c
	}
	switch r := strings.ToLower(q.Get("record")); r {
	case "", RecordHash, RecordString:
		t.Record = r
	default:
		return nil, fmt.Errorf("redis: record %q: want %s or %s", r, RecordHash, RecordString)
	}
	switch r := strings.ToLower(q.Get("route")); r {
	case "", RouteNode, RouteToken:
		t.Route = r
	default:
		return nil, fmt.Errorf("redis: route %q: want %s or %s", r, RouteNode, RouteToken)
	}
	return t, nil
}

// Name implements bench.Target.
func (t *Target) Name() string {
	scheme := "resp://"
	if t.TLS != nil {
		scheme = "resps://"
	}
	name := scheme + strings.Join(t.Addrs, ",")
	if t.Route == RouteToken {
		name += "?route=token"
	}
	return name
}

// Open implements bench.Target: it connects thread's client and runs the connection's
// setup commands, so that a wrong password or an unknown consistency level fails the
// run before it starts. Under RouteToken the first Open fetches the cluster's layout.
func (t *Target) Open(ctx context.Context, thread, _ int) (bench.Client, error) {
	if len(t.Addrs) == 0 {
		return nil, errors.New("redis: no addresses")
	}
	c := &client{t: t, home: t.Addrs[thread%len(t.Addrs)], conns: map[string]*conn{}, failedAt: map[string]time.Time{}}
	if err := c.connect(ctx, c.home); err != nil {
		return nil, err
	}
	if t.Route == RouteToken {
		if err := t.loadRouter(ctx, c); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// loadRouter fetches the cluster's layout through c's connection, once per Target.
func (t *Target) loadRouter(ctx context.Context, c *client) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.router != nil {
		return nil
	}
	c.conn.begin("KURA.TOPOLOGY")
	b, err := c.conn.fetch(c.deadline(ctx))
	if err != nil {
		return fmt.Errorf("redis: route=token: KURA.TOPOLOGY on %s: %w", c.home, err)
	}
	r, err := newRouter(b)
	if err != nil {
		return err
	}
	t.router = r
	return nil
}

// client is one thread's connections: to its own node, and under RouteToken to the
// nodes its keys' replicas are on. After an I/O error a connection is dropped and the
// next operation that needs it reconnects, so that a server restart costs errors, not
// the run.
type client struct {
	t        *Target
	home     string               // the thread's node
	conns    map[string]*conn     // open connections by address
	failedAt map[string]time.Time // when the last dial of an address failed
	conn     *conn                // the current operation's connection, to addr
	addr     string
	record   []byte    // scratch for a string record's encoding
	scan     scanState // scans' (scan.go)
}

// redialBackoff spaces reconnect attempts to a server that is down, so that threads wait
// for it (and their operations' latency says so) instead of spinning on refused dials.
const redialBackoff = 50 * time.Millisecond

// connect dials addr, runs the connection's setup commands and makes it the current one.
func (c *client) connect(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: c.t.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 5 * time.Second
	}
	var nc net.Conn
	var err error
	if c.t.TLS != nil {
		td := tls.Dialer{NetDialer: &d, Config: c.t.TLS}
		nc, err = td.DialContext(ctx, "tcp", addr) // the handshake is done on return
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	c.conn, c.addr = newConn(nc), addr
	c.conns[addr] = c.conn
	setup := [][]string{}
	switch {
	case c.t.User != "":
		setup = append(setup, []string{"AUTH", c.t.User, c.t.Password})
	case c.t.Password != "":
		setup = append(setup, []string{"AUTH", c.t.Password})
	}
	if c.t.Consistency != "" {
		setup = append(setup, []string{"KURA.CONSISTENCY", c.t.Consistency})
	}
	for _, cmd := range setup {
		if _, err := c.do(ctx, cmd[0], cmd[1:]...); err != nil {
			c.drop()
			return fmt.Errorf("redis: %s on %s: %w", cmd[0], addr, err)
		}
	}
	return nil
}

// do sends one command and reads its reply.
func (c *client) do(ctx context.Context, name string, args ...string) (reply, error) {
	c.conn.begin(name)
	for _, a := range args {
		c.conn.arg(a)
	}
	return c.roundTrip(ctx)
}

// ensure makes the connection to the thread's node the current one.
func (c *client) ensure(ctx context.Context) error { return c.use(ctx, c.home) }

// route makes current the connection an operation on key goes to: under RouteToken a
// replica's node (the thread's own when that one cannot be reached), else the thread's.
func (c *client) route(ctx context.Context, key string, write bool) error {
	if c.t.router == nil {
		return c.ensure(ctx)
	}
	addr, err := c.t.router.addr(key, write)
	if err != nil || c.conns[addr] == nil && time.Since(c.failedAt[addr]) < redialBackoff {
		return c.ensure(ctx) // not waiting for a replica's node that just refused a dial
	}
	if err := c.use(ctx, addr); err == nil || addr == c.home || ctx.Err() != nil {
		return err
	}
	return c.ensure(ctx)
}

// use makes the connection to addr the current one, dialing it when there is none
// (after redialBackoff since its last failed dial).
func (c *client) use(ctx context.Context, addr string) error {
	if cn := c.conns[addr]; cn != nil {
		c.conn, c.addr = cn, addr
		return nil
	}
	if wait := redialBackoff - time.Since(c.failedAt[addr]); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := c.connect(ctx, addr); err != nil {
		c.failedAt[addr] = time.Now()
		return err
	}
	return nil
}

// drop closes the current connection and forgets it.
func (c *client) drop() {
	c.conn.close()
	delete(c.conns, c.addr)
	c.conn = nil
}

// deadline is the current operation's: ctx's, or Timeout from now.
func (c *client) deadline(ctx context.Context) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	timeout := c.t.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	return time.Now().Add(timeout)
}

// roundTrip sends the command collected on c.conn and reads its reply; an I/O or
// protocol error drops the connection.
func (c *client) roundTrip(ctx context.Context) (reply, error) {
	rep, err := c.conn.roundTrip(c.deadline(ctx))
	if err != nil && !errors.Is(err, errServer) {
		c.drop()
	}
	return rep, err
}

func (c *client) Read(ctx context.Context, key string, fields []string) (bool, error) {
	if err := c.route(ctx, key, false); err != nil {
		return false, err
	}
	if c.t.Record == RecordString { // the whole record, whichever fields were asked for
		c.conn.begin("GET")
		c.conn.arg(key)
	} else if fields == nil {
		c.conn.begin("HGETALL")
		c.conn.arg(key)
	} else {
		c.conn.begin("HMGET")
		c.conn.arg(key)
		for _, f := range fields {
			c.conn.arg(f)
		}
	}
	rep, err := c.roundTrip(ctx)
	if err != nil {
		return false, err
	}
	if rep.kind == '$' { // GET: a nil bulk string is a missing record
		return rep.n >= 0, nil
	}
	return rep.nonNil > 0, nil
}

func (c *client) Update(ctx context.Context, key string, values []bench.Field) error {
	return c.write(ctx, key, values)
}

func (c *client) Insert(ctx context.Context, key string, values []bench.Field) error {
	return c.write(ctx, key, values)
}

func (c *client) write(ctx context.Context, key string, values []bench.Field) error {
	if err := c.route(ctx, key, true); err != nil {
		return err
	}
	if c.t.Record == RecordString {
		c.record = EncodeRecord(c.record[:0], values)
		c.conn.begin("SET")
		c.conn.arg(key)
		c.conn.argBytes(c.record)
	} else {
		c.conn.begin("HSET")
		c.conn.arg(key)
		for _, f := range values {
			c.conn.arg(f.Name)
			c.conn.argBytes(f.Value)
		}
	}
	_, err := c.roundTrip(ctx)
	return err
}

// EncodeRecord appends a string record's encoding of fields to dst: for each field, the
// uvarint length of its name, the name, the uvarint length of its value, the value.
func EncodeRecord(dst []byte, fields []bench.Field) []byte {
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f.Name)))
		dst = append(dst, f.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(f.Value)))
		dst = append(dst, f.Value...)
	}
	return dst
}

// DecodeRecord returns the fields of a string record, or an error if b is not one.
func DecodeRecord(b []byte) ([]bench.Field, error) {
	var fields []bench.Field
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errors.New("redis: malformed string record")
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		name, err := next()
		if err != nil {
			return nil, err
		}
		value, err := next()
		if err != nil {
			return nil, err
		}
		fields = append(fields, bench.Field{Name: string(name), Value: value})
	}
	return fields, nil
}

func (c *client) Ping(ctx context.Context) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	_, err := c.do(ctx, "PING")
	return err
}

func (c *client) Close() error {
	for addr, cn := range c.conns {
		cn.close()
		delete(c.conns, addr)
	}
	c.conn = nil
	return nil
}
