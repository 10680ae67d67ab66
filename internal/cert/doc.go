// Package cert is kura's X.509 identity: it issues a development certificate authority
// and the node and client certificates it signs, and serves the TLS configurations of a
// node's listeners and dialers from certificate files that it reloads when they change.
//
// Identity rules (docs/design/security.md): a node certificate has OU kura-node, CN the
// node's host label (--host) and both server and client authentication; a client
// certificate has OU kura-client and CN the user. The internode port takes only node
// certificates, and a node dialing a peer checks that the peer's certificate is a node's
// and, when its ring knows the peer's host, that it names that host. Every configuration
// allows TLS 1.2 and 1.3 only.
//
// Keys are ECDSA P-256, made with crypto/x509 alone: a development CA needs nothing
// more, and a production one may be brought from elsewhere as long as its certificates
// follow the rules above.
package cert
