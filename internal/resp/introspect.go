package resp

import (
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
)

var commandSubs = []subcommand{
	{"count", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendInt(dst, int64(len(h.table)))
	}},
	{"info", -2, commandInfo},
	{"docs", -2, commandDocs},
	{"list", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		dst = appendArray(dst, len(h.table))
		for _, c := range h.table {
			dst = appendBulkString(dst, c.name)
		}
		return dst
	}},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"DOCS [<command-name> ...]", "    Return documentation details about commands.",
			"INFO [<command-name> ...]", "    Return details about the specified commands.",
			"LIST", "    Return a list of all commands.",
			"HELP", "    Print this help.")
	}},
}

// COMMAND [subcommand]: redis-cli 7 asks for COMMAND DOCS at startup (and for COMMAND when
// DOCS fails) to build its help and hints.
func cmdCommand(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if len(args) == 1 {
		dst = appendArray(dst, len(h.table))
		for _, c := range h.table {
			dst = appendCommandInfo(dst, c)
		}
		return dst
	}
	return dispatchSub(h, dst, args, s, "command", commandSubs)
}

// commandsNamed returns the commands named by args (nil for unknown names), or all of
// them when args is empty.
func (h *Handler) commandsNamed(args [][]byte) []*command {
	if len(args) == 0 {
		return h.table
	}
	out := make([]*command, len(args))
	for i, a := range args {
		out[i] = h.lookup(a)
	}
	return out
}

func commandInfo(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	cmds := h.commandsNamed(args[2:])
	dst = appendArray(dst, len(cmds))
	for _, c := range cmds {
		if c == nil {
			dst = s.proto.appendNull(dst)
			continue
		}
		dst = appendCommandInfo(dst, c)
	}
	return dst
}

// appendCommandInfo writes Redis 7's ten-element COMMAND entry: name, arity, flags, first
// key, last key, step, ACL categories, tips, key specs and subcommands (the last three
// empty).
func appendCommandInfo(dst []byte, c *command) []byte {
	dst = appendArray(dst, 10)
	dst = appendBulkString(dst, c.name)
	dst = appendInt(dst, int64(c.arity))
	flags := c.flags.names()
	dst = appendArray(dst, len(flags))
	for _, f := range flags {
		dst = appendStatus(dst, f)
	}
	dst = appendInt(dst, int64(c.firstKey))
	dst = appendInt(dst, int64(c.lastKey))
	dst = appendInt(dst, int64(c.step))
	cats := c.categories()
	dst = appendArray(dst, len(cats))
	for _, cat := range cats {
		dst = appendStatus(dst, cat)
	}
	return appendArray(appendArray(appendArray(dst, 0), 0), 0)
}

// categories lists the command's ACL categories (categories.go), in Redis's order.
func (c *command) categories() []string {
	names := commandCategories(c).Names()
	for i, n := range names {
		names[i] = "@" + n
	}
	return names
}

// commandDocs replies with a map of name to docs, each a map of summary, since, group,
// complexity and, for commands that take any, arguments (flat arrays in RESP2).
func commandDocs(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	var cmds []*command
	for _, c := range h.commandsNamed(args[2:]) {
		if c != nil {
			cmds = append(cmds, c)
		}
	}
	dst = s.proto.appendMap(dst, len(cmds))
	for _, c := range cmds {
		dst = appendBulkString(dst, c.name)
		args, hasArgs := h.docArgs[c.name]
		dst = s.proto.appendMap(dst, 4+int(b2i(hasArgs)))
		for _, kv := range [...][2]string{
			{"summary", c.summary}, {"since", c.since}, {"group", c.group}, {"complexity", c.complexity},
		} {
			dst = appendBulkString(appendBulkString(dst, kv[0]), kv[1])
		}
		if hasArgs {
			dst = s.proto.appendArgs(appendBulkString(dst, "arguments"), args)
		}
	}
	return dst
}

// INFO [section ...]
func cmdInfo(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	for _, sec := range h.infoSections() {
		if !all && !want[strings.ToLower(sec.Name)] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.Name + "\r\n")
		for _, f := range sec.Fields {
			b.WriteString(f.Key + ":" + f.Value + "\r\n")
		}
	}
	return s.proto.appendVerbatim(dst, b.String())
}

