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
// Scenarios (RunScenario) are what `kura sim move` runs: a ring of identical nodes built
// by the balanced allocator, one event (a loss or removal re-replicated by a scheduler, or
// a join planned by move.Plan, whose transfers RunTransfers runs through the same
// driver), the bound and the ratio, per-node bytes and the phases' wall-clock times from
// a clock the caller injects. seed002.go holds seed 002's platforms and tables, which
// TestSeed002 and `kura sim seed002` share.
//
// The package is pure (internal/lint checks it): no clock, no goroutines, no randomness
// beyond what a scheduler was built with.
package movesim
