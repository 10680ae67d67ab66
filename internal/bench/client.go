package bench

import (
	"context"
	"errors"
)

// Field is one field of a record: YCSB's records are a key and fieldcount named fields.
type Field struct {
	Name  string
	Value []byte
}

// Client is one connection to the system under test, driven by one benchmark thread.
// A Client is not safe for concurrent use; the runner gives every thread its own.
// Methods block until the server has answered or ctx is done. Values passed in are only
// read during the call and may be reused by the caller afterwards.
type Client interface {
	// Read reads fields of key (all of them when fields is nil) and reports whether the
	// record exists.
	Read(ctx context.Context, key string, fields []string) (found bool, err error)
	// Scan reads up to count records from startKey on, in the target's order (token
	// order for kura and Cassandra: the records whose tokens follow startKey's). Targets
	// that cannot scan return ErrUnsupported.
	Scan(ctx context.Context, startKey string, count int, fields []string) error
	// Update overwrites the given fields of key.
	Update(ctx context.Context, key string, values []Field) error
	// Insert writes a new record.
	Insert(ctx context.Context, key string, values []Field) error
	// Ping makes one round trip that touches no data: the ceiling a target can reach
	// through the same connections.
	Ping(ctx context.Context) error
	// Close releases the connection.
	Close() error
}

// Target opens clients to one system under test (a list of RESP servers, a Cassandra
// cluster, an in-process no-op). Open is safe for concurrent use.
type Target interface {
	// Name describes the target in results, e.g. "resp://127.0.0.1:6380".
	Name() string
	// Open connects the client for thread number thread (0-based) of threads.
	Open(ctx context.Context, thread, threads int) (Client, error)
}

// ErrUnsupported is returned by a Client for an operation its target cannot do (a scan
// on a server without range scans).
var ErrUnsupported = errors.New("bench: operation not supported by this target")
