package resp

// cmdFunc executes a command whose arity and authentication were checked, appending its
// reply to dst.
type cmdFunc func(h *Handler, dst []byte, args [][]byte, s *Session) []byte

// command describes one command: how to run it and what COMMAND and COMMAND DOCS say
// about it (Redis 7's fields, so that redis-cli and client libraries understand them).
type command struct {
	name  string // lowercase
	arity int    // Redis convention: n exactly, or -n for at least n, name included
	flags cmdFlags
	// firstKey, lastKey and step locate the key arguments (0 for none, lastKey -1 for
	// "to the end").
	firstKey, lastKey, step int

	group, since, complexity, summary string

	fn cmdFunc
	id int // index in the table, for per-command metrics
}

type cmdFlags uint16

const (
	flagWrite cmdFlags = 1 << iota
	flagReadonly
	flagDenyOOM
	flagFast
	flagNoAuth
	flagLoading
	flagStale
	flagNoScript
	// flagLeader marks a single-key command that reads the key before writing it (INCR,
	// APPEND, SETNX...): it runs serialized per key at the key's leader (see leader.go),
	// so that two such commands on one key never interleave. Its key is args[1]. Not a
	// Redis flag: COMMAND does not show it.
	flagLeader
)

var flagNames = [...]string{"write", "readonly", "denyoom", "fast", "no_auth", "loading", "stale", "noscript"}

