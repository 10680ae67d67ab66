// Package redis is the benchmark target for Redis-protocol servers: kura nodes and
// redis-server alike. It speaks RESP2 over one plain TCP connection per benchmark thread,
// spreading threads over the listed addresses, and maps YCSB's records onto hashes
// (HSET for inserts and updates, HGETALL or HMGET for reads), which is how kura and
// Redis both store a record of named fields.
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
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/bench"
)

// Target connects benchmark threads to Redis-protocol servers.
type Target struct {
	Addrs []string // host:port of every server; thread i uses Addrs[i % len(Addrs)]
	// Password, when set, is sent with AUTH on every connection.
	Password string
	// Consistency, when set, is sent as KURA.CONSISTENCY on every connection, so that a
	// kura cluster serves the run at that consistency level (ONE, TWO, QUORUM, ALL). A
	// server that does not know the command fails the connection with its error.
	Consistency string
	// Record is how a record is stored: RecordHash (the default) or RecordString.
	Record      string
	DialTimeout time.Duration // default 5 s
	// Timeout bounds each operation when the context has no deadline (default 10 s).
	Timeout time.Duration
}

// Record layouts.
const (
	RecordHash   = "hash"   // one hash per record, a field per YCSB field: HSET, HGETALL, HMGET
	RecordString = "string" // one string per record, its fields length-prefixed: SET, GET
)

// Consistency levels kura accepts.
var consistencyLevels = []string{"ONE", "TWO", "QUORUM", "ALL"}

// ParseURL parses "resp://host:port[,host:port...][?consistency=QUORUM&password=...&record=string]".
// A bare "host:port[,...]" is accepted too.
func ParseURL(s string) (*Target, error) {
	if !strings.Contains(s, "://") {
		s = "resp://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("redis: target %q: %w", s, err)
	}
	if u.Scheme != "resp" && u.Scheme != "redis" {
		return nil, fmt.Errorf("redis: target %q: scheme must be resp:// or redis://", s)
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
		if k != "consistency" && k != "password" && k != "record" {
			return nil, fmt.Errorf("redis: target %q: unknown option %q", s, k)
		}
	}
	t.Password = q.Get("password")
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
	return t, nil
}

// Name implements bench.Target.
func (t *Target) Name() string { return "resp://" + strings.Join(t.Addrs, ",") }

// Open implements bench.Target: it connects thread's client and runs the connection's
// setup commands, so that a wrong password or an unknown consistency level fails the
// run before it starts.
func (t *Target) Open(ctx context.Context, thread, _ int) (bench.Client, error) {
	if len(t.Addrs) == 0 {
		return nil, errors.New("redis: no addresses")
	}
	c := &client{t: t, addr: t.Addrs[thread%len(t.Addrs)]}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// client is one thread's connection. After an I/O error the connection is dropped and
// the next operation reconnects, so that a server restart costs errors, not the run.
type client struct {
	t        *Target
	addr     string
	conn     *conn
	failedAt time.Time // when the last reconnect failed
	record   []byte    // scratch for a string record's encoding
}

// redialBackoff spaces reconnect attempts to a server that is down, so that threads wait
// for it (and their operations' latency says so) instead of spinning on refused dials.
const redialBackoff = 50 * time.Millisecond

func (c *client) connect(ctx context.Context) error {
	d := net.Dialer{Timeout: c.t.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 5 * time.Second
	}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	c.conn = newConn(nc)
	setup := [][]string{}
	if c.t.Password != "" {
		setup = append(setup, []string{"AUTH", c.t.Password})
	}
	if c.t.Consistency != "" {
		setup = append(setup, []string{"KURA.CONSISTENCY", c.t.Consistency})
	}
	for _, cmd := range setup {
		if _, err := c.do(ctx, cmd[0], cmd[1:]...); err != nil {
			c.Close()
			return fmt.Errorf("redis: %s on %s: %w", cmd[0], c.addr, err)
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

// ensure reconnects when the last operation broke the connection.
func (c *client) ensure(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	if wait := redialBackoff - time.Since(c.failedAt); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := c.connect(ctx); err != nil {
		c.failedAt = time.Now()
		return err
	}
	return nil
}

// roundTrip sends the command collected on c.conn and reads its reply; an I/O or
// protocol error drops the connection.
func (c *client) roundTrip(ctx context.Context) (reply, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		timeout := c.t.Timeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		deadline = time.Now().Add(timeout)
	}
	rep, err := c.conn.roundTrip(deadline)
	if err != nil && !errors.Is(err, errServer) {
		c.conn.close()
		c.conn = nil
	}
	return rep, err
}

func (c *client) Read(ctx context.Context, key string, fields []string) (bool, error) {
	if err := c.ensure(ctx); err != nil {
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

func (c *client) Scan(context.Context, string, int, []string) error {
	return fmt.Errorf("redis: range scans over hashes: %w", bench.ErrUnsupported)
}

func (c *client) Update(ctx context.Context, key string, values []bench.Field) error {
	return c.write(ctx, key, values)
}

func (c *client) Insert(ctx context.Context, key string, values []bench.Field) error {
	return c.write(ctx, key, values)
}

func (c *client) write(ctx context.Context, key string, values []bench.Field) error {
	if err := c.ensure(ctx); err != nil {
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
	if c.conn != nil {
		c.conn.close()
		c.conn = nil
	}
	return nil
}
