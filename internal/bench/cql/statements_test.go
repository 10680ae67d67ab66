package cql

import (
	"context"
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/bench"
)

func TestStatementTextFollowsYCSB(t *testing.T) {
	two := []string{"field0", "field3"}
	for _, tc := range []struct{ got, want string }{
		{readStmt("ycsb", "usertable", nil),
			"SELECT * FROM ycsb.usertable WHERE y_id = ? LIMIT 1"},
		{readStmt("ycsb", "usertable", two),
			"SELECT field0, field3 FROM ycsb.usertable WHERE y_id = ? LIMIT 1"},
		{scanStmt("ks", "t", nil),
			"SELECT * FROM ks.t WHERE token(y_id) >= token(?) LIMIT ?"},
		{scanStmt("ks", "t", two),
			"SELECT field0, field3 FROM ks.t WHERE token(y_id) >= token(?) LIMIT ?"},
		{insertStmt("ks", "t", two),
			"INSERT INTO ks.t (y_id, field0, field3) VALUES (?, ?, ?)"},
		{insertStmt("ks", "t", nil),
			"INSERT INTO ks.t (y_id) VALUES (?)"},
		{updateStmt("ks", "t", two),
			"UPDATE ks.t SET field0 = ?, field3 = ? WHERE y_id = ?"},
		{updateStmt("ks", "t", []string{"field9"}),
			"UPDATE ks.t SET field9 = ? WHERE y_id = ?"},
		{createKeyspaceStmt("ycsb", 3),
			"CREATE KEYSPACE IF NOT EXISTS ycsb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"},
		{createTableStmt("ycsb", "usertable", 3),
			"CREATE TABLE IF NOT EXISTS ycsb.usertable (y_id varchar PRIMARY KEY, field0 varchar, field1 varchar, field2 varchar)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}

func TestStmtCacheKeepsFieldListsApart(t *testing.T) {
	c := newStmtCache("ks", "t")
	lists := [][]string{nil, {}, {"a"}, {"ab"}, {"a", "b"}, {"b", "a"}, {"ab", "c"}, {"a", "bc"}}
	for _, op := range []opKind{opRead, opScan, opInsert, opUpdate} {
		for _, fields := range lists {
			if op == opUpdate && len(fields) == 0 {
				continue
			}
			// Twice: the first call builds the text, the second must find the same one.
			for range 2 {
				got, err := c.get(op, fields)
				if err != nil {
					t.Fatal(err)
				}
				var want string
				switch op {
				case opRead:
					want = readStmt("ks", "t", fields)
				case opScan:
					want = scanStmt("ks", "t", fields)
				case opInsert:
					want = insertStmt("ks", "t", fields)
				case opUpdate:
					want = updateStmt("ks", "t", fields)
				}
				if got != want {
					t.Errorf("op %d fields %q: got %q, want %q", op, fields, got, want)
				}
			}
		}
	}
}

func TestStmtCacheHitDoesNotAllocate(t *testing.T) {
	c := newStmtCache("ycsb", "usertable")
	fields := []string{"field0", "field1", "field2"}
	if _, err := c.get(opUpdate, fields); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.get(opUpdate, fields) }); n != 0 {
		t.Fatalf("a cached statement costs %v allocations, want 0", n)
	}
}

func TestFieldNamesThatNeedQuotingAreRefused(t *testing.T) {
	c := newStmtCache("ks", "t")
	for _, name := range []string{"", "field 0", "f;DROP TABLE t", "0field", "_f", "\"f\"", "féld"} {
		if _, err := c.get(opRead, []string{"field0", name}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("field %q: error = %v, want ErrBadConfig", name, err)
		}
	}
}

// The checks below run before the client touches its session, so a client without one
// is enough to see them.

func TestClientRefusesBadRequestsBeforeSending(t *testing.T) {
	ctx := context.Background()
	c := newClient(nil, Config{Keyspace: "ks", Table: "t"}, 0, 0)
	if err := c.Update(ctx, "k", nil); !errors.Is(err, errNoFields) {
		t.Errorf("Update without fields: error = %v, want errNoFields", err)
	}
	bad := []bench.Field{{Name: "x;y", Value: []byte("v")}}
	if err := c.Insert(ctx, "k", bad); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Insert with bad field name: error = %v, want ErrBadConfig", err)
	}
	if err := c.Update(ctx, "k", bad); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Update with bad field name: error = %v, want ErrBadConfig", err)
	}
	if _, err := c.Read(ctx, "k", []string{"a b"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Read with bad field name: error = %v, want ErrBadConfig", err)
	}
	if err := c.Scan(ctx, "k", 3, []string{"a b"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Scan with bad field name: error = %v, want ErrBadConfig", err)
	}
}

func TestClosedClientRefusesEveryOperation(t *testing.T) {
	ctx := context.Background()
	c := newClient(nil, Config{Keyspace: "ks", Table: "t"}, 0, 0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	f := []bench.Field{{Name: "field0", Value: []byte("v")}}
	_, errRead := c.Read(ctx, "k", nil)
	for name, err := range map[string]error{
		"read":   errRead,
		"scan":   c.Scan(ctx, "k", 1, nil),
		"insert": c.Insert(ctx, "k", f),
		"update": c.Update(ctx, "k", f),
		"ping":   c.Ping(ctx),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
}
