package resp

// cmdArg is one argument of a command as COMMAND DOCS describes it (Redis 7's argument
// maps); redis-cli builds its help and its as-you-type hints from them.
type cmdArg struct {
	name, typ, token   string
	optional, multiple bool
	args               []cmdArg // for "oneof" and "block"
}

// Argument constructors, named after Redis's argument types.
func keyArg(name string) cmdArg { return cmdArg{name: name, typ: "key"} }
func strArg(name string) cmdArg { return cmdArg{name: name, typ: "string"} }
func intArg(name string) cmdArg { return cmdArg{name: name, typ: "integer"} }
func token(t string) cmdArg     { return cmdArg{name: lower(t), typ: "pure-token", token: t} }

// tokenArg is an argument introduced by a token, as "EX seconds".
func tokenArg(t string, a cmdArg) cmdArg { a.token = t; return a }
func oneOf(name string, a ...cmdArg) cmdArg {
	return cmdArg{name: name, typ: "oneof", args: a}
}
func block(name string, a ...cmdArg) cmdArg {
	return cmdArg{name: name, typ: "block", args: a}
}
func optional(a cmdArg) cmdArg { a.optional = true; return a }
func multiple(a cmdArg) cmdArg { a.multiple = true; return a }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// commandArgs returns the arguments of each command, by name; commands without arguments
// are absent, as in Redis's own COMMAND DOCS.
func commandArgs() map[string][]cmdArg {
	key, keys := keyArg("key"), multiple(keyArg("key"))
	field, fields := strArg("field"), multiple(strArg("field"))
	fieldValues := multiple(block("data", strArg("field"), strArg("value")))
	expireCond := optional(oneOf("condition", token("NX"), token("XX"), token("GT"), token("LT")))
	return map[string][]cmdArg{
		"get": {key},
		"set": {key, strArg("value"),
			optional(oneOf("condition", token("NX"), token("XX"))),
			optional(token("GET")),
			optional(oneOf("expiration",
				tokenArg("EX", intArg("seconds")), tokenArg("PX", intArg("milliseconds")),
				tokenArg("EXAT", cmdArg{name: "unix-time-seconds", typ: "unix-time"}),
				tokenArg("PXAT", cmdArg{name: "unix-time-milliseconds", typ: "unix-time"}),
				token("KEEPTTL")))},
		"mget":    {keys},
		"mset":    {multiple(block("data", keyArg("key"), strArg("value")))},
		"del":     {keys},
		"exists":  {keys},
		"expire":  {key, intArg("seconds"), expireCond},
		"pexpire": {key, intArg("milliseconds"), expireCond},
		"ttl":     {key},
		"pttl":    {key},
		"persist": {key},
		"hset":    {key, fieldValues},
		"hmset":   {key, fieldValues},
		"hget":    {key, field},
		"hmget":   {key, fields},
		"hgetall": {key},
		"hdel":    {key, fields},
		"hlen":    {key},
		"scan": {intArg("cursor"), optional(tokenArg("MATCH", cmdArg{name: "pattern", typ: "pattern"})),
			optional(tokenArg("COUNT", intArg("count"))), optional(tokenArg("TYPE", strArg("type")))},
		"keys": {cmdArg{name: "pattern", typ: "pattern"}},
		"hscan": {key, intArg("cursor"), optional(tokenArg("MATCH", cmdArg{name: "pattern", typ: "pattern"})),
			optional(tokenArg("COUNT", intArg("count"))), optional(token("NOVALUES"))},
		"hexists": {key, field},
		"ping":    {optional(strArg("message"))},
		"echo":    {strArg("message")},
		"select":  {intArg("index")},
		"auth":    {optional(strArg("username")), strArg("password")},
		"hello": {optional(block("arguments", intArg("protover"),
			optional(tokenArg("AUTH", block("auth", strArg("username"), strArg("password")))),
			optional(tokenArg("SETNAME", strArg("clientname")))))},
		"info":             {optional(multiple(strArg("section")))},
		"kura.consistency": {optional(strArg("level"))},
		"incr":             {key},
		"decr":             {key},
		"incrby":           {key, intArg("increment")},
		"decrby":           {key, intArg("decrement")},
		"incrbyfloat":      {key, cmdArg{name: "increment", typ: "double"}},
		"hincrby":          {key, field, intArg("increment")},
		"hincrbyfloat":     {key, field, cmdArg{name: "increment", typ: "double"}},
		"watch":            {keys},
		// The common commands.
		"type":        {key},
		"unlink":      {keys},
		"touch":       {keys},
		"expireat":    {key, cmdArg{name: "unix-time-seconds", typ: "unix-time"}, expireCond},
		"pexpireat":   {key, cmdArg{name: "unix-time-milliseconds", typ: "unix-time"}, expireCond},
		"expiretime":  {key},
		"pexpiretime": {key},
		"getdel":      {key},
		"getex": {key, optional(oneOf("expiration",
			tokenArg("EX", intArg("seconds")), tokenArg("PX", intArg("milliseconds")),
			tokenArg("EXAT", cmdArg{name: "unix-time-seconds", typ: "unix-time"}),
			tokenArg("PXAT", cmdArg{name: "unix-time-milliseconds", typ: "unix-time"}),
			token("PERSIST")))},
		"setnx":      {key, strArg("value")},
		"setex":      {key, intArg("seconds"), strArg("value")},
		"psetex":     {key, intArg("milliseconds"), strArg("value")},
		"strlen":     {key},
		"append":     {key, strArg("value")},
		"getrange":   {key, intArg("start"), intArg("end")},
		"substr":     {key, intArg("start"), intArg("end")},
		"setrange":   {key, intArg("offset"), strArg("value")},
		"msetnx":     {multiple(block("data", keyArg("key"), strArg("value")))},
		"hkeys":      {key},
		"hvals":      {key},
		"hstrlen":    {key, field},
		"hsetnx":     {key, field, strArg("value")},
		"hrandfield": {key, optional(block("options", intArg("count"), optional(token("WITHVALUES"))))},
		"flushdb":    {optional(oneOf("flush-type", token("ASYNC"), token("SYNC")))},
		"flushall":   {optional(oneOf("flush-type", token("ASYNC"), token("SYNC")))},
	}
}

// appendArgs writes argument maps as COMMAND DOCS does (flat arrays in RESP2).
func (p proto) appendArgs(dst []byte, args []cmdArg) []byte {
	dst = appendArray(dst, len(args))
	for _, a := range args {
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.args) > 0 {
			n++
		}
		dst = p.appendMap(dst, n)
		dst = appendBulkString(appendBulkString(dst, "name"), a.name)
		dst = appendBulkString(appendBulkString(dst, "type"), a.typ)
		if a.token != "" {
			dst = appendBulkString(appendBulkString(dst, "token"), a.token)
		}
		if len(flags) > 0 {
			dst = appendArray(appendBulkString(dst, "flags"), len(flags))
			for _, f := range flags {
				dst = appendStatus(dst, f)
			}
		}
		if len(a.args) > 0 {
			dst = p.appendArgs(appendBulkString(dst, "arguments"), a.args)
		}
	}
	return dst
}
