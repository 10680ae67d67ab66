// Package ring places keys on kura's token ring: it computes a key's token the way
// Cassandra's Murmur3Partitioner does, so that kura and Cassandra agree on where a key
// lives.
//
// The package is pure: no clock, no goroutines, no sockets, no global randomness. The
// cluster's nodes, their vnode tokens and the replica placement built on them (issue 4)
// belong here too, decided by plain functions that the node and the simulator share.
package ring
