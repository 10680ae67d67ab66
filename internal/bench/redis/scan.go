package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/scan"
)

// YCSB's scans (workload E) as its Cassandra binding runs them: the records whose tokens
// are at or after the start key's, in token order, up to count of them (SELECT ... WHERE
// token(key) >= token(start) LIMIT count). Against kura that is SCAN from the cursor of
// the start key's token (a kura cursor is a position on the ring, package scan) until
// count keys or the end of the ring, then one pipelined round trip reading each record
// as Read does. A server whose SCAN is not in token order (redis-server: its cursor is a
// position in its hash table, so there is no range to read) gets ErrUnsupported; the
// client asks INFO once whether the server is kura.

// scanState is a client's part of scans.
type scanState struct {
	checked, kura bool
	keys          [][]byte // the keys of the current scan, in buf
	buf           []byte
	out           []byte // the pipelined reads
}

// Scan reads up to count records from startKey's token on, in token order.
func (c *client) Scan(ctx context.Context, startKey string, count int, fields []string) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	if err := c.checkScans(ctx); err != nil {
		return err
	}
	st := &c.scan
	st.keys, st.buf = st.keys[:0], st.buf[:0]
	for cursor := scan.Cursor(ring.TokenOf([]byte(startKey))); len(st.keys) < count; {
		c.conn.begin("SCAN")
		c.conn.arg(strconv.FormatUint(cursor, 10))
		c.conn.arg("COUNT")
		c.conn.arg(strconv.Itoa(count - len(st.keys)))
		next, err := c.scanPage(ctx)
		if err != nil {
			return err
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if len(st.keys) > count {
		st.keys = st.keys[:count]
	}
	return c.readAll(ctx, fields)
}

// checkScans asks the server once whether it is kura.
func (c *client) checkScans(ctx context.Context) error {
	if !c.scan.checked {
		c.conn.begin("INFO")
		c.conn.arg("server")
		info, err := c.conn.fetch(c.deadline(ctx))
		if err != nil {
			c.dropUnlessServerError(err)
			return fmt.Errorf("redis: INFO server: %w", err)
		}
		c.scan.checked, c.scan.kura = true, bytes.Contains(info, []byte("\nkura_version:"))
	}
	if !c.scan.kura {
		return fmt.Errorf("redis: range scans need SCAN in token order (kura); %s is not kura: %w", c.addr, bench.ErrUnsupported)
	}
	return nil
}

// dropUnlessServerError drops the connection after an I/O or protocol error.
func (c *client) dropUnlessServerError(err error) {
	if !errors.Is(err, errServer) {
		c.drop()
	}
}

// scanPage sends the SCAN collected on the connection, appends the keys of its reply to
// the scan's and returns the next cursor.
func (c *client) scanPage(ctx context.Context) (uint64, error) {
	if err := c.conn.send(c.deadline(ctx)); err != nil {
		c.drop()
		return 0, err
	}
	next, err := c.readScanReply()
	if err != nil {
		c.dropUnlessServerError(err)
	}
	return next, err
}

// readScanReply reads SCAN's reply: a cursor and an array of keys.
func (c *client) readScanReply() (uint64, error) {
	st, cn := &c.scan, c.conn
	line, err := cn.readLine()
	switch {
	case err != nil:
		return 0, err
	case line[0] == '-':
		return 0, &ServerError{Msg: string(line[1:])}
	case string(line) != "*2":
		return 0, fmt.Errorf("%w: SCAN reply %q", errProtocol, line)
	}
	cur, err := cn.readBulk(nil)
	if err != nil {
		return 0, err
	}
	next, err := strconv.ParseUint(string(cur), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: SCAN cursor %q", errProtocol, cur)
	}
	if line, err = cn.readLine(); err != nil {
		return 0, err
	}
	n, err := parseInt(line[1:])
	if line[0] != '*' || err != nil || n < 0 || n > maxArrayLength {
		return 0, fmt.Errorf("%w: SCAN keys %q", errProtocol, line)
	}
	for range n {
		start := len(st.buf)
		if st.buf, err = cn.readBulk(st.buf); err != nil {
			return 0, err
		}
		// A key keeps the array it was read into (a later append may move buf, never
		// write over it), capped so that nothing appends into its neighbour.
		st.keys = append(st.keys, st.buf[start:len(st.buf):len(st.buf)])
	}
	return next, nil
}

// readBulk reads one bulk string and appends it to dst.
func (c *conn) readBulk(dst []byte) ([]byte, error) {
	line, err := c.readLine()
	if err != nil {
		return dst, err
	}
	n, err := parseInt(line[1:])
	if line[0] != '$' || err != nil || n < 0 || n > maxBulkBytes {
		return dst, fmt.Errorf("%w: want a bulk string, got %q", errProtocol, line)
	}
	start := len(dst)
	dst = append(dst, make([]byte, n+2)...)
	if _, err := io.ReadFull(c.r, dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("redis: %w", err)
	}
	return dst[:start+int(n)], nil
}

// readAll reads the scan's records in one pipelined round trip, as Read reads one.
func (c *client) readAll(ctx context.Context, fields []string) error {
	st := &c.scan
	if len(st.keys) == 0 {
		return nil
	}
	out := st.out[:0]
	for _, k := range st.keys {
		switch {
		case c.t.Record == RecordString:
			out = appendCommand(out, []byte("GET"), k)
		case fields == nil:
			out = appendCommand(out, []byte("HGETALL"), k)
		default:
			args := [][]byte{[]byte("HMGET"), k}
			for _, f := range fields {
				args = append(args, []byte(f))
			}
			out = appendCommand(out, args...)
		}
	}
	st.out = out
	if err := c.conn.nc.SetDeadline(c.deadline(ctx)); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if _, err := c.conn.nc.Write(out); err != nil {
		c.drop()
		return fmt.Errorf("redis: %w", err)
	}
	var firstErr error
	for range st.keys {
		if _, err := c.conn.readReply(0); err != nil {
			if !errors.Is(err, errServer) {
				c.drop()
				return err
			}
			firstErr = cmpOr(firstErr, err)
		}
	}
	return firstErr
}

// appendCommand appends one command in RESP2 to dst.
func appendCommand(dst []byte, args ...[]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
