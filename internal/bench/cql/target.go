package cql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/kuradb/kura/internal/bench"
)

// ErrClosed is returned by Open after Close, and by a client's methods after its Close.
var ErrClosed = errors.New("cql: closed")

// Target is a CQL cluster as a bench.Target. It connects on the first Open and shares
// one driver session between all its clients. Safe for concurrent use.
type Target struct {
	cfg         Config
	read, write gocql.Consistency

	mu         sync.Mutex // guards the fields below
	session    *gocql.Session
	schemaDone bool
	closed     bool
}

var _ bench.Target = (*Target)(nil)

// New checks cfg, fills its defaults and returns a target that has not connected yet.
func New(cfg Config) (*Target, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	read, err := ParseConsistency(cfg.ReadConsistency, false)
	if err != nil {
		return nil, err
	}
	write, err := ParseConsistency(cfg.WriteConsistency, true)
	if err != nil {
		return nil, err
	}
	return &Target{cfg: cfg, read: read, write: write}, nil
}

// Name describes the target as a URL, e.g. "cql://127.0.0.1:9042/ycsb?consistency=ONE".
func (t *Target) Name() string { return t.cfg.String() }

// Config returns the configuration with its defaults filled in.
func (t *Target) Config() Config { return t.cfg }

// Open returns a client for one benchmark thread. The first call connects the shared
// session (and creates the schema when Config.CreateSchema is set); later calls only
// allocate the client. thread and threads are not needed: the session balances
// requests over hosts and connections itself.
func (t *Target) Open(ctx context.Context, thread, threads int) (bench.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.connectLocked(ctx)
	if err != nil {
		return nil, err
	}
	if t.cfg.CreateSchema && !t.schemaDone {
		if err := t.ensureSchemaLocked(ctx, s); err != nil {
			return nil, err
		}
	}
	return newClient(s, t.cfg, t.read, t.write), nil
}

// EnsureSchema creates the keyspace (SimpleStrategy, Config.ReplicationFactor) and the
// table (Config.FieldCount fields) unless they exist, and waits until the cluster
// agrees on the schema. An existing table is used as it is, whatever its columns.
func (t *Target) EnsureSchema(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.connectLocked(ctx)
	if err != nil {
		return err
	}
	return t.ensureSchemaLocked(ctx, s)
}

func (t *Target) ensureSchemaLocked(ctx context.Context, s *gocql.Session) error {
	stmts := []string{
		createKeyspaceStmt(t.cfg.Keyspace, t.cfg.ReplicationFactor),
		createTableStmt(t.cfg.Keyspace, t.cfg.Table, t.cfg.FieldCount),
	}
	for _, stmt := range stmts {
		if err := s.Query(stmt).ExecContext(ctx); err != nil {
			return fmt.Errorf("cql: create schema: %w", err)
		}
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return fmt.Errorf("cql: create schema: %w", err)
	}
	t.schemaDone = true
	return nil
}

// Close closes the shared session; clients still open fail from then on.
func (t *Target) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session != nil {
		t.session.Close()
		t.session = nil
	}
	t.closed = true
	return nil
}

// connectLocked returns the shared session, creating it on first use. Creating it
// blocks for up to Config.ConnectTimeout per contact point; ctx is only checked
// before, because the driver does not take one.
func (t *Target) connectLocked(ctx context.Context) (*gocql.Session, error) {
	if t.closed {
		return nil, ErrClosed
	}
	if t.session != nil {
		return t.session, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cql: connect: %w", err)
	}
	s, err := t.clusterConfig().CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cql: connect to %v: %w", t.cfg.Hosts, err)
	}
	t.session = s
	return s, nil
}

// clusterConfig translates Config into the driver's configuration.
func (t *Target) clusterConfig() *gocql.ClusterConfig {
	cc := gocql.NewCluster(t.cfg.Hosts...)
	// Peers discovered from the contact points are reached on this port when the
	// server does not advertise theirs.
	if _, port, err := net.SplitHostPort(t.cfg.Hosts[0]); err == nil {
		if p, err := strconv.Atoi(port); err == nil {
			cc.Port = p
		}
	}
	cc.ConnectTimeout = t.cfg.ConnectTimeout
	cc.Timeout = t.cfg.RequestTimeout
	cc.NumConns = t.cfg.ConnsPerHost
	cc.WriteCoalesceWaitTime = t.cfg.WriteCoalesce
	cc.Consistency = t.write // for schema statements; data statements set their own
	// Route each request to a replica of its key, as YCSB's Java driver does by default.
	cc.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	return cc
}
