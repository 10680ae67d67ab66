package cql

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// DefaultPort is the CQL native protocol port used for hosts given without a port.
const DefaultPort = "9042"

// Scheme is the URL scheme ParseConfig accepts and Target.Name produces.
const Scheme = "cql"

// ErrBadConfig is wrapped by every error about an invalid Config or target URL.
var ErrBadConfig = errors.New("cql: bad target configuration")

// Config describes a CQL target. The zero value of every field but Hosts selects the
// documented default; New fills them in.
type Config struct {
	// Hosts are the contact points, "host:port" or "host" (port 9042). The driver
	// discovers the rest of the cluster from them. Required.
	Hosts []string
	// Keyspace holds the table. Default "ycsb".
	Keyspace string
	// Table is the table name. Default "usertable".
	Table string
	// ReadConsistency is the consistency level of reads and scans, case-insensitive:
	// ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE or LOCAL_QUORUM. Default ONE, as in
	// YCSB's cassandra binding. (Pings always run at ONE.)
	ReadConsistency string
	// WriteConsistency is the consistency level of inserts and updates: the same
	// names, plus ANY and EACH_QUORUM. Default ONE, as in YCSB.
	WriteConsistency string
	// ConnectTimeout bounds establishing each connection. Default 5s.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each request on the client side (the server has its own
	// timeouts in cassandra.yaml). Default 12s, YCSB's read timeout.
	RequestTimeout time.Duration
	// FieldCount is the number of value columns EnsureSchema creates (field0..). It
	// does not limit the fields a client may write. Default 10.
	FieldCount int
	// ReplicationFactor is the SimpleStrategy replication factor EnsureSchema gives a
	// keyspace it creates; an existing keyspace is left alone. Default 1.
	ReplicationFactor int
	// CreateSchema makes the first Open call EnsureSchema. Default false: the
	// benchmark expects the schema to exist, as YCSB does.
	CreateSchema bool
	// ConnsPerHost is the number of connections the shared session keeps to each
	// host; requests of all clients are multiplexed over them. Default 2 (gocql's).
	ConnsPerHost int
	// WriteCoalesce is how long the driver may hold a request to batch socket writes.
	// Default 0: off (see the package comment).
	WriteCoalesce time.Duration
}

// withDefaults returns cfg with every unset field at its default, after checking it.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Hosts) == 0 {
		return cfg, fmt.Errorf("%w: no hosts", ErrBadConfig)
	}
	hosts := make([]string, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		hp, err := normalizeHost(h)
		if err != nil {
			return cfg, err
		}
		hosts[i] = hp
	}
	cfg.Hosts = hosts
	setDefault(&cfg.Keyspace, "ycsb")
	setDefault(&cfg.Table, "usertable")
	setDefault(&cfg.ReadConsistency, "ONE")
	setDefault(&cfg.WriteConsistency, "ONE")
	setDefault(&cfg.ConnectTimeout, 5*time.Second)
	setDefault(&cfg.RequestTimeout, 12*time.Second)
	setDefault(&cfg.FieldCount, 10)
	setDefault(&cfg.ReplicationFactor, 1)
	setDefault(&cfg.ConnsPerHost, 2)
	for _, name := range []string{cfg.Keyspace, cfg.Table} {
		if err := checkIdent(name); err != nil {
			return cfg, err
		}
	}
	if cfg.FieldCount < 0 || cfg.ReplicationFactor < 0 || cfg.ConnsPerHost < 0 ||
		cfg.ConnectTimeout < 0 || cfg.RequestTimeout < 0 || cfg.WriteCoalesce < 0 {
		return cfg, fmt.Errorf("%w: negative count or duration", ErrBadConfig)
	}
	if _, err := ParseConsistency(cfg.ReadConsistency, false); err != nil {
		return cfg, err
	}
	if _, err := ParseConsistency(cfg.WriteConsistency, true); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// normalizeHost returns h as "host:port", adding DefaultPort when h has none.
func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("%w: empty host", ErrBadConfig)
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a bare name or IPv4 address, or a bracketed/bare IPv6 address.
		bare := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if strings.ContainsAny(bare, "[]/?#@ ") {
			return "", fmt.Errorf("%w: host %q: %w", ErrBadConfig, h, err)
		}
		return net.JoinHostPort(bare, DefaultPort), nil
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("%w: host %q: bad port", ErrBadConfig, h)
	}
	if host == "" {
		return "", fmt.Errorf("%w: host %q: empty host name", ErrBadConfig, h)
	}
	return net.JoinHostPort(host, port), nil
}