// infoSections gathers INFO's sections: Redis's usual ones, then the node's own.
func (h *Handler) infoSections() []InfoSection {
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	uptime := (h.now() - h.started) / microsPerSecond
	mem := goMemoryBytes()
	keys, exact := h.keys()
	secs := []InfoSection{
		{"Server", []InfoField{
			{"redis_version", "7.0.0"}, {"kura_version", h.cfg.Version}, {"redis_mode", "standalone"},
			{"arch_bits", strconv.Itoa(strconv.IntSize)}, {"go_version", runtime.Version()},
			{"uptime_in_seconds", i64(uptime)}, {"uptime_in_days", i64(uptime / 86400)},
		}},
		{"Clients", []InfoField{
			{"connected_clients", i64(h.clients.Load())}, {"maxclients", strconv.Itoa(h.cfg.MaxConnections)},
			{"blocked_clients", "0"},
		}},
		{"Memory", []InfoField{
			{"used_memory", i64(mem)}, {"used_memory_human", humanBytes(mem)},
			{"maxmemory", "0"}, {"maxmemory_policy", "noeviction"},
		}},
		{"Stats", []InfoField{
			{"total_connections_received", i64(h.conns.Load())},
			{"total_commands_processed", i64(h.commands.Load())},
			{"rejected_connections", i64(h.rejected.Load())},
		}},
		{"Keyspace", keyspaceFields(keys, exact)},
	}
	if h.cfg.Info != nil {
		secs = append(secs, h.cfg.Info()...)
	}
	return secs
}

// keyspaceFields reports the row estimate in Redis's db0 line (expires and avg_ttl are not
// tracked) and says whether it is exact.
func keyspaceFields(keys int64, exact bool) []InfoField {
	var out []InfoField
	if keys > 0 {
		out = append(out, InfoField{"db0", "keys=" + strconv.FormatInt(keys, 10) + ",expires=0,avg_ttl=0"})
	}
	return append(out, InfoField{"keys_exact", strconv.Itoa(int(b2i(exact)))})
}

// goMemoryBytes is the memory the Go runtime holds, read without stopping the world
// (runtime.ReadMemStats would).
func goMemoryBytes() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	f, suffix := float64(n), "BKMGTPE"
	i := 0
	for f >= unit && i < len(suffix)-1 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + string(suffix[i])
}

// KURA.CONSISTENCY [level]: with a level, this connection's reads and writes use it from
// now on; without, the reply is the level in force. Only a cluster node (a LeveledStore)
// has levels; a single node answers an error.
func cmdConsistency(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	ls, ok := h.store.(LeveledStore)
	if !ok {
		return appendErr(dst, "ERR KURA.CONSISTENCY: this node is not part of a cluster")
	}
	if len(args) > 2 {
		return appendArityErr(dst, "kura.consistency")
	}
	if len(args) == 1 {
		if s.consistency == "" {
			return appendBulk(dst, []byte("DEFAULT"))
		}
		return appendBulk(dst, []byte(s.consistency))
	}
	level := strings.ToUpper(string(args[1]))
	if level == "DEFAULT" {
		s.consistency = ""
		return appendOK(dst)
	}
	if !slices.Contains(ls.Levels(), level) {
		return appendErr(dst, "ERR unknown consistency level '"+string(args[1])+"' (want "+strings.Join(ls.Levels(), ", ")+" or DEFAULT)")
	}
	s.consistency = level
	return appendOK(dst)
}

// KURA.TOPOLOGY: the cluster's layout as one JSON bulk string (Config.Topology), from
// which a client can compute every key's replica set as the nodes do and send each
// request to a replica, saving the coordinator's hop to one (a token-aware client).
func cmdTopology(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
	if h.cfg.Topology == nil {
		return appendErr(dst, "ERR KURA.TOPOLOGY: this node is not part of a cluster")
	}
	b, err := h.cfg.Topology()
	if err != nil {
		return appendErr(dst, "ERR KURA.TOPOLOGY: "+err.Error())
	}
	return appendBulk(dst, b)
}
