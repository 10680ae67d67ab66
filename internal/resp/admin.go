package resp

import (
	"strconv"
	"strings"

	"github.com/tidwall/match"

	"github.com/kuradb/kura/internal/acl"
)

// PING [message]
func cmdPing(_ *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	switch len(args) {
	case 1:
		return appendStatus(dst, "PONG")
	case 2:
		return appendBulk(dst, args[1])
	}
	return appendArityErr(dst, "ping")
}

// ECHO message
func cmdEcho(_ *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	return appendBulk(dst, args[1])
}

// QUIT replies OK; the driver closes the connection after sending it.
func cmdQuit(_ *Handler, dst []byte, _ [][]byte, s *Session) []byte {
	s.quit = true
	return appendOK(dst)
}

// SELECT index: kura has only database 0.
func cmdSelect(_ *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		return appendNotInt(dst)
	case n != 0:
		return appendErr(dst, errDBRange)
	}
	return appendOK(dst)
}

// DBSIZE replies with the store's row estimate.
func cmdDBSize(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
	n, _ := h.keys()
	return appendInt(dst, n)
}

func (h *Handler) keys() (int64, bool) {
	if h.cfg.KeysEstimate == nil {
		return 0, true
	}
	return h.cfg.KeysEstimate()
}

// AUTH [username] password: the default user without username (see acl.go).
func cmdAuth(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	var user, pass []byte
	switch len(args) {
	case 2:
		pass = args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		return appendSyntaxErr(dst)
	}
	if user == nil {
		if u := h.acl.Snapshot().User(acl.DefaultUser); u != nil && u.NoPass {
			return appendErr(dst, errNoPassword)
		}
	}
	dst, ok := h.authenticate(dst, s, user, pass, string(args[0]))
	if !ok {
		return dst
	}
	return appendOK(dst)
}

// HELLO [protover [AUTH username password] [SETNAME clientname]] switches the connection to
// RESP2 or RESP3 and describes the server, in the protocol just chosen. Without protover it
// keeps the connection's protocol. The switch, the name and the authentication take effect
// only when the whole command is valid, as in Redis.
func cmdHello(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	p := s.proto
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			return appendErr(dst, "ERR Protocol version is not an integer or out of range")
		}
		if v != int64(resp2) && v != int64(resp3) {
			return appendErr(dst, errNoProto)
		}
		p = proto(v)
	}
	user, pass, name, dst, ok := parseHelloOptions(dst, args)
	if !ok {
		return dst
	}
	if user != nil {
		if dst, ok = h.authenticate(dst, s, user, pass, "AUTH"); !ok {
			return dst
		}
	}
	if s.username == "" {
		return appendErr(dst, errHelloNoAuth)
	}
	s.setInfo(func() {
		if name != nil {
			s.name = string(name)
		}
		s.proto = p
	})
	dst = p.appendMap(dst, 7)
	dst = appendBulkString(appendBulkString(dst, "server"), "kura")
	dst = appendBulkString(appendBulkString(dst, "version"), h.cfg.Version)
	dst = appendInt(appendBulkString(dst, "proto"), int64(p))
	dst = appendInt(appendBulkString(dst, "id"), s.id)
	dst = appendBulkString(appendBulkString(dst, "mode"), "standalone")
	dst = appendBulkString(appendBulkString(dst, "role"), "master")
	return appendArray(appendBulkString(dst, "modules"), 0)
}

