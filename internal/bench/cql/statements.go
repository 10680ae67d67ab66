package cql

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// keyColumn is the primary key column, named as in YCSB's cassandra binding.
const keyColumn = "y_id"

// pingStmt reads the coordinator's own row of a node-local table: one round trip that
// touches no replicated data.
const pingStmt = "SELECT release_version FROM system.local WHERE key = 'local'"

// checkIdent refuses names that would need quoting in CQL. Names are spliced into
// statement text, so this is also what keeps a field name from injecting CQL.
func checkIdent(name string) error {
	if name == "" || len(name) > 48 {
		return fmt.Errorf("%w: identifier %q must have 1 to 48 characters", ErrBadConfig, name)
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		digit := r >= '0' && r <= '9'
		if !letter && !(i > 0 && (digit || r == '_')) {
			return fmt.Errorf("%w: identifier %q: want a letter followed by letters, digits or _", ErrBadConfig, name)
		}
	}
	return nil
}

// checkIdents checks every name of a field list.
func checkIdents(names []string) error {
	for _, n := range names {
		if err := checkIdent(n); err != nil {
			return err
		}
	}
	return nil
}

// selectList renders the column list of a SELECT: the fields, or * when fields is nil.
func selectList(fields []string) string {
	if fields == nil {
		return "*"
	}
	return strings.Join(fields, ", ")
}

// readStmt reads one record. Like YCSB it says LIMIT 1; the key is the whole primary
// key, so the limit only documents intent.
func readStmt(keyspace, table string, fields []string) string {
	return "SELECT " + selectList(fields) + " FROM " + keyspace + "." + table +
		" WHERE " + keyColumn + " = ? LIMIT 1"
}

// scanStmt reads up to a bound number of records from a bound start key in token
// order, YCSB's scan: with a hashing partitioner the order is not key order.
func scanStmt(keyspace, table string, fields []string) string {
	return "SELECT " + selectList(fields) + " FROM " + keyspace + "." + table +
		" WHERE token(" + keyColumn + ") >= token(?) LIMIT ?"
}

// insertStmt writes the key and the fields; the key is bound first.
func insertStmt(keyspace, table string, fields []string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + keyspace + "." + table + " (" + keyColumn)
	for _, f := range fields {
		b.WriteString(", " + f)
	}
	b.WriteString(") VALUES (?")
	b.WriteString(strings.Repeat(", ?", len(fields)))
	b.WriteString(")")
	return b.String()
}

// updateStmt overwrites the fields of one key; the key is bound last. An UPDATE, not
// an INSERT, as in YCSB: both are upserts in CQL, but only INSERT sets the row marker.
func updateStmt(keyspace, table string, fields []string) string {
	var b strings.Builder
	b.WriteString("UPDATE " + keyspace + "." + table + " SET ")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f + " = ?")
	}
	b.WriteString(" WHERE " + keyColumn + " = ?")
	return b.String()
}

// createKeyspaceStmt creates the keyspace with SimpleStrategy unless it exists.
func createKeyspaceStmt(keyspace string, replicationFactor int) string {
	return "CREATE KEYSPACE IF NOT EXISTS " + keyspace +
		" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': " +
		strconv.Itoa(replicationFactor) + "}"
}

// createTableStmt creates YCSB's table of a varchar key and fieldCount varchar fields
// named field0, field1, ... unless it exists.
func createTableStmt(keyspace, table string, fieldCount int) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + keyspace + "." + table +
		" (" + keyColumn + " varchar PRIMARY KEY")
	for i := range fieldCount {
		b.WriteString(", field" + strconv.Itoa(i) + " varchar")
	}
	b.WriteString(")")
	return b.String()
}

// opKind names the statement kinds a client caches.
type opKind byte

const (
	opRead opKind = iota
	opScan
	opInsert
	opUpdate
)

// stmtCache remembers statement text per operation and field list for one client, so
// that the hot path builds no strings. Not safe for concurrent use.
type stmtCache struct {
	keyspace, table string
	texts           map[string]string
	key             []byte // scratch for the lookup key
}

func newStmtCache(keyspace, table string) *stmtCache {
	return &stmtCache{keyspace: keyspace, table: table, texts: make(map[string]string)}
}

// get returns the statement for op over fields (nil meaning all fields for reads and
// scans), building and checking it on first use.
func (c *stmtCache) get(op opKind, fields []string) (string, error) {
	c.key = append(c.key[:0], byte(op))
	if fields == nil {
		c.key = append(c.key, '*')
	}
	for _, f := range fields {
		// Length-prefixed, so that no two field lists share a key.
		c.key = binary.AppendUvarint(c.key, uint64(len(f)))
		c.key = append(c.key, f...)
	}
	if s, ok := c.texts[string(c.key)]; ok { // no allocation: the compiler elides it
		return s, nil
	}
	if err := checkIdents(fields); err != nil {
		return "", err
	}
	var s string
	switch op {
	case opRead:
		s = readStmt(c.keyspace, c.table, fields)
	case opScan:
		s = scanStmt(c.keyspace, c.table, fields)
	case opInsert:
		s = insertStmt(c.keyspace, c.table, fields)
	case opUpdate:
		s = updateStmt(c.keyspace, c.table, fields)
	}
	c.texts[string(c.key)] = s
	return s, nil
}
