// Package machine is one node's cluster behaviour as a deterministic state machine: it
// turns client requests, replica answers, timers and membership changes into what the
// node must do (messages to replicas, hints to keep, replies to clients, what to
// announce), in the spirit of etcd raft's RawNode.
//
// A Node holds what outlives one request: the membership view, the placement (where keys
// live at an epoch of the cluster metadata, SetPlacement; the gossip ring's until one is
// given) and the replica sets of every range, this coordinator's routing inputs (package
// route: recent writes, the replicas' read latencies, the read fallback's percentile and
// retry budget, the pace of asynchronous writes), which hints to replay or discard, and
// when the node's load or its held hints are worth announcing. Each client request is an op (WriteOp, ReadOp)
// wrapping the per-request machine of package coord: the op decides its timers (the
// deadline, the write and read fallbacks) and whether a late read may ask a spare, and
// does the bookkeeping of every message it emits and every answer it takes.
//
// While a range moves between replica sets, a write goes to both and is acknowledged
// once its level is met in each set separately (coord.StartWriteGroups: a replica in
// both counts in both, each set is planned by the policy on its own, a down replica of
// either gets a hint); reads, scans and leaders use the current set only. The node
// reports the placement's epoch (Epoch) for the driver to put on internode requests.
//
// Nothing here reads the clock, starts a goroutine, opens a socket or uses global
// randomness: every input carries the time it happened at (now), and every output is a
// value (Ready) that the driver carries out. Node is safe for concurrent use, because a
// real node's requests run on many goroutines; an op is driven by one goroutine at a
// time.
//
// # Drivers
//
// The real driver (package node) runs one goroutine per client request: it starts an op,
// sends Ready's messages over the internode transport (or to the local replica), feeds
// each answer back with the time it came off the wire (WriteOp.Answer, ReadOp.Answer),
// and arms one timer at the op's Next deadline, calling Timer when it fires, until the op
// has replied (and, for writes, until every replica has answered or timed out).
//
// A simulator runs many Nodes in one goroutine in virtual time. It keeps a queue of
// events ordered by virtual time: client requests it injects, messages in flight (a
// message sent at t arrives at t plus the modelled link latency, and the answer of the
// replica's engine model comes back the same way), and every op's Next deadline. It pops
// the earliest event, advances the virtual clock to it, hands it to the Node or op it is
// for, and queues what Ready says to send. Membership changes are SetView (and
// SetPlacement) calls at chosen times. One seed fixes every latency and fault the models draw, so a run repeats
// exactly, and checkers read the history of replies afterwards.
package machine
