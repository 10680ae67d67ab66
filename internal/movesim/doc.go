// Package movesim runs a re-replication schedule in a flow model and reports how long it
// takes: the driver between internal/move's schedulers and internal/flowsim's
// max-min-fair sharing of links.
//
// Every node has four links (disk read, disk write, NIC send, NIC receive) at its
// Hardware's rates, and every rack with a limited uplink two (up, down). A copy is a flow of
// its range's bytes over the source's disk read and NIC send, the source rack's uplink and
// the destination rack's downlink when the racks differ (and are limited), and the
// destination's NIC receive and disk write. Run starts copies as the schedule says an
// executor does (move.Schedule): at time 0 and whenever copies complete, every copy not yet
// started, in the schedule's order, whose source, destination and racks are below their
// stream limits. It returns when the last copy completes: the recovery's time, per-node
// bytes, each copy's start and end, and the ratio of the physical bound
// (move.BoundRecovery, computed apart from any schedule) to the time.
//
// The package is pure (internal/lint checks it): no clock, no goroutines, no randomness
// beyond what a scheduler was built with.
package movesim
