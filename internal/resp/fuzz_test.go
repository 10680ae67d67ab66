package resp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/redcon"
)

// fuzzWords are arguments the fuzzer picks by index so that it reaches options, small
// integer edge cases and colliding keys, which random bytes would rarely spell.
var fuzzWords = []string{
	"", "a", "b", "f", "g", "0", "1", "-1", "10", "100", "2", "3",
	"EX", "PX", "EXAT", "PXAT", "NX", "XX", "GT", "LT", "GET", "KEEPTTL",
	"AUTH", "SETNAME", "default", "secret", "SETINFO", "LIB-NAME", "LIB-VER", "GETNAME",
	"DOCS", "COUNT", "INFO", "LIST", "HELP", "*", "save", "keyspace", "engine", "ID",
	"9223372036854775807", "-9223372036854775808", "1700000000", "a\r\nb", "abcdefghijklmnop",
}

// decodeFuzzCommands turns fuzz bytes into command vectors. Commands are separated by
// 0xfe; in a command the first byte picks the name (from the table, or a junk name), then
// each argument is a fuzzWords index (byte < 0x80) or a literal of (byte-0x80) bytes.
func decodeFuzzCommands(h *Handler, data []byte) [][][]byte {
	var cmds [][][]byte
	for _, chunk := range bytes.Split(data, []byte{0xfe}) {
		if len(chunk) == 0 {
			continue
		}
		var args [][]byte
		if i := int(chunk[0]); i < len(h.table) {
			args = append(args, []byte(strings.ToUpper(h.table[i].name)))
		} else {
			args = append(args, []byte("x"+strconv.Itoa(i)))
		}
		for rest := chunk[1:]; len(rest) > 0; {
			b := rest[0]
			rest = rest[1:]
			if b < 0x80 {
				args = append(args, []byte(fuzzWords[int(b)%len(fuzzWords)]))
				continue
			}
			n := min(int(b-0x80), len(rest))
			args, rest = append(args, rest[:n:n]), rest[n:]
		}
		cmds = append(cmds, args)
	}
	return cmds
}

// FuzzHandler runs random command sequences: no panics, exactly one well-formed reply per
// command, and the store never sees an invalid batch.
func FuzzHandler(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0xfe, 0, 0}) // SET a b; GET a
	f.Add([]byte{1, 1, 2, 12, 10, 0xfe, 8, 1, 0xfe, 6, 1, 9, 18})
	f.Add([]byte{11, 3, 3, 1, 4, 2, 0xfe, 15, 3, 0xfe, 16, 3, 3, 0xfe, 6, 3, 7})
	f.Add([]byte{25, 11, 22, 24, 25, 23, 0x81, 'x', 0xfe, 26, 26, 0xfe, 27, 30})
	f.Add([]byte{200, 0x83, 'a', '\r', '\n'})
	// HELLO 3, then the commands whose RESP3 replies differ from RESP2's.
	h := newHandlerEnv(f, Config{}).h
	id := func(name string) byte { return byte(h.byName[name].id) }
	f.Add([]byte{id("hello"), 11, 0xfe, id("hset"), 1, 3, 2, 0xfe, id("hgetall"), 1, 0xfe, id("hmget"), 1, 3, 4,
		0xfe, id("mget"), 1, 2, 0xfe, id("info"), 0xfe, id("client"), 32, 0xfe, id("config"), 20, 35,
		0xfe, id("command"), 30, 20, 0xfe, id("hello"), 10, 0xfe, id("get"), 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Config{MaxKeyBytes: 12, MaxValueBytes: 16, MaxArgs: 10}
		if len(data) > 0 && data[0]&1 == 1 {
			cfg.Password = "secret"
		}
		e := newHandlerEnv(t, cfg)
		s := e.h.NewSession()
		for _, args := range decodeFuzzCommands(e.h, data) {
			out := e.h.Do(nil, args, s)
			r, rest, err := parseReply(out)
			if err != nil || len(rest) != 0 {
				t.Fatalf("%q: reply %q is not one well-formed reply: %v", args, out, err)
			}
			if r.kind == '-' && strings.Contains(r.str, "invalid argument") {
				t.Fatalf("%q: handler wrote an invalid batch: %s", args, r.str)
			}
			e.clock.advance(700 * microsPerMilli)
		}
	})
}

// FuzzParseInt checks parseInt against strconv: it accepts exactly the canonical decimal
// form of an int64.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "00", "+1", "1", "-1", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", " 1", "", "-"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != canonical || (ok && got != want) {
			t.Fatalf("parseInt(%q) = %d, %v; strconv says %d, %v (canonical %v)", b, got, ok, want, err, canonical)
		}
	})
}

// FuzzFrameLimiter feeds bytes through the limiter into redcon's reader, in small random
// reads: no command longer than the limits ever comes out, and input that respects the
// limits passes unchanged.
func FuzzFrameLimiter(f *testing.F) {
	f.Add(uint8(64), uint8(4), []byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\n"))
	f.Add(uint8(16), uint8(3), []byte("*1\r\n$99\r\n"))
	f.Add(uint8(16), uint8(2), []byte("*3\r\n$1\r\na\r\n"))
	f.Add(uint8(32), uint8(8), []byte("*1\r\n$-1\r\n*0\r\n$x"))
	f.Add(uint8(8), uint8(8), []byte("inline command that is too long\r\n"))
	f.Fuzz(func(t *testing.T, maxBytes, maxArgs uint8, data []byte) {
		lim := newFrameLimiter(iotest.HalfReader(bytes.NewReader(data)), int(maxBytes), int(maxArgs))
		limited, limErr := readAll(redcon.NewReader(lim))
		for _, c := range limited {
			// MaxArgs binds RESP frames, whose Raw redcon copies verbatim; inline commands
			// are bounded by their line length and by the handler's own check.
			if len(c.Args) > int(maxArgs) && bytes.Contains(data, c.Raw) {
				t.Fatalf("command with %d args passed max-args %d", len(c.Args), maxArgs)
			}
			// Raw is re-encoded for inline commands, so check what any frame holding
			// these arguments must have been at least.
			size := 0
			for _, a := range c.Args {
				size += len(a)
			}
			if size > int(maxBytes) {
				t.Fatalf("arguments of %d bytes passed max-request-bytes %d", size, maxBytes)
			}
		}
		direct, directErr := readAll(redcon.NewReader(bytes.NewReader(data)))
		var pe *protocolError
		if errors.As(limErr, &pe) {
			return // refused: a prefix of the commands came through, checked above
		}
		if len(direct) != len(limited) || (directErr == nil) != (limErr == nil) {
			t.Fatalf("limiter changed the stream: %d commands (%v) vs %d direct (%v)",
				len(limited), limErr, len(direct), directErr)
		}
	})
}

// readAll reads commands until an error; io.EOF ends the stream normally.
func readAll(rd *redcon.Reader) ([]redcon.Command, error) {
	var out []redcon.Command
	for {
		cmds, err := rd.ReadCommands()
		out = append(out, cmds...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
