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
//	"\x02" + N    node N's shard of a string counter (see Counters)
//	"\x03" + ...  node N's shard of a hash field counter
//
// A key's type is read from its visible (live, unexpired) cells: a visible string column
// makes it a string, otherwise any visible hash column makes it a hash, otherwise the key
// does not exist. Columns with other prefixes are ignored (reserved for future types).
//
// Writes are last-write-wins merges (see package row) with timestamps from clock.Now():
//
//   - SET writes blind (no read): a row tombstone at ts-1 plus the string cell at ts. The
//     tombstone shadows everything older, whatever type the key held, and the new cell
//     survives it. SET NX, XX, GET and KEEPTTL read first, at the key's leader as the
//     leader commands do (see Leaders). MSET is one atomic batch.
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
//   - SETEX and PSETEX are SET with EX or PX: blind. GETDEL, UNLINK and FLUSHALL write row
//     tombstones as DEL does (FLUSHALL on every row the store holds, see Flusher). GETEX,
//     EXPIREAT and PEXPIREAT rewrite expiries as EXPIRE does. APPEND, SETRANGE, SETNX and
//     MSETNX read the string, then write the new value as SET does (APPEND and SETRANGE
//     keep the key's expiry); HSETNX reads the hash, then writes as HSET does.
//
// Reads and expiry use clock.Physical() as "now"; write timestamps use clock.Now(), which
// never repeats. Commands that read a key to decide what to write (INCR and the other
// counters, EXPIRE, PERSIST, and the commands flagged flagLeader in the table) run at the
// key's leader, serialized per key there (see Leaders). Other read-then-write commands
// (HSET counting new fields, DEL counting keys) are not atomic against concurrent writers
// of the key; the merge keeps replicas convergent whatever interleaving happened.
//
// Last write wins by timestamp, so in a cluster the order of two writes through different
// nodes is their clocks' (docs/design/clocks.md). A node's clock observes the clocks its
// internode messages carry and the newest timestamp of every row its store reads, so a
// write made after a read of the key (DEL, HSET, a leader's command, or a SET after a GET
// through the same node) or after the node heard of the earlier write (as one of its
// replicas, say) gets a larger timestamp whatever the skew between the nodes' clocks. A
// blind SET through a node that has heard nothing of an earlier write is ordered by the
// physical clocks: correctly when the writes are further apart than the clocks' offset,
// which max_clock_offset bounds, since a node whose clock is further off than that from
// most of its peers' refuses writes (UNAVAILABLE).
//
// # Leaders
//
// A key's leader is where its read-modify-write commands run: on a single node, the node
// itself, under a per-key lock; in a cluster (a Store that implements Leader), the first
// live replica of the key in ring order, the same for every coordinator. The coordinator
// sends the commands there (wire.MethodLeader); the leader takes the key's lock, reads
// its own copy of the row merged with a read at the connection's consistency level, runs
// the commands against an overlay of that row, and writes what they wrote as one
// mutation: to its own copy first, then to the replicas at the level. Two leader commands
// on one key therefore never interleave while one leader serves it. When the leader
// fails, the next live replica leads; commands in flight on the failed one get an error
// (their effect is unknown to the client, as with any write that timed out).
//
// # Counters
//
// INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT, HINCRBY and HINCRBYFLOAT keep a column's value
// as a state-based CRDT, like Riak's and Cassandra's counters: the base cell (what SET or
// HSET last wrote, or nothing) plus one shard per node that incremented it, holding that
// node's whole contribution. A node writes only its own shard, from its exact local copy,
// serialized at the leader, with increasing timestamps; so last-write-wins keeps each
// shard's largest version, and replicas that have seen the same shards agree on the sum
// whatever order the writes reached them in and whatever consistency level they were
// written at. No increment acknowledged at any level is lost: two leaders (during a
// failover) write two shards, and both count. Every reader (GET, HGET, HGETALL, MGET,
// TTL...) sees the sum as the column's value; the shard columns are invisible.
//
// A shard carries the generation it adds to: the timestamp of the base cell it saw (0
// for none), and counts only while the base cell is not newer. SET, HSET, HDEL, DEL,
// EXPIRE and PERSIST end a counter: SET, DEL and the EXPIRE or PERSIST of a key with
// shards write a row tombstone below their timestamp (EXPIRE and PERSIST rewrite the sum
// as the new value); HSET and HDEL write a new base cell or tombstone and tombstone the
// field's shards they saw. So, as in Redis:
//
//   - DEL then INCR gives 1; SET k 10 then INCR gives 11; INCR keeps the key's TTL.
//   - INCR then EXPIRE is a rate limiter: after the expiry, INCR gives 1 again with no TTL.
//   - Replies keep Redis's errors: "value is not an integer or out of range" (also for a
//     float value), "increment or decrement would overflow", WRONGTYPE, "value is not a
//     valid float", "increment would produce NaN or Infinity", "hash value is not an
//     integer" / "a float".
//   - Two INCRs never return the same value while one leader serves the key (the normal
//     case), so INCR works as a unique-ID generator then; during a leader change (a
//     replica failing) two INCRs through different leaders may return the same value,
//     though both are counted. Use a value from INCR as an ID only when that is enough.
//   - A SET (or HSET of the field) concurrent with INCRs: the INCRs that reached the leader
//     before the SET was written are overwritten with the old value, as in Redis; those
//     after it add to the new value. An INCR acknowledged at QUORUM before a SET began is
//     overwritten; one that began after a SET acknowledged at QUORUM adds to it.
//   - INCRBYFLOAT keeps float64 contributions, not Redis's long double: results are the
//     same to about 15 significant digits, and printed without an exponent.
//
// A node that predates counters ignores shard columns: during a rolling upgrade it shows
// a counter's base value only, and it does not know wire.MethodLeader (its coordinator
// answers with an error).
//
// # Transactions
//
// MULTI queues commands (each refused one makes EXEC abort with EXECABORT, as in Redis),
// EXEC runs them, DISCARD drops them, WATCH makes EXEC reply with a null array when a
// watched key's row changed between WATCH and EXEC (its digest at the leader differs).
// The commands run at the key's leader against an overlay: they see each other's writes,
// and everything they wrote lands as one mutation per key, atomically on each replica. A
// command that fails at run time (WRONGTYPE) does not undo the others, as in Redis. In a
// cluster a transaction, WATCHed keys included, must touch one key: one that touches
// more is refused at EXEC with a CROSSSLOT error, as Redis Cluster refuses keys in
// different slots (redis-py's default pipeline() sends MULTI/EXEC: use it for one key,
// pipeline(transaction=False) for several). A single node runs transactions on any number
// of keys, all locked and written in one batch. WATCH sees writes completed before EXEC
// checks it; a write through another coordinator that lands between the check and the
// transaction's own write (it does not go through the leader) is ordered by timestamp,
// not detected. Connection commands queued in a transaction (CLIENT SETNAME, CLIENT ID,
// HELLO...) run on the transaction's own session at the leader, not on the connection:
// send them outside MULTI.
//
// # Read-modify-write commands: APPEND, SETRANGE, SETNX, MSETNX
//
// APPEND, SETRANGE and SETNX (with GETDEL, GETEX, HSETNX, EXPIREAT and PEXPIREAT, and
// SET with NX, XX, GET or KEEPTTL, which is what go-redis's SetNX and redis-py's
// set(nx=True) send) are leader commands: each reads its key and writes a whole new value
// from what it read. What that guarantees under concurrent writers:
//
//   - On one node, leader commands on a key are serialized by the key's lock, and MSETNX
//     holds the locks of all its keys while it reads and writes them (one batch). So
//     concurrent APPENDs to a key all land, each replying with a different length;
//     concurrent SETRANGEs of disjoint parts of a string all land; of concurrent SETNXs of
//     a key exactly one replies 1 and its value stays; of concurrent MSETNXs with a key
//     in common at most one replies 1, and every key holds its values. Blind writes (SET,
//     MSET, SETEX, HSET...) and DEL do not take the lock: one that lands between a leader
//     command's read and write is overwritten by it (or overwrites it) by timestamp, so
//     "SETNX returned 1" does not prove that no SET ran meanwhile.
//   - In a cluster the same holds for APPEND, SETRANGE and SETNX while one leader serves
//     the key (see Leaders), through any coordinator, at any consistency level. During a
//     leader change (a replica failing or coming back) two leaders may each read without
//     the other's latest write: two APPENDs may then both be acknowledged and the later
//     one (by timestamp) replaces the other's value, so one suffix is lost; two SETNXs may
//     both reply 1, the later one's value staying. These are not CRDTs, unlike counters.
//   - MSETNX in a cluster cannot be serialized: its keys have different leaders. It reads
//     every key at the connection's level, and if none exists writes each key as its own
//     coordinated write, all with one timestamp. Two concurrent MSETNXs with a key in
//     common may both reply 1; then every key both wrote ends with the values of the one
//     with the later timestamp, never some of each. As MSET in a cluster it is not atomic
//     across keys: an error (TIMEOUT, UNAVAILABLE) may leave some keys written.
//
// # FLUSHDB and FLUSHALL
//
// Both delete every key, synchronously, through the store's Flusher: a row tombstone at
// one timestamp on every row each node holds, as DEL writes. In a cluster they need every
// node up and refuse with UNAVAILABLE otherwise, deleting nothing. A key written and
// acknowledged before the command began is deleted, whichever node coordinated it (the
// timestamp is the largest of every node's clock, see internal/node/flush.go); a write
// made after the reply survives; one made meanwhile may go either way. An error after
// some nodes flushed (a node failing meanwhile) leaves them flushed: running the command
// again completes it. The space returns as a delete's does, once compaction purges the
// tombstones after tombstone_grace; until then DBSIZE's estimate still counts the rows.
//
// Redis allows the empty key; kura rows do not (row.ValidateKey), so reads of "" find
// nothing and writes of "" are rejected with an error reply.
//
// # Users and ACLs
//
// Connections authenticate as users (AUTH [user] password, HELLO ... AUTH) whose Redis ACL
// rules package acl holds; every command is checked before it runs, by command, category
// and keys (acl.go), with Redis's NOAUTH, WRONGPASS and NOPERM replies. The default user
// is Redis's (on, nopass, everything) with Config.Password as its password. ACL SETUSER,
// GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, LOG, GENPASS, DRYRUN, SAVE and LOAD are
// implemented (aclcmd.go); changes go through Config.ACLCommit when a cluster sets it.
// Connections of users deleted or turned off are closed. See docs/design/acl.md.
//
// # Differences from Redis
//
// Only db 0 exists. DBSIZE and INFO keyspace report the store's row estimate (which may
// count deleted rows until they are purged) and INFO says whether it is exact. HGETALL,
// HKEYS, HVALS and HRANDFIELD with a count at least the hash's size return fields sorted
// by name. COMMAND returns Redis 7's entries without key specs, tips or subcommand entries.
// Expiry times are kept in microseconds, so EXPIREAT, PEXPIREAT and the SET, SETEX and
// GETEX options refuse times past the year 294,000 ("invalid expire time") where Redis
// takes them. UNLINK is DEL, and FLUSHDB and FLUSHALL (ASYNC or SYNC) are the same
// synchronous flush (see Flusher: in a cluster every node must be up). TOUCH counts
// existing keys and changes nothing: kura keeps no access times. OBJECT has ENCODING
// (Redis's encoding for the value as it is now: int, embstr or raw; listpack or
// hashtable; a string that APPEND or SETRANGE made is "raw" in Redis whatever its
// length) and HELP; MEMORY has USAGE (the key plus its row's encoding, not Redis's
// allocation figures; SAMPLES is ignored) and HELP. HRANDFIELD with a negative count
// refuses counts past 1,048,576 fields (Redis builds any reply asked for). APPEND and
// SETRANGE refuse values past MaxValueBytes (proto-max-bulk-len) as Redis does past its
// 512 MiB.
//
// # Diagnostics: CLIENT, SLOWLOG, LATENCY
//
// CLIENT LIST (TYPE, ID) and CLIENT INFO print Redis 7's fields that mean something in
// kura (id, addr, laddr, name, age, idle, flags, db, sub, psub, ssub, cmd, user, redir,
// resp, lib-name, lib-ver); every client is of type normal. CLIENT KILL takes the old
// ip:port form and the filters ID, TYPE, USER, ADDR, LADDR and
// SKIPME; a killed connection is closed at once, the caller's own after its reply. The
// slow log (SLOWLOG GET, LEN, RESET) keeps the last Config.SlowlogMaxLen commands that
// took Config.SlowlogThreshold or more, as Redis's (arguments cut at 32 and 128 bytes,
// AUTH's secrets and ACL SETUSER's cleartext passwords redacted), timed in the handler from the start of execution to the
// reply, store included. LATENCY HISTOGRAM reports every command's latencies in
// power-of-two microsecond buckets, as Redis 7; LATENCY LATEST, HISTORY, RESET and
// DOCTOR report spikes, which are the slow log's commands, by command name (Redis names
// event classes instead, and has its own latency-monitor-threshold, off by default);
// LATENCY GRAPH is not implemented. All of this is per node: a cluster has one slow log
// per coordinator.
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
// own (UNAVAILABLE, also for a node whose clock is out of sync; TIMEOUT, OVERLOADED)
// without touching the handler.
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
