package resp

import (
	"fmt"
	"io"
)

// frameLimiter sits between a connection and redcon's reader and refuses a request frame
// as soon as it is known to exceed MaxRequestBytes or MaxArgs.
//
// redcon's reader has no size limit: it grows its buffer until a whole frame has arrived,
// so "$9999999999" would make one client allocate without bound. The limiter follows the
// frame structure as bytes pass (headers byte by byte, bulk bodies skipped in one step),
// fails on the announced size before the body arrives, and passes through the valid bytes
// before the violation so that commands pipelined ahead of a bad frame still run. It also
// rejects the few malformed headers redcon would reject, with redcon's texts.
type frameLimiter struct {
	r        io.Reader
	maxBytes int64
	maxArgs  int64

	state  limState
	frame  int64 // bytes of the current frame so far
	num    int64 // header number being parsed
	digits int   // header digits seen
	neg    bool  // header number has a '-'
	args   int64 // bulk strings left in the frame
	body   int64 // bytes left in the current bulk string, its CRLF included
	err    error // sticky: returned once the valid prefix has been delivered

	// frames counts completed RESP frames and sawInline records whether any inline command
	// was seen; with them the driver knows when no partial command is buffered above.
	frames    int64
	sawInline bool
}

type limState uint8

const (
	limStart     limState = iota // at the first byte of a frame
	limInline                    // in an inline (telnet) command, until '\n'
	limCount                     // in "*<count>\r\n", after '*'
	limCountLF                   // after the count's '\r'
	limBulkStart                 // expecting '$'
	limBulkLen                   // in "$<len>\r\n", after '$'
	limBulkLenLF                 // after the length's '\r'
	limBody                      // in a bulk string's body and CRLF
)

// inlineMax bounds an inline command line, as Redis's PROTO_INLINE_MAX_SIZE.
const inlineMax = 64 << 10

// maxHeaderDigits keeps header numbers far from overflow; larger ones exceed any limit.
const maxHeaderDigits = 18

// protocolError is a request the server refuses to read: a malformed or oversized frame.
// The client gets "-ERR Protocol error: <Msg>" and the connection is closed.
type protocolError struct{ Msg string }

func (e *protocolError) Error() string { return "resp: protocol error: " + e.Msg }

func newFrameLimiter(r io.Reader, maxBytes, maxArgs int) *frameLimiter {
	return &frameLimiter{r: r, maxBytes: int64(maxBytes), maxArgs: int64(maxArgs)}
}

// Read reads from the connection and returns the bytes that keep every frame within the
// limits; after a violation it returns the protocolError.
func (l *frameLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, rerr := l.r.Read(p)
	k, err := l.scan(p[:n])
	if err != nil {
		l.err = err
		if k > 0 {
			return k, nil
		}
		return 0, err
	}
	return n, rerr
}

// scan advances the frame state over b and returns how many bytes are valid.
func (l *frameLimiter) scan(b []byte) (int, error) {
	for i := 0; i < len(b); {
		if l.state == limBody {
			k := min(l.body, int64(len(b)-i))
			l.body -= k
			i += int(k)
			if l.body == 0 {
				l.endBulk()
			}
			continue
		}
		l.frame++
		if err := l.step(b[i]); err != nil {
			return i, err
		}
		i++
	}
	return len(b), nil
}

// step consumes one byte outside a bulk body.
func (l *frameLimiter) step(c byte) error {
	switch l.state {
	case limStart:
		l.state = limInline
		l.sawInline = l.sawInline || c != '*'
		if c == '*' {
			l.startHeader(limCount)
			return nil
		}
		return l.inline(c)
	case limInline:
		return l.inline(c)
	case limCount, limBulkLen:
		return l.headerByte(c)
	case limCountLF:
		if c != '\n' {
			return errMultiBulkLen
		}
		return l.startFrame()
	case limBulkStart:
		if c != '$' {
			return &protocolError{fmt.Sprintf("expected '$', got '%c'", c)}
		}
		l.startHeader(limBulkLen)
		return nil
	case limBulkLenLF:
		if c != '\n' {
			return errBulkLen
		}
		return l.startBody()
	}
	return nil
}

var (
	errMultiBulkLen = &protocolError{"invalid multibulk length"}
	errBulkLen      = &protocolError{"invalid bulk length"}
)

func (l *frameLimiter) inline(c byte) error {
	if c == '\n' {
		l.state, l.frame = limStart, 0
		return nil
	}
	if l.frame > min(inlineMax, l.maxBytes) {
		return &protocolError{"too big inline request"}
	}
	return nil
}

func (l *frameLimiter) startHeader(s limState) {
	l.state, l.num, l.digits, l.neg = s, 0, 0, false
}

// headerByte parses the number of a "*" or "$" header line up to its '\r'.
func (l *frameLimiter) headerByte(c byte) error {
	bad := errBulkLen
	if l.state == limCount {
		bad = errMultiBulkLen
	}
	switch {
	case c == '-' && l.digits == 0 && !l.neg:
		l.neg = true
	case '0' <= c && c <= '9' && l.digits < maxHeaderDigits:
		l.num = l.num*10 + int64(c-'0')
		l.digits++
	case c == '\r':
		if l.neg && l.num != 0 || l.state == limCount && l.num <= 0 {
			return bad
		}
		l.state++ // limCount -> limCountLF, limBulkLen -> limBulkLenLF
	default:
		return bad
	}
	return l.checkSize()
}

// startFrame begins the bulk strings of a frame once its count is known.
func (l *frameLimiter) startFrame() error {
	if l.num > l.maxArgs {
		return &protocolError{fmt.Sprintf("request has %d arguments, max-args is %d", l.num, l.maxArgs)}
	}
	l.args = l.num
	l.state = limBulkStart
	return nil
}

// startBody checks the announced bulk length against the limit before any of it arrives.
func (l *frameLimiter) startBody() error {
	l.body = l.num + 2
	if l.frame+l.body > l.maxBytes {
		return l.tooLarge()
	}
	l.frame += l.body
	l.state = limBody
	return nil
}

// endBulk moves to the next bulk string or ends the frame.
func (l *frameLimiter) endBulk() {
	l.args--
	if l.args > 0 {
		l.state = limBulkStart
		return
	}
	l.state, l.frame = limStart, 0
	l.frames++
}

// atBoundary reports whether every byte delivered so far belongs to one of the first
// frames complete RESP frames and no inline command was ever seen: then a reader above
// holds no partial command.
func (l *frameLimiter) atBoundary(frames int64) bool {
	return l.state == limStart && !l.sawInline && l.frames == frames
}

func (l *frameLimiter) checkSize() error {
	if l.frame > l.maxBytes {
		return l.tooLarge()
	}
	return nil
}

func (l *frameLimiter) tooLarge() error {
	return &protocolError{fmt.Sprintf("request larger than max-request-bytes (%d)", l.maxBytes)}
}
