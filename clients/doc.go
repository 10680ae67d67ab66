// Package clients holds kura's client matrix: small programs in the Redis clients' own
// languages that run the same checks against a three-node `kura dev` cluster and against
// redis-server, which must print the same lines (issue 34, point 6). The package has no
// code of its own; TestClientMatrix in matrix_test.go builds kura, starts both servers,
// runs every program and compares.
//
// The clients: go-redis v9 (in the test's process), redis-py (python/check.py), node-redis
// (node/check.mjs), Jedis and Lettuce (java/Check.java), and redis-cli with
// redis-benchmark (cli/check.sh). Each runs in variants, the ways users set up its
// protocol: its default and the other of RESP2 and RESP3, named resp2 or resp3 first
// (redis-py's default is RESP3 and runs as resp3-default; Jedis's is RESP2).
//
// A program takes ADDR OTHER PREFIX: the node it talks to, another node of the same
// cluster (reads through it see what was written through ADDR; against redis-server it is
// ADDR again) and a prefix for every key it touches. It prints one line per variant and
// check, in a canonical form that every language can produce from its client's typed
// replies:
//
//	VARIANT CHECK name=value name=value ...
//	VARIANT CHECK ERROR message            (the check raised; the next check still runs)
//
// A value is a string as stored, nil for a null, an integer (a boolean reply as 1 or 0),
// [a,b,nil] for an array, {f:v,...} for a hash sorted by field, and lo..hi for a TTL that
// fell in that range (the exact remaining time differs from run to run). The checks:
//
//	proto        the protocol the connection speaks (CLIENT INFO's resp=)
//	strings      SET, GET (also through OTHER), MSET, MGET, EXISTS, DEL
//	set_options  SET NX, XX and GET
//	hashes       HSET, HGET, HGETALL (also through OTHER), HLEN, HDEL
//	ttl          SET PX, PTTL, EXPIRE, TTL, PERSIST, SET EX, and a key expiring
//	scan         SCAN with MATCH and COUNT 7 over 41 keys, through the client's own
//	             iterator where it has one: the set of keys returned must be the keys
//	counters     INCR, INCRBY, DECR (GET through OTHER), INCR of a non-integer
//	pipeline     eight commands sent as one non-transactional pipeline
//	multi        a transaction (MULTI/EXEC) on one key: redis-py's default pipeline(),
//	             go-redis's TxPipelined
//	pipe         redis-cli --pipe, then the state it left
//	redis-benchmark  SET, GET, INCR and MSET, pipelined, and the counter it leaves
//
// testdata/expected.txt has the line each check must print. clients/install.sh installs
// the programs' libraries (and .ci/run calls it): about 11 s from empty caches (pip 2 s,
// npm 2 s, Maven 7 s). The matrix's 111 checks took 66 s on the 2-core machine with a load
// average of 8 to 10 (2026-11-26): 17 s to start the servers, then the clients two at a
// time, each against both servers at once, redis-cli the longest at 39 s.
package clients
