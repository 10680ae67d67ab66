// Package acl decides who may do what: users, their passwords and their Redis ACL rules.
//
// A User is built by Redis's ordered rules (on, off, >pw, #hash, nopass, ~pattern,
// %R~pattern, +get, -@admin...; see docs/design/acl.md for what is supported and what
// differs) against a Catalog, the commands and categories the front end (package resp)
// describes. The Registry holds the current user set as an immutable Snapshot behind an
// atomic pointer: connections read it without locks, changes are serialized and each
// publishes a new Snapshot to its subscribers (the front end closes the connections of
// deleted or disabled users).
//
// Changes are values (Change) so that a cluster can replicate them: Registry.Prepare turns
// cleartext passwords into argon2id hashes once, where the command arrived, and
// Registry.Apply then gives the same result on every node. Snapshot.Encode and
// Registry.Restore carry a whole set (for a snapshot of a replicated log).
//
// Authentication (Registry.Authenticate) checks salted argon2id hashes (Hash, Verify),
// keeps a credential cache so that a client reconnecting with the same password does not
// pay the slow hash again, and refuses addresses that fail too often (Limiter). Denials
// go to ACL LOG (Log). The ACL file is Redis's format (FormatFile, Registry.PrepareFile).
//
// The package is pure: it reads no clock (callers pass the time), draws randomness only
// from the io.Reader it is given, and does no I/O; the front end and the node do the rest.
package acl
