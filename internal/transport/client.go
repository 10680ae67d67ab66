package transport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ClientConfig configures a Client. Zero fields take their defaults.
type ClientConfig struct {
	// MaxPayloadBytes is the largest request payload Call sends and the largest response
	// it accepts; a larger response closes the connection. Default DefaultMaxPayloadBytes
	// (16 MiB), at most MaxPayloadLimit.
	MaxPayloadBytes int
	// MaxInFlight bounds the calls waiting for a response on the connection. Default 1024.
	MaxInFlight int
	// SendQueueDepth bounds the requests queued for the connection's writer and not yet
	// written; it fills when the network or the peer cannot keep up. Default 256.
	SendQueueDepth int
	// QueueWait is how long a Call waits, in total, for an in-flight slot and for room in
	// the send queue before it fails with ErrOverloaded. Overload is reported quickly
	// rather than turned into a timeout, so that a coordinator can shed load or pick
	// another replica. Default 100 ms.
	QueueWait time.Duration
	// DialTimeout bounds one connection attempt. Default 2 s.
	DialTimeout time.Duration
	// BackoffBase and BackoffMax shape the pause after a failed dial, or after a
	// connection that broke before it carried a single response: BackoffBase doubled per
	// consecutive failure, capped at BackoffMax, with jitter drawn from Rand (uniform in
	// [d/2, d]). Calls made during a pause fail at once with ErrUnreachable. Defaults
	// 50 ms and 5 s.
	BackoffBase, BackoffMax time.Duration
	// Rand draws the backoff jitter. Default: seeded from the clock.
	Rand *rand.Rand
	// Dial opens connections. Default: net.Dialer.DialContext with TCP_NODELAY (Go's
	// default for TCP).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialHost, when set, makes Dial for the client a Pool creates for a peer, given the
	// peer's host label as the pool's caller knows it ("" when it does not): a TLS
	// dialer checks that the peer's certificate names that host. NewClient ignores it.
	DialHost func(host string) func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clock stamps the requests (frame version 2), observes the stamps of the responses,
	// and times them for ClockOffset. Nil: the client sends no stamps and learns nothing
	// from the peer's.
	Clock Clock
	// MaxClockAhead, when positive, leaves unobserved the clock stamp of a response whose
	// wall stamp is further than this ahead of Clock's physical clock: the peer's clock is
	// then provably that far ahead (or this one's that far behind), and one wrong clock
	// must not drag every node's timestamps with it. 0 observes every stamp.
	MaxClockAhead time.Duration
	// Epoch returns the node's ring epoch, which every request carries (frame version 2),
	// read as the request goes to the socket. 0 says the node knows none. It runs on the
	// connection's writer once per frame, so it must be fast (an atomic load), safe for
	// concurrent use, and never decrease. Nil: requests carry epoch 0, which a server
	// serves as a peer's that predates epochs.
	//
	// The stamp is the node's epoch when the request is written, which may be newer than
	// the one the request was planned under (the transport does not know plans): a
	// replica refuses a request older than its ring, and a coordinator that caught up
	// between planning and sending notices that itself, by comparing its plan's epoch
	// with Epoch's when the answers come.
	Epoch func() uint64
	// ObserveEpoch is given the epoch of every response (error responses and the hello's
	// answer included) that is above Epoch's, before the call it answers returns. It runs
	// on the connection's reader, once per such frame until Epoch catches up, so it must
	// be cheap and must not block: a node's records the largest epoch seen and pokes the
	// goroutine that catches up. It is never given 0. Nil: epochs received are ignored.
	ObserveEpoch func(epoch uint64)
	// MaxVersion is the newest frame version the client speaks: 0 means Version; 1 makes
	// it speak as a client that predates version 2 (no hello, no stamps), which tests of
	// mixed-version clusters use.
	MaxVersion int
}

