// Package move plans the movement of data between nodes: which token ranges a node must
// pull and from whom, and which tokens a joining node takes. Its planners are functions
// of the ring and return plans; nothing here sends a byte, reads a clock or uses global
// randomness (a *rand.Rand is passed in), so that the real node's streaming and a
// simulator's flow model carry out the same plans.
//
// Today it holds the refill plan (an in-memory node that restarted, or a replica rebuilt
// with kura admin rebuild, pulls every range it replicates from the range's other
// replicas) and the choice of a new node's tokens. Movement on join, leave and
// re-replication extends it.
package move
