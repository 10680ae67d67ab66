// Package ring decides where keys live: a key's token (computed as Cassandra's
// Murmur3Partitioner does, so kura and Cassandra agree), the ring of vnode tokens that
// splits the token space among nodes, each node's share of it, and the replica
// placement strategies (simple, host-aware, rack-aware, engine-diverse) that pick a key's
// replica set.
//
// Token allocation is random or balanced. The balanced allocator (BalancedTokens,
// BalancedJoinTokens, Allocator) places each token where it best evens out the nodes'
// replicated ownership, several joiners planned together; it scores candidates on a
// working copy of the ring (draft.go) that re-walks only the ranges a token changes, so
// that a 1,000-node ring of 256 tokens a node builds in seconds.
//
// The package is pure: no clock, no goroutines, no sockets, no global randomness (random
// token allocation takes a *rand.Rand). Every node, and the simulator, computes the same
// answers from the same ring.
package ring