// parseHelloOptions parses HELLO's AUTH and SETNAME options (after the protocol version).
func parseHelloOptions(dst []byte, args [][]byte) (user, pass, name, _ []byte, ok bool) {
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case equalFold(args[j], "auth") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case equalFold(args[j], "setname") && more >= 1:
			name = args[j+1]
			if !validClientAttr(name) {
				return nil, nil, nil, appendErr(dst, errClientName), false
			}
			j++
		default:
			return nil, nil, nil, appendErrf(dst, "ERR Syntax error in HELLO option '%s'", sanitize(args[j])), false
		}
	}
	return user, pass, name, dst, true
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientAttr accepts what Redis accepts in client names and library attributes:
// printable ASCII without spaces.
func validClientAttr(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

var clientSubs = []subcommand{
	{"id", 2, func(_ *Handler, dst []byte, _ [][]byte, s *Session) []byte { return appendInt(dst, s.id) }},
	{"setname", 3, clientSetName},
	{"getname", 2, clientGetName},
	{"setinfo", 4, clientSetInfo},
	{"info", 2, clientInfo},
	{"list", -2, clientList},
	{"kill", -3, clientKill},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ID", "    Return the ID of the current connection.",
			"GETNAME", "    Return the name of the current connection.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
			"    * ID <client-id>", "      Kill connections by client id.",
			"    * ADDR <ip:port>", "      Kill connections made from the specified address",
			"    * LADDR <ip:port>", "      Kill connections made to specified local address",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
			"    * USER <username>", "      Kill connections authenticated by <username>.",
			"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
			"LIST [options ...]", "    Return information about client connections. Options:",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
			"    * ID <client-id> [<client-id> ...]", "      Return clients of specified IDs only.",
			"HELP", "    Print this help.")
	}},
}

// CLIENT subcommand ...
func cmdClient(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "client", clientSubs)
}

func clientSetName(_ *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if !validClientAttr(args[2]) {
		return appendErr(dst, errClientName)
	}
	s.setInfo(func() { s.name = string(args[2]) })
	return appendOK(dst)
}

func clientGetName(_ *Handler, dst []byte, _ [][]byte, s *Session) []byte {
	if s.name == "" {
		return s.proto.appendNull(dst)
	}
	return appendBulkString(dst, s.name)
}

// CLIENT SETINFO LIB-NAME|LIB-VER value, which go-redis sends on every new connection.
func clientSetInfo(_ *Handler, dst []byte, args [][]byte, s *Session) []byte {
	attr, val := args[2], args[3]
	var dest *string
	switch {
	case equalFold(attr, "lib-name"):
		dest = &s.libName
	case equalFold(attr, "lib-ver"):
		dest = &s.libVer
	default:
		return appendErrf(dst, "ERR Unrecognized option '%s'", sanitize(attr))
	}
	if !validClientAttr(val) {
		return appendErrf(dst, "ERR %s cannot contain spaces, newlines or special characters.", sanitize(attr))
	}
	s.setInfo(func() { *dest = string(val) })
	return appendOK(dst)
}

// CONFIG GET parameter [parameter ...] answers the few parameters tools read at startup
// (redis-benchmark asks for save and appendonly); CONFIG SET is refused because kura is
// configured through its own config file.
func cmdConfig(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "config", configSubs)
}

var configSubs = []subcommand{
	{"get", -3, configGet},
	{"set", -4, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendErr(dst, "ERR CONFIG SET is not supported: kura is configured by its own config file")
	}},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"HELP", "    Print this help.")
	}},
}

func configGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	params := h.configParams()
	var out []string
	for _, p := range params {
		for _, pat := range args[2:] {
			if match.Match(p[0], strings.ToLower(string(pat))) {
				out = append(out, p[0], p[1])
				break
			}
		}
	}
	dst = s.proto.appendMap(dst, len(out)/2)
	for _, v := range out {
		dst = appendBulkString(dst, v)
	}
	return dst
}

// configParams are the parameters CONFIG GET reports, name and value.
func (h *Handler) configParams() [][2]string {
	itoa := strconv.Itoa
	return [][2]string{
		{"appendonly", "no"},
		{"databases", "1"},
		{"maxclients", itoa(h.cfg.MaxConnections)},
		{"proto-max-bulk-len", itoa(h.cfg.MaxValueBytes)},
		{"save", ""},
		{"slowlog-log-slower-than", strconv.FormatInt(h.cfg.SlowlogThreshold.Microseconds(), 10)},
		{"slowlog-max-len", itoa(h.cfg.SlowlogMaxLen)},
		{"timeout", strconv.FormatInt(int64(h.cfg.IdleTimeout.Seconds()), 10)},
	}
}
