// Package listener opens a node's TCP listeners, for clients (RESP), for the admin HTTP
// endpoints and for other nodes (the internode transport), in one place, so that what
// every listener must do is done once: the address, a clear error and TLS (ListenTLS).
// Gossip binds its own sockets through memberlist. A Mux splits the internode listener
// between the transport and the metadata log's Raft transport by each connection's first
// byte, so that Raft needs no port of its own.
package listener

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// Purpose is who a listener serves; errors name it.
type Purpose string

// The node's listeners.
const (
	Clients Purpose = "clients"
	Admin   Purpose = "admin"
	Nodes   Purpose = "other nodes"
)

// Listen listens on TCP address addr for p.
func Listen(p Purpose, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s on %s: %w", p, addr, err)
	}
	return ln, nil
}

// ListenTLS listens on TCP address addr for p and serves TLS with cfg on every connection
// it accepts. The handshake runs on the connection's first read or write, in the
// goroutine of whoever reads it (a Mux's router, a server's connection), so that a slow
// or silent client delays no other. Wrap the internode listener this way before the Mux:
// the Raft connections then run inside TLS too.
func ListenTLS(p Purpose, addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := Listen(p, addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, cfg), nil
}

// TLSDialer returns a dial function (transport.ClientConfig.Dial's shape) that connects
// over TCP and completes a TLS handshake with cfg before it returns, so that a refused
// certificate fails the dial.
func TLSDialer(cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return (&tls.Dialer{Config: cfg}).DialContext
}
