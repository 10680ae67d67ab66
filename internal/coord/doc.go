// Package coord is the request coordinator's deterministic core: for one client read or
// write it decides which replicas to ask, when the request has succeeded or failed at its
// consistency level, which replicas get hints, and how stale replicas are repaired.
//
// It is pure, like etcd's raft.RawNode: a request is a state machine that takes inputs
// (the replica set with its liveness, replica responses, the deadline passing) and
// returns effects (send a write or a read to a replica, store a hint, reply to the
// client). It never reads the clock, starts goroutines or touches the network. The node's
// machine (package machine) wraps each request with its timers and the node-wide routing
// inputs; the node (the driver) carries the effects out and feeds responses back, and a
// simulator does the same in virtual time.
//
// Which replicas to ask and whose answers count is a Policy. Uniform is Cassandra's
// behaviour: writes go to every live replica and any W acknowledgements complete them;
// reads ask one replica for data and R-1 for digests. EngineAware is the heterogeneous
// cluster's (seed 000, 3.2-3.3): writes count the write-optimized and in-memory replicas
// and send to the read-optimized one asynchronously; reads ask the read-optimized and
// in-memory replicas and fall back to the write-optimized one when they fail or disagree.
//
// A write to a range that is moving between replica sets goes to both (StartWriteGroups):
// each group must meet the consistency level among its own replicas, a replica in both
// counting in both, and each group is planned by the policy on its own; reads use one
// set, the current one.
//
// Errors a client must tell apart: ErrUnavailable (too few live replicas: nothing was
// sent, nothing written), ErrTimeout (too few answers in time: a write may have been
// applied), ErrOverloaded (the coordinator refused the request; the driver decides).
package coord
