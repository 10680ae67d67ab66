// Package route holds what one coordinator learns from its own traffic to decide where and
// when its requests go: which replicas lag behind a recent write or a held hint, how fast
// each replica has been answering reads, how long a read waits before a spare replica is
// asked (a percentile of recent reads) and how many such retries it may make (a budget),
// and how fast asynchronous writes may go to each replica (a pace per replica, slowed when
// the replica or its host is congested).
//
// It is pure: every method takes the time it happens at (now) from its caller, nothing
// reads the wall clock, starts a goroutine or touches the network, so that the node's
// state machine (package machine) runs the same way in a real node and in a simulator in
// virtual time. The types are safe for concurrent use, because a real node's requests
// run on many goroutines; they synchronize with atomics and short critical sections.
package route
