package resp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/acl"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/row"
)

// Store is what the front end needs from the node: today a local engine, later the cluster
// coordinator. Both methods are called concurrently from many connections.
type Store interface {
	// Apply merges the batch atomically (see engine.Engine.Apply). The batch and the byte
	// slices it references belong to the caller and are reused once Apply returns, so a
	// Store must copy whatever it keeps. A nil error means the write is as durable as the
	// store promises.
	Apply(batch []row.Mutation) error
	// Get returns the merged row stored under key, tombstones and expired cells included;
	// the handler filters what is visible. The returned row belongs to the caller. key is
	// never empty and never longer than row.MaxKeySize.
	Get(key []byte) (r row.Row, found bool, err error)
}

// LeveledStore is a Store that serves each request at a consistency level: a cluster
// coordinator. KURA.CONSISTENCY sets a connection's level; requests of connections that
// set none use Apply and Get, at the store's default level.
type LeveledStore interface {
	Store
	// Levels lists the levels the store accepts, uppercase (ONE, TWO, QUORUM, ALL).
	Levels() []string
	ApplyAt(level string, batch []row.Mutation) error
	GetAt(level string, key []byte) (r row.Row, found bool, err error)
}

// Scanner is the optional Store capability behind SCAN and KEYS: the keys in token order,
// a page at a time, from a cursor that is a position on the ring (package scan), so that
// it means the same on every node and after restarts. The cluster coordinator and a
// single node's store have it; without it SCAN and KEYS are errors.
type Scanner interface {
	// Scan returns the rows of a page of keys from cursor on, about count of them, in
	// token order, and the cursor of the next page, 0 after the last. Keys are as clients
	// give them, rows as Get returns them (tombstones and expired cells included: the
	// handler filters what is visible). Every key stored for the whole scan (in a
	// cluster: acknowledged at the level read, QUORUM by default) is in some page of a
	// scan from 0 to 0. level is
	// a consistency level as LeveledStore takes it, "" for the store's default; a store
	// without levels ignores it. The rows belong to the caller. Safe for concurrent use;
	// blocks for the page's reads.
	Scan(level string, cursor uint64, count int) (rows []row.Mutation, next uint64, err error)
}

// InfoSection is one "# Name" block of INFO output; Config.Info supplies the node's own
// (the engine's, later the cluster's).
type InfoSection struct {
	// Name is the section title as printed ("Engine"); INFO matches it case-insensitively.
	Name string
	// Fields are printed as "key:value" lines in order.
	Fields []InfoField
}

// InfoField is one "key:value" line of INFO output. Neither part may contain CR or LF.
type InfoField struct{ Key, Value string }

// Defaults of the Config limits.
const (
	// DefaultMaxKeyBytes is the largest key, and the largest hash field name: row.MaxKeySize.
	DefaultMaxKeyBytes = row.MaxKeySize
	// DefaultMaxValueBytes is the largest string value or hash field value (16 MiB): large
	// enough for any cache entry, small enough that one value never dominates a memtable
	// or a replica stream.
	DefaultMaxValueBytes = 16 << 20
	// DefaultMaxRequestBytes bounds one whole command frame (64 MiB): an MSET or HSET of a
	// few maximal values, and a cap on what one connection can make the server buffer.
	DefaultMaxRequestBytes = 64 << 20
	// DefaultMaxArgs bounds the arguments of one command, as Redis's 1M multibulk limit.
	DefaultMaxArgs = 1 << 20
	// DefaultMaxConnections is Redis's maxclients default.
	DefaultMaxConnections = 10000
	// DefaultKeysLimit is the most keys KEYS replies with (10,000): a listing a terminal
	// can show, in a reply of well under a megabyte of typical keys.
	DefaultKeysLimit = 10000
)

