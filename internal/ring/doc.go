// Package ring decides where keys live: a key's token (computed as Cassandra's
// Murmur3Partitioner does, so kura and Cassandra agree), the ring of vnode tokens that
// splits the token space among nodes, each node's share of it, and the replica
// placement strategies (simple, host-aware, rack-aware) that pick a key's replica set.
//
// The package is pure: no clock, no goroutines, no sockets, no global randomness (random
// token allocation takes a *rand.Rand). Every node, and the simulator, computes the same
// answers from the same ring.
//
// Still to come with the cluster issue: the balanced vnode allocator and engine-diverse
// placement.
package ring
