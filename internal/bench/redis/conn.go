package redis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Reply limits: the benchmark reads records, so replies are bounded. A reply past these
// limits means the server sent something the benchmark did not ask for.
const (
	maxBulkBytes   = 512 << 20
	maxArrayLength = 1 << 20
	maxReplyDepth  = 8
	readBufBytes   = 64 << 10
)

// ServerError is an error reply from the server ("-ERR ...", "-WRONGTYPE ..."). The
// connection stays usable.
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return "redis: server replied: " + e.Msg }

// errServer marks ServerErrors for errors.Is.
var errServer = errors.New("redis: server error reply")

// Is makes errors.Is(err, errServer) true for every ServerError.
func (e *ServerError) Is(target error) bool { return target == errServer }

// errProtocol is a reply that is not RESP2; the connection is dropped.
var errProtocol = errors.New("redis: protocol error")

// conn encodes commands and decodes replies on one connection. Arguments are collected
// by begin/arg and encoded into one buffer, so a command is one write.
type conn struct {
	nc   net.Conn
	r    *bufio.Reader
	out  []byte
	args []argRef
	line []byte
}

// argRef is one argument: a string or a byte slice owned by the caller until sent.
type argRef struct {
	s string
	b []byte
}

// reply is what the benchmark needs from a reply: its type, an integer or array
// length, and how many elements of an array were not nil.
type reply struct {
	kind   byte
	n      int64
	nonNil int
}

func newConn(nc net.Conn) *conn {
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, readBufBytes)}
}

func (c *conn) begin(name string) {
	c.args = append(c.args[:0], argRef{s: name})
}

func (c *conn) arg(s string)      { c.args = append(c.args, argRef{s: s}) }
func (c *conn) argBytes(b []byte) { c.args = append(c.args, argRef{b: b}) }

// encode writes the collected command in RESP2 into c.out.
func (c *conn) encode() {
	out := append(c.out[:0], '*')
	out = strconv.AppendInt(out, int64(len(c.args)), 10)
	out = append(out, '\r', '\n')
	for _, a := range c.args {
		n := len(a.s) + len(a.b)
		out = append(out, '$')
		out = strconv.AppendInt(out, int64(n), 10)
		out = append(out, '\r', '\n')
		out = append(out, a.s...)
		out = append(out, a.b...)
		out = append(out, '\r', '\n')
	}
	c.out = out
	clear(c.args) // drop references to the caller's values
	c.args = c.args[:0]
}

// send writes the collected command, with deadline for it and its reply.
func (c *conn) send(deadline time.Time) error {
	c.encode()
	if err := c.nc.SetDeadline(deadline); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if _, err := c.nc.Write(c.out); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// roundTrip sends the collected command and reads one reply before deadline.
func (c *conn) roundTrip(deadline time.Time) (reply, error) {
	if err := c.send(deadline); err != nil {
		return reply{}, err
	}
	return c.readReply(0)
}

func (c *conn) close() { _ = c.nc.Close() }

// fetch sends the collected command and returns its reply, which must be a bulk string,
// whole (the other replies' contents are discarded). The slice is the caller's.
func (c *conn) fetch(deadline time.Time) ([]byte, error) {
	if err := c.send(deadline); err != nil {
		return nil, err
	}
	line, err := c.readLine()
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '-':
		return nil, &ServerError{Msg: string(line[1:])}
	case '$':
		n, err := parseInt(line[1:])
		if err != nil || n < 0 || n > maxBulkBytes {
			return nil, fmt.Errorf("%w: bulk length %q", errProtocol, line[1:])
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		return b[:n], nil
	}
	return nil, fmt.Errorf("%w: want a bulk string, got %q", errProtocol, line[0])
}

// readLine returns the next CRLF-terminated line without its CRLF. The slice is valid
// until the next read.
func (c *conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, readBufBytes)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: malformed line %q", errProtocol, line)
	}
	return line[:len(line)-2], nil
}

// readReply reads one reply. Bulk contents are discarded: the benchmark counts records,
// it does not look at them.
func (c *conn) readReply(depth int) (reply, error) {
	if depth > maxReplyDepth {
		return reply{}, fmt.Errorf("%w: nested deeper than %d", errProtocol, maxReplyDepth)
	}
	line, err := c.readLine()
	if err != nil {
		return reply{}, err
	}
	rep := reply{kind: line[0]}
	switch line[0] {
	case '+':
		return rep, nil
	case '-':
		return rep, &ServerError{Msg: string(line[1:])}
	case ':':
		rep.n, err = parseInt(line[1:])
		return rep, err
	case '$':
		if rep.n, err = parseInt(line[1:]); err != nil || rep.n < 0 {
			return rep, err // -1 is the nil bulk string
		}
		if rep.n > maxBulkBytes {
			return rep, fmt.Errorf("%w: bulk of %d bytes", errProtocol, rep.n)
		}
		if _, err := c.r.Discard(int(rep.n) + 2); err != nil {
			return rep, fmt.Errorf("redis: %w", err)
		}
		return rep, nil
	case '*':
		if rep.n, err = parseInt(line[1:]); err != nil || rep.n < 0 {
			return rep, err
		}
		if rep.n > maxArrayLength {
			return rep, fmt.Errorf("%w: array of %d elements", errProtocol, rep.n)
		}
		var firstErr error
		for range rep.n {
			el, err := c.readReply(depth + 1)
			if err != nil && !errors.Is(err, errServer) {
				return rep, err
			}
			firstErr = cmpOr(firstErr, err)
			if !(el.kind == '$' && el.n < 0) && !(el.kind == '*' && el.n < 0) {
				rep.nonNil++
			}
		}
		return rep, firstErr
	}
	return rep, fmt.Errorf("%w: unknown reply type %q", errProtocol, line[0])
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", errProtocol, b)
	}
	return n, nil
}