func (cfg ClientConfig) withDefaults() (ClientConfig, error) {
	if cfg.MaxPayloadBytes == 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.SendQueueDepth == 0 {
		cfg.SendQueueDepth = 256
	}
	if cfg.QueueWait == 0 {
		cfg.QueueWait = 100 * time.Millisecond
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = 50 * time.Millisecond
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 5 * time.Second
	}
	if cfg.Rand == nil {
		seed := uint64(time.Now().UnixNano())
		cfg.Rand = rand.New(rand.NewPCG(seed, seed>>32))
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	switch {
	case cfg.MaxPayloadBytes < 0 || cfg.MaxPayloadBytes > MaxPayloadLimit:
		return cfg, fmt.Errorf("%w: MaxPayloadBytes %d not in [0, %d]", ErrConfig, cfg.MaxPayloadBytes, MaxPayloadLimit)
	case cfg.MaxInFlight < 0 || cfg.SendQueueDepth < 0:
		return cfg, fmt.Errorf("%w: negative MaxInFlight or SendQueueDepth", ErrConfig)
	case cfg.QueueWait < 0 || cfg.DialTimeout < 0 || cfg.BackoffBase < 0 || cfg.BackoffMax < cfg.BackoffBase:
		return cfg, fmt.Errorf("%w: negative durations or BackoffMax below BackoffBase", ErrConfig)
	case cfg.MaxVersion < 0 || cfg.MaxVersion > Version:
		return cfg, fmt.Errorf("%w: MaxVersion %d not in [0, %d]", ErrConfig, cfg.MaxVersion, Version)
	}
	return cfg, nil
}

// Client calls one peer. It owns at most one connection at a time, dials it on first use,
// and after the connection breaks dials again on the next Call, backing off after failures
// (see ClientConfig). Many calls share the connection: they are matched to responses by
// request ID. A Client is safe for concurrent use.
type Client struct {
	addr    string
	cfg     ClientConfig
	version byte            // the newest frame version it speaks (cfg.MaxVersion)
	ctx     context.Context // canceled by Close; bounds dials
	cancel  context.CancelFunc
	cur     atomic.Pointer[clientConn] // the live connection, or nil
	wg      sync.WaitGroup             // dials and connection goroutines

	mu       sync.Mutex
	closed   bool
	dialing  chan struct{} // non-nil while a dial runs; closed when it ends
	attempts int           // consecutive failures, for the backoff
	nextDial time.Time     // no dial before this
	lastErr  error         // why the last connection or dial failed

	counts writeCounters
	offset offsetEstimate // of the peer's clock, from the stamps of its responses
}

// ClockOffset returns the estimate of the peer's physical clock against this node's, from
// the stamps of its responses (see Offset); false until a stamped response arrived (none
// does from a peer that predates frame version 2, or without a Clock).
func (c *Client) ClockOffset() (Offset, bool) { return c.offset.get() }

// Stats returns what the client's connections wrote (requests).
func (c *Client) Stats() Stats { return c.counts.stats() }

// NewClient returns a client for the peer at addr. It does not dial until the first Call.
func NewClient(addr string, cfg ClientConfig) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{addr: addr, cfg: cfg, version: versionOf(cfg.MaxVersion), ctx: ctx, cancel: cancel}, nil
}

// Addr returns the peer's address.
func (c *Client) Addr() string { return c.addr }

// Call sends a request for method with payload to the peer and waits for the response.
//
// The request carries ctx's remaining time, so the peer's handler stops when the caller
// stops waiting. Call returns the response payload, which the caller owns; or a
// *RemoteError if the handler failed; or an error wrapping ctx's error (the late response
// is then discarded), ErrOverloaded, ErrUnreachable (nothing was sent), ErrConnectionLost
// (the request may have been handled), ErrFrameTooLarge (payload over MaxPayloadBytes;
// nothing was sent) or ErrClosed.
//
// Call does not retain payload: the caller may reuse it once Call returns.
func (c *Client) Call(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if len(payload) > c.cfg.MaxPayloadBytes {
		return nil, fmt.Errorf("transport: call %d to %s: request of %d bytes, limit %d: %w",
			method, c.addr, len(payload), c.cfg.MaxPayloadBytes, ErrFrameTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: call %d to %s: %w", method, c.addr, err)
	}
	cn, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	return cn.call(ctx, method, payload)
}

// Go sends a request like Call but does not wait for its response: done is called once,
// with what Call would return, from the connection's goroutines (once the response
// arrives, or the connection fails, or within 50 ms of ctx's deadline) or, when nothing
// could be sent, from Go itself before it returns. done must not block: it runs on the
// connection's reader. ctx must have a deadline, which travels with the request; unlike
// Call, Go does not give up when ctx is canceled before its deadline. Go never waits for
// a dial (without a connection, the call is made from a goroutine of its own) but, like
// Call, waits up to QueueWait for room on a busy connection.
//
// Go saves the goroutine a caller would start to make concurrent calls: a coordinator
// asking several replicas at once gets their answers on one channel.
func (c *Client) Go(ctx context.Context, method uint16, payload []byte, done func([]byte, error)) {
	if len(payload) > c.cfg.MaxPayloadBytes {
		done(nil, fmt.Errorf("transport: call %d to %s: request of %d bytes, limit %d: %w",
			method, c.addr, len(payload), c.cfg.MaxPayloadBytes, ErrFrameTooLarge))
		return
	}
	if err := ctx.Err(); err != nil {
		done(nil, fmt.Errorf("transport: call %d to %s: %w", method, c.addr, err))
		return
	}
	if cn := c.cur.Load(); cn != nil {
		cn.goCall(ctx, method, payload, done)
		return
	}
	payload = append([]byte(nil), payload...) // Go does not retain payload after it returns
	go func() {
		cn, err := c.conn(ctx)
		if err != nil {
			done(nil, err)
			return
		}
		cn.goCall(ctx, method, payload, done)
	}()
}

// conn returns the live connection, waiting for a dial if one is needed.
func (c *Client) conn(ctx context.Context) (*clientConn, error) {
	if cn := c.cur.Load(); cn != nil {
		return cn, nil
	}
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("transport: client for %s: %w", c.addr, ErrClosed)
		}
		if cn := c.cur.Load(); cn != nil {
			c.mu.Unlock()
			return cn, nil
		}
		if c.dialing == nil {
			if wait := time.Until(c.nextDial); wait > 0 {
				err := c.lastErr
				c.mu.Unlock()
				return nil, fmt.Errorf("transport: %s: %w (next dial in %v): %w", c.addr, ErrUnreachable, wait, err)
			}
			c.dialing = make(chan struct{})
			c.wg.Add(1)
			go c.dial(c.dialing)
		}
		dialing := c.dialing
		c.mu.Unlock()
		select {
		case <-dialing:
		case <-ctx.Done():
			return nil, fmt.Errorf("transport: dialing %s: %w", c.addr, ctx.Err())
		}
		c.mu.Lock()
	}
}