// names lists the set flags by their COMMAND names.
func (f cmdFlags) names() []string {
	var out []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// commandTable returns every supported command. It is a function rather than a package
// variable because COMMAND's implementation reads the table (an initialization cycle).
func commandTable() []*command {
	const (
		rf  = flagReadonly | flagFast
		wf  = flagWrite | flagFast
		wd  = flagWrite | flagDenyOOM
		wdf = wd | flagFast
		ls  = flagLoading | flagStale
		cn  = "connection"
		gen = "generic"
	)
	return []*command{
		{"get", 2, rf, 1, 1, 1, "string", "1.0.0", "O(1)", "Returns the string value of a key.", cmdGet, 0},
		{"set", -3, wd, 1, 1, 1, "string", "1.0.0", "O(1)", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", cmdSet, 0},
		{"mget", -2, rf, 1, -1, 1, "string", "1.0.0", "O(N) where N is the number of keys to retrieve.", "Atomically returns the string values of one or more keys.", cmdMGet, 0},
		{"mset", -3, wd, 1, -1, 2, "string", "1.0.1", "O(N) where N is the number of keys to set.", "Atomically creates or modifies the string values of one or more keys.", cmdMSet, 0},
		{"del", -2, flagWrite, 1, -1, 1, gen, "1.0.0", "O(N) where N is the number of keys that will be removed.", "Deletes one or more keys.", cmdDel, 0},
		{"exists", -2, rf, 1, -1, 1, gen, "1.0.0", "O(N) where N is the number of keys to check.", "Determines whether one or more keys exist.", cmdExists, 0},
		{"expire", -3, wf | flagLeader, 1, 1, 1, gen, "1.0.0", "O(N) where N is the number of fields of the key.", "Sets the expiration time of a key in seconds.", cmdExpire, 0},
		{"pexpire", -3, wf | flagLeader, 1, 1, 1, gen, "2.6.0", "O(N) where N is the number of fields of the key.", "Sets the expiration time of a key in milliseconds.", cmdPExpire, 0},
		{"ttl", 2, rf, 1, 1, 1, gen, "1.0.0", "O(1)", "Returns the expiration time in seconds of a key.", cmdTTL, 0},
		{"pttl", 2, rf, 1, 1, 1, gen, "2.6.0", "O(1)", "Returns the expiration time in milliseconds of a key.", cmdPTTL, 0},
		{"persist", 2, wf | flagLeader, 1, 1, 1, gen, "2.2.0", "O(N) where N is the number of fields of the key.", "Removes the expiration time of a key.", cmdPersist, 0},
		{"hset", -4, wdf, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the number of field/value pairs being set.", "Creates or modifies the value of a field in a hash.", cmdHSet, 0},
		{"hmset", -4, wdf, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the number of fields being set.", "Sets the values of multiple fields.", cmdHMSet, 0},
		{"hget", 3, rf, 1, 1, 1, "hash", "2.0.0", "O(1)", "Returns the value of a field in a hash.", cmdHGet, 0},
		{"hmget", -3, rf, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the number of fields being requested.", "Returns the values of all fields in a hash.", cmdHMGet, 0},
		{"hgetall", 2, flagReadonly, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields and values in a hash, sorted by field.", cmdHGetAll, 0},
		{"hdel", -3, wf, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the number of fields to be removed.", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", cmdHDel, 0},
		{"hlen", 2, rf, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the size of the hash.", "Returns the number of fields in a hash.", cmdHLen, 0},
		{"hexists", 3, rf, 1, 1, 1, "hash", "2.0.0", "O(1)", "Determines whether a field exists in a hash.", cmdHExists, 0},
		{"dbsize", 1, rf, 0, 0, 0, "server", "1.0.0", "O(1)", "Returns the (estimated) number of keys in the database.", cmdDBSize, 0},
		{"ping", -1, flagFast, 0, 0, 0, cn, "1.0.0", "O(1)", "Returns the server's liveliness response.", cmdPing, 0},
		{"echo", 2, flagFast, 0, 0, 0, cn, "1.0.0", "O(1)", "Returns the given string.", cmdEcho, 0},
		{"quit", -1, flagFast | flagNoAuth | ls | flagNoScript, 0, 0, 0, cn, "1.0.0", "O(1)", "Closes the connection.", cmdQuit, 0},
		{"select", 2, flagFast | ls, 0, 0, 0, cn, "1.0.0", "O(1)", "Changes the selected database (only 0 exists).", cmdSelect, 0},
		{"auth", -2, flagFast | flagNoAuth | ls | flagNoScript, 0, 0, 0, cn, "1.0.0", "O(N) where N is the number of passwords defined for the user", "Authenticates the connection.", cmdAuth, 0},
		{"hello", -1, flagFast | flagNoAuth | ls | flagNoScript, 0, 0, 0, cn, "6.0.0", "O(1)", "Handshakes with the server (RESP2 only).", cmdHello, 0},
		{"client", -2, 0, 0, 0, 0, cn, "2.4.0", "Depends on subcommand.", "A container for client connection commands.", cmdClient, 0},
		{"command", -1, ls, 0, 0, 0, "server", "2.8.13", "O(N) where N is the total number of commands", "Returns detailed information about all commands.", cmdCommand, 0},
		{"config", -2, 0, 0, 0, 0, "server", "2.0.0", "Depends on subcommand.", "A container for server configuration commands.", cmdConfig, 0},
		{"info", -1, ls, 0, 0, 0, "server", "1.0.0", "O(1)", "Returns information and statistics about the server.", cmdInfo, 0},
		{"kura.consistency", -1, flagFast | ls, 0, 0, 0, cn, "kura", "O(1)", "Sets or returns this connection's consistency level (ONE, TWO, QUORUM, ALL) in a cluster.", cmdConsistency, 0},
		{"kura.topology", 1, ls, 0, 0, 0, "server", "kura", "O(N) where N is the number of tokens", "Returns the cluster's members, tokens and placement as JSON, for token-aware clients.", cmdTopology, 0},
		// Counters (counter.go, counters.go) and transactions (multi.go).
		{"incr", 2, wdf | flagLeader, 1, 1, 1, "string", "1.0.0", "O(1)", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", cmdIncr, 0},
		{"decr", 2, wdf | flagLeader, 1, 1, 1, "string", "1.0.0", "O(1)", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", cmdDecr, 0},
		{"incrby", 3, wdf | flagLeader, 1, 1, 1, "string", "1.0.0", "O(1)", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", cmdIncrBy, 0},
		{"decrby", 3, wdf | flagLeader, 1, 1, 1, "string", "1.0.0", "O(1)", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", cmdDecrBy, 0},
		{"incrbyfloat", 3, wdf | flagLeader, 1, 1, 1, "string", "2.6.0", "O(1)", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", cmdIncrByFloat, 0},
		{"hincrby", 4, wdf | flagLeader, 1, 1, 1, "hash", "2.0.0", "O(1)", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", cmdHIncrBy, 0},
		{"hincrbyfloat", 4, wdf | flagLeader, 1, 1, 1, "hash", "2.6.0", "O(1)", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", cmdHIncrByFloat, 0},
		{"multi", 1, flagFast | ls | flagNoScript, 0, 0, 0, "transactions", "1.2.0", "O(1)", "Starts a transaction.", cmdMulti, 0},
		{"exec", 1, flagNoScript | flagLoading | flagStale, 0, 0, 0, "transactions", "1.2.0", "Depends on commands in the transaction", "Executes all commands in a transaction.", cmdExec, 0},
		{"discard", 1, flagFast | ls | flagNoScript, 0, 0, 0, "transactions", "2.0.0", "O(N), when N is the number of queued commands", "Discards a transaction.", cmdDiscard, 0},
		{"watch", -2, flagFast | ls | flagNoScript, 1, -1, 1, "transactions", "2.2.0", "O(1) for every key.", "Monitors changes to keys to determine the execution of a transaction.", cmdWatch, 0},
		{"unwatch", 1, flagFast | ls | flagNoScript, 0, 0, 0, "transactions", "2.2.0", "O(1)", "Forgets about watched keys of a transaction.", cmdUnwatch, 0},
		{"scan", -2, flagReadonly, 0, 0, 0, gen, "2.8.0", "O(1) for every call. O(N) for a complete iteration.", "Iterates over the key names in the database, in token order, cluster-wide.", cmdScan, 0},
		{"keys", 2, flagReadonly, 0, 0, 0, gen, "1.0.0", "O(N) with N being the number of keys in the database.", "Returns all key names that match a pattern (at most keys-limit of them).", cmdKeys, 0},
		{"hscan", -3, flagReadonly, 1, 1, 1, "hash", "2.8.0", "O(N) where N is the size of the hash.", "Returns the fields and values of a hash that match a pattern, in one reply.", cmdHScan, 0},
		// The common commands (keycmds.go, stringcmds.go, hashcmds.go, object.go, flush.go,
		// client.go, latency.go, slowlog.go).
		{"type", 2, rf, 1, 1, 1, gen, "1.0.0", "O(1)", "Determines the type of value stored at a key.", cmdType, 0},
		{"unlink", -2, wf, 1, -1, 1, gen, "4.0.0", "O(N) where N is the number of keys that will be removed.", "Deletes one or more keys (as DEL does).", cmdUnlink, 0},
		{"touch", -2, rf, 1, -1, 1, gen, "3.2.1", "O(N) where N is the number of keys that will be touched.", "Returns the number of existing keys specified (kura keeps no access times).", cmdTouch, 0},
		{"expireat", -3, wf | flagLeader, 1, 1, 1, gen, "1.2.0", "O(N) where N is the number of fields of the key.", "Sets the expiration time of a key to a Unix timestamp.", cmdExpireAt, 0},
		{"pexpireat", -3, wf | flagLeader, 1, 1, 1, gen, "2.6.0", "O(N) where N is the number of fields of the key.", "Sets the expiration time of a key to a Unix milliseconds timestamp.", cmdPExpireAt, 0},
		{"expiretime", 2, rf, 1, 1, 1, gen, "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix timestamp.", cmdExpireTime, 0},
		{"pexpiretime", 2, rf, 1, 1, 1, gen, "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix milliseconds timestamp.", cmdPExpireTime, 0},
		{"getdel", 2, wf | flagLeader, 1, 1, 1, "string", "6.2.0", "O(1)", "Returns the string value of a key after deleting the key.", cmdGetDel, 0},
		{"getex", -2, wf | flagLeader, 1, 1, 1, "string", "6.2.0", "O(1)", "Returns the string value of a key after setting its expiration time.", cmdGetEx, 0},
		{"setnx", 3, wdf | flagLeader, 1, 1, 1, "string", "1.0.0", "O(1)", "Set the string value of a key only when the key doesn't exist.", cmdSetNX, 0},
		{"setex", 4, wd, 1, 1, 1, "string", "2.0.0", "O(1)", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", cmdSetEx, 0},
		{"psetex", 4, wd, 1, 1, 1, "string", "2.6.0", "O(1)", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", cmdPSetEx, 0},
		{"strlen", 2, rf, 1, 1, 1, "string", "2.2.0", "O(1)", "Returns the length of a string value.", cmdStrLen, 0},
		{"append", 3, wdf | flagLeader, 1, 1, 1, "string", "2.0.0", "O(N) where N is the length of the new value.", "Appends a string to the value of a key. Creates the key if it doesn't exist.", cmdAppend, 0},
		{"getrange", 4, flagReadonly, 1, 1, 1, "string", "2.4.0", "O(N) where N is the length of the returned string.", "Returns a substring of the string stored at a key.", cmdGetRange, 0},
		{"substr", 4, flagReadonly, 1, 1, 1, "string", "1.0.0", "O(N) where N is the length of the returned string.", "Returns a substring from a string value (GETRANGE's old name).", cmdGetRange, 0},
		{"setrange", 4, wd | flagLeader, 1, 1, 1, "string", "2.2.0", "O(N) where N is the length of the new value.", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", cmdSetRange, 0},
		{"msetnx", -3, wd, 1, -1, 2, "string", "1.0.1", "O(N) where N is the number of keys to set.", "Modifies the string values of one or more keys only when all keys don't exist.", cmdMSetNX, 0},
		{"hkeys", 2, flagReadonly, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields in a hash, sorted by field.", cmdHKeys, 0},
		{"hvals", 2, flagReadonly, 1, 1, 1, "hash", "2.0.0", "O(N) where N is the size of the hash.", "Returns all values in a hash, sorted by field.", cmdHVals, 0},
		{"hstrlen", 3, rf, 1, 1, 1, "hash", "3.2.0", "O(1)", "Returns the length of the value of a field.", cmdHStrLen, 0},
		{"hsetnx", 4, wdf | flagLeader, 1, 1, 1, "hash", "2.0.0", "O(1)", "Sets the value of a field in a hash only when the field doesn't exist.", cmdHSetNX, 0},
		{"hrandfield", -2, flagReadonly, 1, 1, 1, "hash", "6.2.0", "O(N) where N is the number of fields returned", "Returns one or more random fields from a hash.", cmdHRandField, 0},
		{"object", -2, 0, 0, 0, 0, gen, "2.2.3", "Depends on subcommand.", "A container for object introspection commands.", cmdObject, 0},
		{"memory", -2, 0, 0, 0, 0, "server", "4.0.0", "Depends on subcommand.", "A container for memory diagnostics commands.", cmdMemory, 0},
		{"flushdb", -1, flagWrite, 0, 0, 0, "server", "1.0.0", "O(N) where N is the number of keys in the cluster.", "Removes all keys from the database: every node's (it needs every node up).", cmdFlush, 0},
		{"flushall", -1, flagWrite, 0, 0, 0, "server", "1.0.0", "O(N) where N is the number of keys in the cluster.", "Removes all keys from all databases: every node's (it needs every node up).", cmdFlush, 0},
		{"latency", -2, 0, 0, 0, 0, "server", "2.8.13", "Depends on subcommand.", "A container for latency diagnostics commands.", cmdLatency, 0},
		{"slowlog", -2, 0, 0, 0, 0, "server", "2.2.12", "Depends on subcommand.", "A container for slow log commands.", cmdSlowlog, 0},
		// Users and permissions (acl.go, aclcmd.go).
		{"acl", -2, 0, 0, 0, 0, "server", "6.0.0", "Depends on subcommand.", "A container for Access List Control commands.", cmdACL, 0},
	}
}

// subcommand is a container command's subcommand (CLIENT SETNAME...).
type subcommand struct {
	name  string // lowercase
	arity int    // counted from the container's name, as Redis does
	fn    cmdFunc
}

// dispatchSub runs the subcommand of a container command with Redis's errors for unknown
// subcommands and wrong arities ("client|setname").
func dispatchSub(h *Handler, dst []byte, args [][]byte, s *Session, container string, subs []subcommand) []byte {
	for _, sc := range subs {
		if !equalFold(args[1], sc.name) {
			continue
		}
		if !arityOK(sc.arity, len(args)) {
			return appendArityErr(dst, container+"|"+sc.name)
		}
		return sc.fn(h, dst, args, s)
	}
	return appendUnknownSubcommand(dst, container, args[1])
}

// appendHelp replies with a container's HELP text, one status line per element.
func appendHelp(dst []byte, lines ...string) []byte {
	dst = appendArray(dst, len(lines))
	for _, l := range lines {
		dst = appendStatus(dst, l)
	}
	return dst
}