// Config configures a Handler and a Server. Zero values take the documented defaults.
type Config struct {
	// Store executes reads and writes. Required.
	Store Store
	// Clock issues write timestamps (Now) and gives "now" for expiry (Physical). Defaults
	// to a clock on the system time; a node passes its own so that every front end and
	// the coordinator share one.
	Clock *hlc.Clock
	// Password, when not empty, is the default user's password (Redis's requirepass:
	// ">password" on top of "on nopass ~* &* +@all"), so that every command but AUTH,
	// HELLO and QUIT answers -NOAUTH until the connection authenticates. Only used when
	// ACL is nil: a caller that passes a registry gives it the password itself
	// (NewACLRegistry).
	Password string
	// ACL holds the users and their rules (package acl; see acl.go and
	// docs/design/acl.md). Nil makes a registry of the handler's own with only the default
	// user (NewACLRegistry(Password)). Several handlers may share one.
	ACL *acl.Registry
	// ACLCommit, when set, is how ACL SETUSER, DELUSER and LOAD change the users: it is
	// given the prepared change (cleartext passwords already hashed) and must apply it to
	// ACL, on this node and, in a cluster, on every node (the lead's metadata log proposes
	// it and applies it everywhere with acl.Registry.Apply); the command replies when it
	// returns, with its error if any. ctx bounds the wait (10 s). Nil applies changes to
	// ACL directly. Either way nothing is written to ACLFile until ACL SAVE, as in Redis.
	ACLCommit func(ctx context.Context, ch acl.Change) error
	// ACLFile is the ACL file ACL SAVE writes and ACL LOAD reads (Redis's format, see
	// package acl); "" makes both errors. Loading it at start is the caller's job
	// (LoadACLFile), before the handler serves.
	ACLFile string
	// KeysEstimate returns the number of stored rows for DBSIZE and INFO keyspace (in a
	// cluster, the whole cluster's), and whether it is exact. Nil reports 0.
	KeysEstimate func() (n int64, exact bool)
	// Info returns extra INFO sections (the engine's). Nil adds none. Called only by INFO.
	Info func() []InfoSection
	// Topology returns the cluster's layout for KURA.TOPOLOGY (JSON: the members with
	// their hosts, roles and client addresses, the tokens, the replication factor and
	// the placement), which token-aware clients use to send each key to one of its
	// replicas. Nil (a node outside a cluster) makes KURA.TOPOLOGY an error.
	Topology func() ([]byte, error)
	// ShardID names this node's counter shards (see counter.go): the node's ID, unique in
	// its cluster and kept across restarts. Default "0", for a node outside a cluster.
	ShardID string
	// Version is kura's version as shown by INFO and HELLO. Default "dev".
	Version string
	// ErrorPrefix maps a Store error to a RESP error prefix; returning "" falls back to the
	// package's ErrorPrefix. Nil uses ErrorPrefix alone.
	ErrorPrefix func(error) string

	// MaxKeyBytes is the largest key and hash field name; larger ones get an error reply.
	// Default and maximum DefaultMaxKeyBytes (field names are capped one byte lower, for
	// their column prefix).
	MaxKeyBytes int
	// MaxValueBytes is the largest string or hash field value; larger ones get an error
	// reply. Default DefaultMaxValueBytes, maximum row.MaxValueSize.
	MaxValueBytes int
	// MaxRequestBytes bounds one command frame as sent, headers included. A larger frame
	// gets a protocol error and its connection is closed as soon as its size is announced.
	// Default DefaultMaxRequestBytes.
	MaxRequestBytes int
	// MaxArgs bounds the arguments of one command, the command name included. A frame
	// announcing more is treated like an oversized frame. Default DefaultMaxArgs.
	MaxArgs int
	// MaxConnections bounds concurrent client connections; extra ones get
	// "-ERR max number of clients reached" and are closed. Default DefaultMaxConnections.
	MaxConnections int
	// KeysLimit is the most keys KEYS replies with: a pattern that matches more gets an
	// error telling the client to use SCAN, which pages. KEYS reads the whole keyspace
	// whatever the limit; it bounds the reply. Default DefaultKeysLimit.
	KeysLimit int
	// IdleTimeout closes connections that send nothing for this long. Default 0: never,
	// like Redis's timeout 0.
	IdleTimeout time.Duration
	// SlowlogThreshold is how long a command must take to enter the slow log (SLOWLOG)
	// and count as a latency spike (LATENCY); 1µs or less takes every command, a negative
	// value none. Default DefaultSlowlogThreshold (10 ms, Redis's slowlog-log-slower-than).
	SlowlogThreshold time.Duration
	// SlowlogMaxLen is how many entries the slow log keeps, the newest. Default
	// DefaultSlowlogMaxLen (128, as Redis), at most MaxSlowlogMaxLen.
	SlowlogMaxLen int
	// Rand is HRANDFIELD's randomness, used under a lock. Nil seeds one from the system.
	Rand *rand.Rand
	// Ticks reads a monotonic clock in microseconds from any origin: what times commands
	// (SLOWLOG, LATENCY, CLIENT LIST's age and idle). Default: the process's monotonic
	// clock, which costs about half a wall-clock read; tests pass their own clock.
	Ticks func() int64

	// Registerer receives the server's metrics (see metrics.go). Nil means no metrics.
	Registerer prometheus.Registerer
}

