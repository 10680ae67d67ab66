// Package transport carries requests and responses between kura nodes: a framed,
// multiplexed request/response protocol over TCP that moves opaque payloads by method
// number. The messages themselves (what a method number means, how its payload is
// encoded) belong to package wire; this package never looks inside a payload.
//
// # Frames
//
// Every frame is a fixed header followed by the payload: 20 bytes in version 1, 44 in
// version 2, whose header is version 1's followed by three stamps. Integers are
// big-endian.
//
//	 0        1        2        3        4        5        6        7
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|version |  type  |     method      |          payload length           |
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|                              request ID                               |
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|         timeout (µs)              |  version 1: payload (length bytes) ...
//	+--------+--------+--------+--------+--------
//
// Version 2 goes on from byte 20 with the stamps, then the payload from byte 44:
//
//	20                                                                   27
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|                              clock (µs)                               |
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|                              wall (µs)                                |
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|                              epoch                                    |
//	+--------+--------+--------+--------+--------+--------+--------+--------+
//	|  payload (length bytes) ...
//	+--------+--------
//
//	version   1 byte   1 or 2, checked on every frame; it alone gives the header's size.
//	type      1 byte   1 request, 2 response, 3 error; 4 is reserved for one-way
//	                   messages; anything else is rejected.
//	method    2 bytes  chosen by the caller; echoed in the response.
//	length    4 bytes  payload length; over the receiver's limit is rejected before the
//	                   payload is read.
//	ID        8 bytes  chosen by the client, unique among its outstanding requests on the
//	                   connection; the response carries the same ID. Calls are numbered
//	                   from 1: ID 0 is the hello's.
//	timeout   4 bytes  requests only: the caller's remaining time in microseconds,
//	                   rounded up (0 = no deadline; at most MaxTimeout). It is relative so
//	                   that clock skew between nodes does not matter; the server's handler
//	                   context gets the deadline arrival time + timeout. Zero in other
//	                   frames.
//	clock     8 bytes  version 2: the sender's hybrid logical clock (ClientConfig.Clock,
//	                   ServerConfig.Clock) as the frame went to the socket: the largest
//	                   timestamp it had issued or observed, its payload's included; 0 =
//	                   none.
//	                   The receiver's clock observes it before the request is handled or
//	                   the response delivered, so that its later timestamps are larger;
//	                   unless the wall stamp proves the sender's clock further ahead than
//	                   the receiver's MaxClockAhead (ClientConfig, ServerConfig).
//	wall      8 bytes  version 2: the sender's physical clock then (read once per batch
//	                   of frames written together), microseconds since the Unix epoch;
//	                   0 = none. A client estimates its peer's clock offset
//	                   from those of the responses (Client.ClockOffset).
//	epoch     8 bytes  version 2: the sender's ring epoch (ClientConfig.Epoch,
//	                   ServerConfig.Epoch) as the frame went to the socket: a request's
//	                   is at least the epoch it was planned under; 0 = none (the sender
//	                   knows no ring, or predates epochs). See "Epochs".
//
// An error frame's payload is a 2-byte code (see CodeHandlerError and the codes after it)
// followed by a UTF-8 message. Decode and Decoder parse frames of both versions and are
// fuzzed.
//
// A frame that cannot be decoded (an unknown version, an unknown type, a payload over the
// limit) closes its connection: there is no way to find the next frame boundary. A request
// over the server's limit is first answered with a CodeTooLarge error frame, since its
// header names the request.
//
// # Versions
//
// A server answers every request in the version it came in, so a client that predates
// version 2 is served as before. A client speaks version 2 only to a server that said it
// reads it, since an older server closes a connection that sends it: each new connection
// opens with a hello, a version 1 request with method 0 and ID 0 whose one-byte payload is
// the newest version the client reads, before any call is sent (it counts in DialTimeout).
// A server that reads version 2 answers it itself, not through its handler, with a
// response in the newest version both read. A server that predates version 2 hands it to
// its handler as a request for method 0 (kura's replica answered such a request with an
// unknown method error) and answers in version 1, whatever the handler said; the
// connection then speaks version 1, stamps nothing and observes nothing. Mixed-version
// clusters therefore work, and an old peer is simply not observed. ClientConfig.MaxVersion
// and ServerConfig.MaxVersion make a peer behave as an old one, for tests.
//
// Ring epochs (issue 32, point 1) needed no new version: version 2 had the field from its
// start, and every version 2 peer that predates epochs writes it 0 and ignores it (it
// decodes it, and nothing acts on it). So an older version 2 server serves a request
// whatever its epoch, never refuses one, and stamps its responses 0, which a new client
// does not observe; an older version 2 client sends epoch 0, which a new server never
// refuses, and ignores the epoch of the responses. A version 1 frame has no epoch: it
// counts as 0. An older client would turn the refusal's error code, which it does not
// know, into a plain *RemoteError with the message; it never gets one, since it sends no
// epoch.
//
// # Epochs
//
// A node's ring epoch names the ring version it routes by; it only increases. Every
// version 2 frame carries its sender's, stamped by the connection's writer, so a client
// that planned a request under an old ring and a replica that has a newer one learn it
// from each other's frames:
//
//   - A frame read whose epoch is above the reader's own goes to ObserveEpoch
//     (ClientConfig, ServerConfig), on the connection's reader, before the request is
//     handled or the response delivered; a response counts whether the call succeeded or
//     not. The node's hook only records the epoch and pokes whatever catches up.
//   - A server with a newer epoch than a request's (a nonzero one) refuses it when
//     ServerConfig.RefuseStaleEpoch says so for its method: the handler is not called,
//     and the answer is an error frame with CodeStaleEpoch, stamped like every frame with
//     the server's epoch, which Call returns as a *StaleEpochError (IsStaleEpoch): nothing
//     was applied, and the caller catches up and retries. A write planned on a stale ring
//     is thus never acknowledged by a replica that knows better. Methods that must be
//     served at any epoch (the metadata log's own, by which a node behind catches up) are
//     exempt.
//   - A request at the server's epoch or a newer one, or at epoch 0, is served; its
//     handler reads the epoch with RequestEpoch.
//
// The cost is an epoch read per frame written, one per frame read that carries an epoch,
// and a context per request that carries one (24 bytes, allocated 85 at a time).
//
// # Connections
//
// A Client talks to one peer over one connection, dialed on first use and redialed after
// it breaks, with exponential backoff and jitter after failures. Many calls are in flight
// at once, matched to responses by request ID. One writer goroutine per connection drains
// a bounded send queue into a buffered writer and flushes once per batch, so that small
// concurrent messages share syscalls; one reader goroutine delivers responses. Call waits
// for its response; Go returns at once and the reader hands the response to a callback
// (a coordinator asking several replicas gets their answers on one channel without a
// goroutine per call); a sweeper fails Go calls whose deadline passed unanswered.
//
// A Server reads each connection in one goroutine and hands each request to a handler
// goroutine (at most ServerConfig.MaxInFlight per connection; at that bound it stops
// reading, which pushes back through TCP); handler goroutines wait for the next request
// when done (up to 16 idle), so their stacks, grown by deep handlers, are reused. Each
// request's deadline becomes a lazy context (package lazyctx) that starts a timer only if
// the handler waits on it. Responses go through the same batching writer.
//
// # Limits and backpressure
//
// Every queue has a bound. A client connection has at most ClientConfig.MaxInFlight
// outstanding calls and ClientConfig.SendQueueDepth queued requests; a Call that finds
// either full waits up to ClientConfig.QueueWait (or until its context ends) and then fails
// with ErrOverloaded. Payloads are limited to MaxPayloadBytes on both sides (default
// 16 MiB). The queued requests of a client connection hold copies of their payloads, so a
// client's queue memory is at most SendQueueDepth times its largest payload; a server
// connection holds at most MaxInFlight responses.
//
// # Errors
//
// Call tells apart what a coordinator must: a *RemoteError (the handler failed), a
// *StaleEpochError (the request was refused unhandled: the caller's ring is stale), the
// context's error (the caller stopped waiting; the request may have been handled),
// ErrOverloaded and ErrUnreachable (nothing was sent), ErrConnectionLost (the connection
// broke with the call outstanding; the request may have been handled) and ErrClosed.
//
// # Memory ownership
//
// Call and Go copy the request payload before sending it, so the caller may reuse it once
// they return; the response payload Call returns is a fresh slice that the caller owns. A
// Handler's request payload is valid only until Handle returns; the slice Handle returns
// passes to the transport and must not be modified afterwards.
//
// The protocol has no handshake beyond the hello, no keepalive of its own (TCP keepalive
// is on) and no compression; a per-connection GOAWAY frame that lets clients stop sending before a
// graceful Shutdown closes the socket would remove the ErrConnectionLost that requests sent
// during the shutdown now see.
package transport
