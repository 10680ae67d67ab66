package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// reply is a decoded RESP2 or RESP3 reply, for checking and printing what the handler
// wrote.
type reply struct {
	kind  byte // '+', '-', ':', '$', '*', or RESP3's '_' (null), '%' (map), '=' (verbatim)
	str   string
	num   int64
	null  bool
	elems []reply // an array's elements; a map's keys and values, alternating
}

var errBadReply = errors.New("malformed reply")

// parseReply decodes exactly one reply from the front of b, strictly: every line ends in
// CRLF, simple strings and errors hold no CR or LF, lengths match, a verbatim string has a
// three-letter format. Of RESP3's types it knows those kura writes.
func parseReply(b []byte) (reply, []byte, error) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || len(line) == 0 || bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
		return reply{}, nil, fmt.Errorf("%w: bad line %q", errBadReply, b)
	}
	r := reply{kind: line[0]}
	body := string(line[1:])
	switch r.kind {
	case '+', '-':
		r.str = body
		return r, rest, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		r.num = n
		return r, rest, err
	case '$':
		return parseBulk(r, body, rest)
	case '=':
		r, rest, err := parseBulk(r, body, rest)
		if err == nil && (r.null || len(r.str) < 4 || r.str[3] != ':') {
			return r, nil, fmt.Errorf("%w: verbatim string %q", errBadReply, r.str)
		}
		r.str = r.str[min(4, len(r.str)):]
		return r, rest, err
	case '_':
		r.null = true
		if body != "" {
			return r, nil, fmt.Errorf("%w: null with a body %q", errBadReply, body)
		}
		return r, rest, nil
	case '*', '%':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || (n == -1 && r.kind == '%') {
			return r, nil, fmt.Errorf("%w: aggregate length %q", errBadReply, body)
		}
		r.null = n == -1
		if r.kind == '%' {
			n *= 2
		}
		for range max(n, 0) {
			var e reply
			if e, rest, err = parseReply(rest); err != nil {
				return r, nil, err
			}
			r.elems = append(r.elems, e)
		}
		return r, rest, nil
	}
	return r, nil, fmt.Errorf("%w: type %q", errBadReply, r.kind)
}

func parseBulk(r reply, body string, rest []byte) (reply, []byte, error) {
	n, err := strconv.Atoi(body)
	switch {
	case err != nil || n < -1:
		return r, nil, fmt.Errorf("%w: bulk length %q", errBadReply, body)
	case n == -1:
		r.null = true
		return r, rest, nil
	case len(rest) < n+2 || string(rest[n:n+2]) != "\r\n":
		return r, nil, fmt.Errorf("%w: bulk of %d bytes truncated", errBadReply, n)
	}
	r.str = string(rest[:n])
	return r, rest[n+2:], nil
}

// render prints a reply as redis-cli does, RESP3's maps as "1# key => value"; unlike
// redis-cli it prints RESP3's null as "(null)", so that transcripts tell it from RESP2's.
func render(r reply) string {
	var b strings.Builder
	renderTo(&b, r, "")
	return b.String()
}

func renderTo(b *strings.Builder, r reply, indent string) {
	switch {
	case r.kind == '+':
		b.WriteString(r.str)
	case r.kind == '-':
		b.WriteString("(error) " + r.str)
	case r.kind == ':':
		fmt.Fprintf(b, "(integer) %d", r.num)
	case r.kind == '_':
		b.WriteString("(null)")
	case r.null:
		b.WriteString("(nil)")
	case r.kind == '$':
		b.WriteString(strconv.Quote(r.str))
	case r.kind == '=':
		b.WriteString("(verbatim) " + strconv.Quote(r.str))
	case len(r.elems) == 0 && r.kind == '%':
		b.WriteString("(empty hash)")
	case len(r.elems) == 0:
		b.WriteString("(empty array)")
	case r.kind == '%':
		w := len(strconv.Itoa(len(r.elems) / 2))
		for i := 0; i < len(r.elems); i += 2 {
			if i > 0 {
				b.WriteString("\n" + indent)
			}
			prefix := fmt.Sprintf("%*d# ", w, i/2+1)
			b.WriteString(prefix)
			renderTo(b, r.elems[i], indent+strings.Repeat(" ", len(prefix)))
			b.WriteString(" => ")
			renderTo(b, r.elems[i+1], indent+strings.Repeat(" ", len(prefix)+4))
		}
	default:
		w := len(strconv.Itoa(len(r.elems)))
		for i, e := range r.elems {
			if i > 0 {
				b.WriteString("\n" + indent)
			}
			prefix := fmt.Sprintf("%*d) ", w, i+1)
			b.WriteString(prefix)
			renderTo(b, e, indent+strings.Repeat(" ", len(prefix)))
		}
	}
}

// splitArgs splits a transcript line into arguments: words separated by spaces, or Go
// double-quoted strings (so "a b", "" and "\x00" are single arguments).
func splitArgs(line string) ([][]byte, error) {
	var out [][]byte
	for line = strings.TrimLeft(line, " "); line != ""; line = strings.TrimLeft(line, " ") {
		if line[0] != '"' {
			word, rest, _ := strings.Cut(line, " ")
			out, line = append(out, []byte(word)), rest
			continue
		}
		end := 1
		for end < len(line) && line[end] != '"' {
			if line[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(line) {
			return nil, fmt.Errorf("unterminated quote in %q", line)
		}
		s, err := strconv.Unquote(line[:end+1])
		if err != nil {
			return nil, err
		}
		out, line = append(out, []byte(s)), line[end+1:]
	}
	return out, nil
}
