package resp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/redcon"
)

// Error replies with Redis's exact texts (clients and tests match on them).
const (
	errSyntax      = "ERR syntax error"
	errNotInt      = "ERR value is not an integer or out of range"
	errWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth      = "NOAUTH Authentication required."
	errWrongPass   = "WRONGPASS invalid username-password pair or user is disabled."
	errDBRange     = "ERR DB index is out of range"
	errNoPassword  = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errEmptyKey    = "ERR empty keys are not supported by kura"
	errNoProto     = "NOPROTO unsupported protocol version"
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errMaxClients  = "ERR max number of clients reached"
)

func appendErr(dst []byte, msg string) []byte { return redcon.AppendError(dst, msg) }

// appendErrf formats an error reply; only for error paths, as it allocates.
func appendErrf(dst []byte, format string, a ...any) []byte {
	return redcon.AppendError(dst, fmt.Sprintf(format, a...))
}

func appendOK(dst []byte) []byte           { return redcon.AppendOK(dst) }
func appendInt(dst []byte, n int64) []byte { return redcon.AppendInt(dst, n) }
func appendBulk(dst, b []byte) []byte      { return redcon.AppendBulk(dst, b) }
func appendBulkString(dst []byte, s string) []byte {
	return redcon.AppendBulkString(dst, s)
}
func appendArray(dst []byte, n int) []byte     { return redcon.AppendArray(dst, n) }
func appendStatus(dst []byte, s string) []byte { return redcon.AppendString(dst, s) }
func appendBool(dst []byte, b bool) []byte     { return appendInt(dst, b2i(b)) }
func appendWrongType(dst []byte) []byte        { return appendErr(dst, errWrongType) }
func appendNotInt(dst []byte) []byte           { return appendErr(dst, errNotInt) }
func appendSyntaxErr(dst []byte) []byte        { return appendErr(dst, errSyntax) }
func appendExpireErr(dst []byte, cmd string) []byte {
	return appendErrf(dst, "ERR invalid expire time in '%s' command", cmd)
}

// proto is the RESP version a connection speaks: 2 (the default) or 3, chosen by HELLO.
// Replies whose RESP3 form differs from RESP2's go through its methods; everything else
// (simple strings, errors, integers, bulk strings, arrays) is the same in both.
type proto uint8

const (
	resp2 proto = 2
	resp3 proto = 3
)

// appendNull writes "no value": RESP2's null bulk string, RESP3's null.
func (p proto) appendNull(dst []byte) []byte {
	if p == resp3 {
		return append(dst, "_\r\n"...)
	}
	return redcon.AppendNull(dst)
}

// appendNullArray writes EXEC's "transaction aborted": RESP2's null array, RESP3's null.
func (p proto) appendNullArray(dst []byte) []byte {
	if p == resp3 {
		return append(dst, "_\r\n"...)
	}
	return append(dst, "*-1\r\n"...)
}

// appendMap writes the header of a map of n key-value pairs: RESP3's map, or RESP2's flat
// array of 2n elements. The caller then writes n keys, each followed by its value.
func (p proto) appendMap(dst []byte, n int) []byte {
	if p == resp3 {
		dst = append(dst, '%')
		dst = strconv.AppendInt(dst, int64(n), 10)
		return append(dst, '\r', '\n')
	}
	return redcon.AppendArray(dst, 2*n)
}

// appendVerbatim writes human-readable text (INFO, CLIENT INFO): RESP3's verbatim string
// of format "txt", which clients show as it is, or RESP2's bulk string.
func (p proto) appendVerbatim(dst []byte, text string) []byte {
	if p != resp3 {
		return redcon.AppendBulkString(dst, text)
	}
	dst = append(dst, '=')
	dst = strconv.AppendInt(dst, int64(len(text)+4), 10)
	dst = append(dst, "\r\ntxt:"...)
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// appendArityErr is Redis's reply for a wrong argument count; name is the command's
// lowercase name ("client|setname" for subcommands).
func appendArityErr(dst []byte, name string) []byte {
	dst = append(dst, "-ERR wrong number of arguments for '"...)
	dst = append(dst, name...)
	return append(dst, "' command\r\n"...)
}

// Redis quotes at most this much of an unknown command and of its arguments.
const unknownQuoteLimit = 128

// appendUnknownCommand is Redis's reply for an unknown command: the name and the first
// arguments quoted, 128 bytes of each at most, CR and LF replaced by spaces.
func appendUnknownCommand(dst []byte, args [][]byte) []byte {
	dst = append(dst, "-ERR unknown command '"...)
	dst = appendSanitized(dst, args[0], unknownQuoteLimit)
	dst = append(dst, "', with args beginning with: "...)
	n := 0
	for _, a := range args[1:] {
		if n >= unknownQuoteLimit {
			break
		}
		dst = append(dst, '\'')
		dst = appendSanitized(dst, a, unknownQuoteLimit-n)
		dst = append(dst, '\'', ' ')
		n += min(len(a), unknownQuoteLimit-n) + 3
	}
	return append(dst, '\r', '\n')
}

// appendUnknownSubcommand is Redis's reply for CLIENT FOO and friends.
func appendUnknownSubcommand(dst []byte, cmd string, sub []byte) []byte {
	dst = append(dst, "-ERR unknown subcommand '"...)
	dst = appendSanitized(dst, sub, unknownQuoteLimit)
	dst = append(dst, "'. Try "...)
	dst = append(dst, strings.ToUpper(cmd)...)
	return append(dst, " HELP.\r\n"...)
}

// appendSanitized appends at most limit bytes of b with CR and LF turned into spaces, so
// that a client's bytes can never break the framing of an error line.
func appendSanitized(dst, b []byte, limit int) []byte {
	if len(b) > limit {
		b = b[:limit]
	}
	for _, c := range b {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// appendStoreErr maps a Store error to a reply with the configured prefix.
func (h *Handler) appendStoreErr(dst []byte, err error) []byte {
	prefix := ""
	if h.cfg.ErrorPrefix != nil {
		prefix = h.cfg.ErrorPrefix(err)
	}
	if prefix == "" {
		prefix = ErrorPrefix(err)
	}
	return appendErr(dst, prefix+" "+err.Error())
}
