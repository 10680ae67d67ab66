// Package listener opens a node's TCP listeners, for clients (RESP), for the admin HTTP
// endpoints and for other nodes (the internode transport), in one place, so that what
// every listener must do is done once: today the address and a clear error, later TLS.
// Gossip binds its own sockets through memberlist. A Mux splits the internode listener
// between the transport and the metadata log's Raft transport by each connection's first
// byte, so that Raft needs no port of its own.
package listener

import (
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