// dial opens a connection, says hello (within the same DialTimeout) and installs it, or
// records the failure and the backoff. It runs in its own goroutine so that a caller whose
// context ends does not abort the dial for the others.
func (c *Client) dial(done chan struct{}) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.DialTimeout)
	nc, err := c.cfg.Dial(ctx, "tcp", c.addr)
	var version byte
	var dec *Decoder
	rcv := &receiver{clock: c.cfg.Clock, maxAhead: c.cfg.MaxClockAhead, est: &c.offset,
		epoch: c.cfg.Epoch, observeEpoch: c.cfg.ObserveEpoch}
	if err == nil {
		if version, dec, err = c.hello(ctx, nc, rcv); err != nil {
			nc.Close()
		}
	}
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dialing = nil
	defer close(done)
	if err == nil && c.closed {
		nc.Close()
		err = ErrClosed
	}
	if err != nil {
		c.backOff(fmt.Errorf("transport: dial %s: %w", c.addr, err))
		return
	}
	cn := newClientConn(c, nc, version, dec, rcv)
	c.cur.Store(cn)
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		cn.readLoop()
	}()
	go func() {
		defer c.wg.Done()
		cn.sweep()
	}()
	go func() {
		defer c.wg.Done()
		cn.w.run()
	}()
}

// hello opens a new connection as the package doc's "Versions" says: it sends the hello
// and reads the answer within ctx, taking its stamps with rcv, and returns the version the
// connection speaks and the decoder that read the answer, which the connection's reader
// goes on with. A client configured for version 1 sends nothing.
func (c *Client) hello(ctx context.Context, nc net.Conn, rcv *receiver) (byte, *Decoder, error) {
	dec := newDecoder(nc, c.cfg.MaxPayloadBytes, c.version)
	if c.version == Version1 {
		return Version1, dec, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	// Close cancels ctx: the hello must not hold it up until the deadline.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	hello := AppendFrame(nil, Frame{Version: Version1, Type: TypeRequest, Method: helloMethod, ID: helloID,
		Payload: []byte{c.version}})
	_, err := nc.Write(hello)
	c.counts.frames.Add(1)
	c.counts.flushes.Add(1)
	var f Frame
	if err == nil {
		f, err = dec.Next()
	}
	if !stop() && err == nil {
		err = ctx.Err() // the deadline of the past may be set at any moment: give up on nc
	}
	if err != nil {
		return 0, nil, fmt.Errorf("transport: hello to %s: %w", c.addr, err)
	}
	nc.SetDeadline(time.Time{})
	if f.ID != helloID || f.Type == TypeRequest {
		return 0, nil, fmt.Errorf("transport: hello to %s: %w: answered by a %s frame with ID %d", c.addr, ErrMalformedFrame, f.Type, f.ID)
	}
	rcv.received(&f)
	if f.Type == TypeResponse && f.Version != Version1 {
		return f.Version, dec, nil
	}
	return Version1, dec, nil // a server that predates version 2 answered as its handler does
}

// connLost forgets a broken connection. A connection that carried at least one response
// proved the peer healthy, so the next Call dials at once; one that broke before that
// counts as a failed dial, so a peer that accepts and drops connections is not hammered.
func (c *Client) connLost(cn *clientConn, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.CompareAndSwap(cn, nil)
	if c.closed {
		return
	}
	if cn.healthy.Load() {
		c.attempts, c.nextDial, c.lastErr = 0, time.Time{}, cause
		return
	}
	c.backOff(cause)
}

// backOff records a failure and schedules the earliest next dial. c.mu is held.
func (c *Client) backOff(cause error) {
	c.attempts++
	d := c.cfg.BackoffMax
	if shift := c.attempts - 1; shift < 32 {
		if b := c.cfg.BackoffBase << shift; b > 0 && b < d {
			d = b
		}
	}
	d = d/2 + time.Duration(c.cfg.Rand.Int64N(int64(d/2)+1))
	c.nextDial = time.Now().Add(d)
	c.lastErr = cause
}

// Close fails outstanding calls (with ErrConnectionLost wrapping ErrClosed), closes the
// connection and waits for the client's goroutines to end. Later calls fail with
// ErrClosed. Close is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cn := c.cur.Swap(nil)
	c.mu.Unlock()
	c.cancel()
	if cn != nil {
		cn.fail(ErrClosed)
	}
	c.wg.Wait()
	return nil
}
