// Package resp is kura's Redis-protocol front end: it speaks RESP2 and RESP3 to redis-cli,
// redis-benchmark and Redis client libraries and maps Redis strings and hashes onto kura
// rows.
//
// The package has two layers. Handler holds every command's semantics in plain synchronous
// code: it takes an argument vector and a per-connection Session and appends the reply
// to a byte slice, reading and writing through the small Store interface and taking
// time from an injected *hlc.Clock. Tests drive it without sockets (testdata/*.txt are
// transcripts). Server is the thin driver: it owns the listener, one goroutine per
// connection, the limits that protect the process, graceful shutdown and metrics. It uses
// redcon's RESP reader (which also understands inline, telnet-style commands) and redcon's
// reply encoders, but not redcon.Server, whose Close neither waits for running handlers nor
// lets them flush their replies, and which has no connection or request-size limits.
//
// # Protocols
//
// A connection speaks RESP2 until it sends HELLO 3, and RESP2 again after HELLO 2; the
// choice is the Session's. Requests are read the same way in both. Replies differ only
// where Redis 7's do, through the proto type's methods: "no value" is RESP3's null (_)
// rather than RESP2's null bulk string; HGETALL, CONFIG GET, HELLO and COMMAND DOCS reply
// with maps rather than flat arrays; INFO and CLIENT INFO with verbatim text. No command
// kura has returns a double, a boolean, a set or a push in Redis, so kura writes none of
// those types. redis-py 8 and go-redis 9 ask for RESP3 by default.
//
// # Data model
//
// A Redis key is a row key. A row's columns are namespaced by a one-byte prefix so that a
// key's type is never ambiguous:
//
//	"\x00"        the value of a string key (StringColumn)
//	"\x01" + F    field F of a hash key (HashFieldPrefix)
//
// A key's type is read from its visible (live, unexpired) cells: a visible string column
// makes it a string, otherwise any visible hash column makes it a hash, otherwise the key
// does not exist. Columns with other prefixes are ignored (reserved for future types).
//
// Writes are last-write-wins merges (see package row) with timestamps from clock.Now():
//
//   - SET writes blind (no read): a row tombstone at ts-1 plus the string cell at ts. The
//     tombstone shadows everything older, whatever type the key held, and the new cell
//     survives it. SET NX, XX, GET and KEEPTTL read first. MSET is one atomic batch.
//   - HSET and HMSET read first (WRONGTYPE on a string; HSET's reply counts new fields),
//     then write the field cells plus a tombstone of the string column at the same ts. The
//     tombstone makes a race between SET and HSET converge on the later of the two instead
//     of leaving a row with both types. New fields inherit the key's current expiry so that
//     HSET keeps a key's TTL as Redis does.
//   - HDEL writes column tombstones for the fields it saw; DEL a row tombstone for the keys
//     it saw (both read first to count).
//   - EXPIRE, PEXPIRE and PERSIST read the row and rewrite its visible cells with a new
//     timestamp and the new expiry (none for PERSIST); a non-positive EXPIRE deletes the
//     key, as in Redis. They cost a rewrite of the whole key.
//   - A key's TTL is the remaining time of its earliest-expiring visible cell.
//
// Reads and expiry use clock.Physical() as "now"; write timestamps use clock.Now(), which
// never repeats. Read-then-write commands are not atomic against concurrent writers of the
// same key: on one node the window is microseconds, and the merge keeps replicas
// convergent whatever interleaving happened.
//
// Redis allows the empty key; kura rows do not (row.ValidateKey), so reads of "" find
// nothing and writes of "" are rejected with an error reply.
//
// # Differences from Redis
//
// Only db 0 exists. DBSIZE and INFO keyspace report the store's row estimate (which may
// count deleted rows until they are purged) and INFO says whether it is exact. HGETALL
// returns fields sorted by name. COMMAND returns Redis 7's entries without key specs, tips or subcommand entries.
//
// # Listing keys: SCAN, KEYS, HSCAN, DBSIZE
//
// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] lists the keys of the whole
// cluster in token order (Murmur3, as Cassandra), through the store's Scanner. The
// cursor is a decimal unsigned 64-bit integer, a position on the ring (package scan): 0
// starts, 0 returned ends, and a cursor names no node, so a scan may go on through any
// node, after restarts and ring changes. Guarantees, as Redis's: a key that existed for
// the whole scan (in a cluster: acknowledged at QUORUM before it began, not deleted
// during it) is returned at least once; a key that never existed is never returned;
// keys written or deleted during the scan may or may not be. In a cluster each page is
// read from a quorum of the replicas of its token range and their rows are merged, so a
// key one replica lacks is still found and a delete one replica has is honoured; a
// connection's KURA.CONSISTENCY sets the level (at ONE a lagging replica can hide a
// key). Differences from Redis: COUNT is the number of keys a page examines, deleted and
// expired ones included, capped at 65,536 (Redis: a hint of the same kind); a page never
// splits the keys of one token, so it may hold a few more or fewer than COUNT; MATCH and
// TYPE filter a page after it is read, so pages may come back empty before the end; a
// key is returned twice only if a client repeats a cursor. TYPE takes string or hash
// (any case); another type name matches nothing, as in Redis 7.0. MATCH is Redis's glob
// (*, ?, [abc], [^a], [a-z], backslash escapes), byte for byte as Redis's stringmatchlen.
// A node outside a cluster stores keys in key order, not token order, so each of its
// pages is one pass over its engine (O(keys)) keeping the lowest tokens from the cursor;
// the cursor means the same there.
//
// KEYS pattern reads every page and replies with the matching keys in token order, or
// with an error once more than Config.KeysLimit match (keys_limit; use SCAN); a pattern
// without *, ?, [ or backslash is one key, read directly. HSCAN key cursor [MATCH]
// [COUNT] [NOVALUES] replies with cursor 0 and every matching field at once, in field
// order, whatever the cursor: a hash is one row, read whole by every call (Redis too
// answers small hashes whole). DBSIZE is Config.KeysEstimate: on a single node the
// engine's row count (exact for memory, and btree without its write buffer), in a
// cluster an estimate of the whole cluster's keys from this node's own rows and the
// share of the ring it replicates; INFO keyspace's keys_exact says which. Both count
// deleted rows until they are purged; SCAN counts exactly, at the cost of a scan.
//
// # Errors
//
// Client mistakes get Redis's own error texts. Store failures map to reply prefixes by
// ErrorPrefix: ERR for invalid requests, UNAVAILABLE when the store is closed, CORRUPT for
// corrupt data and STOREERR for anything else; Config.ErrorPrefix lets the cluster add its
// own (UNAVAILABLE, TIMEOUT, OVERLOADED) without touching the handler.
//
// # Limits
//
// Every limit is a Config field with a documented default. Oversized keys, field names and
// values within an acceptable request get an error reply and the connection goes on. A
// request frame larger than MaxRequestBytes, or announcing more than MaxArgs arguments, is
// refused while it is being read, before it is buffered: the client gets a protocol error
// and only its connection is closed. (Inline, telnet-style commands are bounded to 64 KiB
// per line; their argument count is checked by the handler.) Connections over
// MaxConnections get "-ERR max number of clients reached" and are closed. Rows themselves
// have no size limit here: a hash can grow by many HSETs.
//
// # Metrics
//
// With Config.Registerer set, the server exports kura_resp_requests_total{command,result}
// (result "ok" or "error"; unknown commands count as command "unknown"),
// kura_resp_request_duration_seconds{command}, kura_resp_connected_clients,
// kura_resp_connections_total, kura_resp_rejected_connections_total and
// kura_resp_protocol_errors_total.
//
// # Shutdown
//
// Server.Close stops accepting, lets every connection finish the commands it has already
// read and write their replies, then closes the connections and returns once all of their
// goroutines have exited. It does not close the Store.
package resp
