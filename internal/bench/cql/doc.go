// Package cql drives Apache Cassandra (or any CQL server) as a kura bench target, so
// that kura and Cassandra can be measured side by side by one tool.
//
// The schema, the statements and the defaults follow YCSB's cassandra binding
// (site.ycsb.db.CassandraCQLClient) so that figures are comparable with published YCSB
// results:
//
//	CREATE TABLE ycsb.usertable (y_id varchar PRIMARY KEY, field0 varchar, ..., field9 varchar)
//
//	read    SELECT <fields | *> FROM ks.t WHERE y_id = ? LIMIT 1
//	scan    SELECT <fields | *> FROM ks.t WHERE token(y_id) >= token(?) LIMIT ?
//	update  UPDATE ks.t SET f1 = ?, f2 = ? WHERE y_id = ?
//	insert  INSERT INTO ks.t (y_id, f1, f2) VALUES (?, ?, ?)
//	ping    SELECT release_version FROM system.local WHERE key = 'local'
//
// Values are bound to varchar columns, so they must be valid UTF-8; YCSB's (and kura
// bench's) generated values are ASCII letters. Scans walk the token ring, as in YCSB:
// with the default Murmur3 partitioner they visit records in hash order, not key order.
//
// A target is named by a URL such as cql://127.0.0.1:9042/ycsb?consistency=QUORUM
// (ParseURL; every parameter is listed at ParseConfig). Target.Close closes the shared
// session; scripts/cassandra.sh runs a single local node for trying it out.
//
// Consistency levels default to ONE for reads and writes, YCSB's default; set QUORUM
// (or any other level) explicitly to compare with a kura run at the same level.
//
// Ping has no dedicated CQL message that the driver exposes (the OPTIONS frame is
// internal to gocql), so it reads one row of the coordinator's node-local system.local
// table at ONE: one round trip that touches no replicated data.
//
// Sessions: one gocql session per Target is shared by all its clients, as YCSB shares
// one driver session between its threads. A gocql session multiplexes many concurrent
// requests over ConnsPerHost connections to each host, so Open is cheap: the first
// Open connects, later ones return a thin per-thread client. Statements are prepared
// by gocql once per statement text and cached session-wide; each client caches the
// statement text per operation and field set so that the hot path builds no strings.
//
// The driver's write coalescing (which delays every request by up to 200µs to batch
// socket writes) is off by default because it adds latency a benchmark would charge
// to the server.
package cql