// ErrConfig is returned by New and NewHandler for an unusable Config.
var ErrConfig = errors.New("resp: invalid config")

// withDefaults returns c with zero fields defaulted, or an error for impossible values.
func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, fmt.Errorf("%w: Store is required", ErrConfig)
	}
	if c.Clock == nil {
		c.Clock = hlc.New(nil)
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.ShardID == "" {
		c.ShardID = "0"
	}
	if c.SlowlogThreshold == 0 {
		c.SlowlogThreshold = DefaultSlowlogThreshold
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Ticks == nil {
		origin := time.Now()
		c.Ticks = func() int64 { return int64(time.Since(origin) / time.Microsecond) }
	}
	def := func(v *int, d, hi int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 0 || *v > hi {
			return fmt.Errorf("%w: %s %d out of range [1, %d]", ErrConfig, name, *v, hi)
		}
		return nil
	}
	const maxInt = int(^uint(0) >> 1)
	return c, errors.Join(
		def(&c.MaxKeyBytes, DefaultMaxKeyBytes, row.MaxKeySize, "MaxKeyBytes"),
		def(&c.MaxValueBytes, DefaultMaxValueBytes, row.MaxValueSize, "MaxValueBytes"),
		def(&c.MaxRequestBytes, DefaultMaxRequestBytes, maxInt, "MaxRequestBytes"),
		def(&c.MaxArgs, DefaultMaxArgs, maxInt, "MaxArgs"),
		def(&c.MaxConnections, DefaultMaxConnections, maxInt, "MaxConnections"),
		def(&c.KeysLimit, DefaultKeysLimit, maxInt, "KeysLimit"),
		def(&c.SlowlogMaxLen, DefaultSlowlogMaxLen, MaxSlowlogMaxLen, "SlowlogMaxLen"),
		nonNegative(c.IdleTimeout),
	)
}

func nonNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative IdleTimeout %v", ErrConfig, d)
	}
	return nil
}

// Reply prefixes for Store errors, beside Redis's own ERR, WRONGTYPE, NOAUTH...
const (
	// PrefixUnavailable: the request could not be served and nothing was written (the
	// store is closed; later also too few live replicas).
	PrefixUnavailable = "UNAVAILABLE"
	// PrefixCorrupt: stored data failed a checksum or did not decode.
	PrefixCorrupt = "CORRUPT"
	// PrefixNoSpace: the node's disk is nearly full and it refused the write, which was
	// not applied; reads go on, and writes resume once space is freed.
	PrefixNoSpace = "NOSPACE"
	// PrefixStore: any other store failure (an I/O error); a write may or may not have
	// been applied.
	PrefixStore = "STOREERR"
)

// ErrorPrefix returns the RESP error prefix for a Store error: ERR for invalid requests,
// PrefixUnavailable, PrefixCorrupt, PrefixNoSpace, or PrefixStore for anything it does not recognise.
func ErrorPrefix(err error) string {
	switch {
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, row.ErrInvalid),
		errors.Is(err, row.ErrKeyTooLarge), errors.Is(err, row.ErrEmptyKey),
		errors.Is(err, row.ErrValueTooLarge):
		return "ERR"
	case errors.Is(err, engine.ErrClosed):
		return PrefixUnavailable
	case errors.Is(err, engine.ErrCorrupt), errors.Is(err, row.ErrCorrupt):
		return PrefixCorrupt
	case errors.Is(err, engine.ErrNoSpace):
		return PrefixNoSpace
	}
	return PrefixStore
}