// ParseConsistency parses a consistency level name, case-insensitively. Serial levels
// are refused (they only apply to lightweight transactions), as are ANY and
// EACH_QUORUM unless write is true: Cassandra accepts those only for writes.
func ParseConsistency(name string, write bool) (gocql.Consistency, error) {
	var c gocql.Consistency
	if err := c.UnmarshalText([]byte(strings.ToUpper(name))); err != nil {
		return 0, fmt.Errorf("%w: unknown consistency level %q", ErrBadConfig, name)
	}
	switch c {
	case gocql.Serial, gocql.LocalSerial:
		return 0, fmt.Errorf("%w: consistency %s is for lightweight transactions only", ErrBadConfig, c)
	case gocql.Any, gocql.EachQuorum:
		if !write {
			return 0, fmt.Errorf("%w: consistency %s is for writes only", ErrBadConfig, c)
		}
	}
	return c, nil
}

// urlKeys are the query parameters ParseConfig accepts; unknown ones are an error so that
// a typo cannot silently run a benchmark with a default.
var urlKeys = map[string]func(*Config, string) error{
	"consistency":       func(c *Config, v string) error { c.ReadConsistency, c.WriteConsistency = v, v; return nil },
	"readconsistency":   func(c *Config, v string) error { c.ReadConsistency = v; return nil },
	"writeconsistency":  func(c *Config, v string) error { c.WriteConsistency = v; return nil },
	"table":             func(c *Config, v string) error { c.Table = v; return nil },
	"connecttimeout":    func(c *Config, v string) error { return parseDuration(&c.ConnectTimeout, v) },
	"timeout":           func(c *Config, v string) error { return parseDuration(&c.RequestTimeout, v) },
	"fieldcount":        func(c *Config, v string) error { return parseInt(&c.FieldCount, v) },
	"replicationfactor": func(c *Config, v string) error { return parseInt(&c.ReplicationFactor, v) },
	"conns":             func(c *Config, v string) error { return parseInt(&c.ConnsPerHost, v) },
	"coalesce":          func(c *Config, v string) error { return parseDuration(&c.WriteCoalesce, v) },
	"createschema": func(c *Config, v string) (err error) {
		c.CreateSchema, err = strconv.ParseBool(v)
		return err
	},
}

// ParseURL parses a target spec (see ParseConfig) into a target that has not
// connected yet.
func ParseURL(spec string) (*Target, error) {
	cfg, err := ParseConfig(spec)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// ParseConfig parses a target spec of the form
//
//	cql://host1:9042,host2:9042/keyspace?consistency=QUORUM&table=usertable
//
// The keyspace path is optional. Query parameters: consistency (reads and writes),
// readconsistency, writeconsistency, table, connecttimeout and timeout (Go durations),
// fieldcount, replicationfactor, conns, coalesce (a duration) and createschema (a bool);
// they set the Config fields of the same meaning. Defaults are filled in and checked.
func ParseConfig(spec string) (Config, error) {
	var cfg Config
	rest, ok := strings.CutPrefix(spec, Scheme+"://")
	if !ok {
		return cfg, fmt.Errorf("%w: %q does not start with %s://", ErrBadConfig, spec, Scheme)
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, keyspace, _ := strings.Cut(rest, "/")
	cfg.Keyspace = strings.TrimSuffix(keyspace, "/")
	if hosts != "" {
		cfg.Hosts = strings.Split(hosts, ",")
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return cfg, fmt.Errorf("%w: %q: %w", ErrBadConfig, spec, err)
	}
	for key, vs := range values {
		set, ok := urlKeys[strings.ToLower(key)]
		if !ok {
			return cfg, fmt.Errorf("%w: unknown parameter %q", ErrBadConfig, key)
		}
		if err := set(&cfg, vs[len(vs)-1]); err != nil {
			return cfg, fmt.Errorf("%w: parameter %s: %w", ErrBadConfig, key, err)
		}
	}
	return cfg.withDefaults()
}

func parseDuration(d *time.Duration, v string) (err error) {
	*d, err = time.ParseDuration(v)
	return err
}

func parseInt(n *int, v string) (err error) {
	*n, err = strconv.Atoi(v)
	return err
}

// String renders cfg as a URL that ParseConfig reads back: the hosts, the keyspace, and
// the parameters that shape the results (consistency levels and a non-default table).
func (cfg Config) String() string {
	var b strings.Builder
	b.WriteString(Scheme + "://")
	b.WriteString(strings.Join(cfg.Hosts, ","))
	b.WriteString("/" + cfg.Keyspace)
	if strings.EqualFold(cfg.ReadConsistency, cfg.WriteConsistency) {
		b.WriteString("?consistency=" + strings.ToUpper(cfg.ReadConsistency))
	} else {
		b.WriteString("?readconsistency=" + strings.ToUpper(cfg.ReadConsistency))
		b.WriteString("&writeconsistency=" + strings.ToUpper(cfg.WriteConsistency))
	}
	if cfg.Table != "usertable" {
		b.WriteString("&table=" + cfg.Table)
	}
	return b.String()
}
