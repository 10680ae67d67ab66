package cql

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/kuradb/kura/internal/bench"
)

// errNoFields is returned by Update without fields: CQL has no empty SET clause.
var errNoFields = errors.New("cql: update without fields")

// client is one benchmark thread's handle on the shared session. It owns scratch
// buffers that make the steady state allocate little beyond what the driver does.
// Not safe for concurrent use, as bench.Client allows.
type client struct {
	s           *gocql.Session
	read, write gocql.Consistency
	stmts       *stmtCache
	closed      bool

	names []string // field names of the current write
	args  []any    // bound values of the current statement
	dest  []any    // *[]byte per column: the last row read, buffers reused across reads
	rows  int      // rows returned by the last Read, Scan or Ping
}

var _ bench.Client = (*client)(nil)

func newClient(s *gocql.Session, cfg Config, read, write gocql.Consistency) *client {
	return &client{s: s, read: read, write: write, stmts: newStmtCache(cfg.Keyspace, cfg.Table)}
}

// Read reads fields of key (all of them when fields is nil) at the read consistency.
func (c *client) Read(ctx context.Context, key string, fields []string) (bool, error) {
	if c.closed {
		return false, ErrClosed
	}
	stmt, err := c.stmts.get(opRead, fields)
	if err != nil {
		return false, err
	}
	iter := c.s.Query(stmt, key).Consistency(c.read).IterContext(ctx)
	found := iter.Scan(c.row(iter)...)
	c.rows = iter.NumRows()
	if err := iter.Close(); err != nil {
		return false, fmt.Errorf("cql: read: %w", err)
	}
	return found, nil
}

// Scan reads up to count records from startKey in token order at the read consistency.
func (c *client) Scan(ctx context.Context, startKey string, count int, fields []string) error {
	if c.closed {
		return ErrClosed
	}
	stmt, err := c.stmts.get(opScan, fields)
	if err != nil {
		return err
	}
	iter := c.s.Query(stmt, startKey, count).Consistency(c.read).IterContext(ctx)
	c.rows = 0
	for dest := c.row(iter); iter.Scan(dest...); {
		c.rows++
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cql: scan: %w", err)
	}
	return nil
}

// Update overwrites the given fields of key at the write consistency.
func (c *client) Update(ctx context.Context, key string, values []bench.Field) error {
	if c.closed {
		return ErrClosed
	}
	if len(values) == 0 {
		return errNoFields
	}
	c.args = c.args[:0]
	c.bindValues(values)
	stmt, err := c.stmts.get(opUpdate, c.names)
	if err != nil {
		return err
	}
	c.args = append(c.args, key) // UPDATE binds the key last
	if err := c.s.Query(stmt, c.args...).Consistency(c.write).ExecContext(ctx); err != nil {
		return fmt.Errorf("cql: update: %w", err)
	}
	return nil
}

// Insert writes key with the given fields at the write consistency.
func (c *client) Insert(ctx context.Context, key string, values []bench.Field) error {
	if c.closed {
		return ErrClosed
	}
	c.args = append(c.args[:0], key) // INSERT binds the key first
	c.bindValues(values)
	stmt, err := c.stmts.get(opInsert, c.names)
	if err != nil {
		return err
	}
	if err := c.s.Query(stmt, c.args...).Consistency(c.write).ExecContext(ctx); err != nil {
		return fmt.Errorf("cql: insert: %w", err)
	}
	return nil
}

// Ping reads the coordinator's release version from its node-local system table.
func (c *client) Ping(ctx context.Context) error {
	if c.closed {
		return ErrClosed
	}
	iter := c.s.Query(pingStmt).Consistency(gocql.One).IterContext(ctx)
	c.rows = iter.NumRows()
	iter.Scan(c.row(iter)...)
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cql: ping: %w", err)
	}
	return nil
}

// Close releases the client; the shared session stays open until Target.Close.
func (c *client) Close() error {
	c.closed = true
	return nil
}

// bindValues sets names to the field names of values and appends their values to args.
func (c *client) bindValues(values []bench.Field) {
	c.names = c.names[:0]
	for _, v := range values {
		c.names = append(c.names, v.Name)
		c.args = append(c.args, v.Value)
	}
}

// row returns scan destinations for one row of iter's columns. The driver copies
// each value into the client's reused buffers, so reads cost what a real reader pays
// to receive the data and no more.
func (c *client) row(iter *gocql.Iter) []any {
	n := len(iter.Columns())
	for len(c.dest) < n {
		c.dest = append(c.dest, new([]byte))
	}
	return c.dest[:n]
}
