// Package flowsim simulates data flows over shared links in virtual time, sharing every
// link's capacity max-min fairly among the flows that cross it.
//
// It is the flow model under `kura sim move`: a node's disk (read and write) and NIC (send
// and receive), and a rack's uplink and downlink, are links with a capacity in bytes per
// second; a range copy is a flow of some bytes over a route such as source disk read, source
// NIC send, source rack uplink, destination rack downlink, destination NIC receive,
// destination disk write. The package knows nothing of nodes or ranges: a driver (a
// re-replication scheduler with per-node stream limits, say) builds the links and routes.
//
// # Driving it
//
// The simulator holds the clock. A driver starts flows at the current time with Start, then
// calls Next (or Step, to stop at a time of its own, such as a flow's planned start) to
// advance to the next instant at which flows complete; Next returns them, and the driver may
// start more at that instant. Run drains. Rates are recomputed lazily, once per instant,
// when the driver next advances or asks for a rate. Flows whose completion times agree
// within a relative 1e-9 complete together, and every Next that returns flows completes at
// least one, so no driver loop can spin on zero-length steps. The results: Now (the time of
// the last completion once all are done), Times (each flow's start and end), LinkBytes,
// LinkRate and, when Config.Timeline is set, each link's rate over time (Timeline,
// WriteTimelineCSV). Nothing reads the wall clock or draws random numbers: the same calls give
// the same schedule.
//
// # What it matches of SimGrid
//
// SimGrid's flow-level network models (CM02, and LV08, which is CM02 with corrective factors)
// hand each communication's rate to the LMM solver (src/kernel/lmm/maxmin.cpp,
// MaxMin::maxmin_solve; read at SimGrid's master and at v3.32): every link is a constraint
// whose bound is its bandwidth, every communication a variable with weight 1 on each link of
// its route, and the solver fills progressively: it finds the constraints with the smallest
// remaining/usage, sets all their unset variables to that value divided by their sharing
// penalty, takes those values off every other constraint they use, and repeats until no
// constraint has unset variables. flowsim computes the same allocation, with every penalty 1,
// by the same progressive filling (solve.go; a heap instead of SimGrid's scan of every
// constraint per round, and ties saturated one link after another at the same level, which
// gives the same rates). That is what SimGrid computes under
// --cfg=network/model:CM02 (latency and bandwidth factors 1, weight-S 0) with link latencies
// 0 and --cfg=network/crosstraffic:0, which is how scripts/simgrid/flows.py runs it;
// TestAgreesWithSimGrid compares completion times with SimGrid 3.32 on small topologies.
//
// Left out, on purpose:
//   - Latency. In network_cm02.cpp a communication first waits out its route's latency
//     (times the latency factor) and then shares with a penalty equal to that latency, so
//     that flows with longer round trips get less (TCP's RTT unfairness); and with
//     network/TCP-gamma its rate is capped at gamma / (2 * latency). With latency 0 the
//     penalty is the default 1 and the cap is not applied. A range copy lasts seconds to
//     minutes while data-centre latencies are under a millisecond, so flowsim ignores latency:
//     no start delay, no penalty, no cap.
//   - SimGrid's per-flow bound at the route's smallest bandwidth (comm_action_set_bounds):
//     it can never bind under max-min sharing, which never gives a flow more than its
//     slowest link.
//   - Cross-traffic (on by default in 3.32): each flow also loads its reverse route with 5%
//     of its rate, for the acknowledgements. flowsim models one direction.
//   - FATPIPE, WIFI and NONLINEAR links, and links whose bandwidth changes over time.
//   - SimGrid's tolerances: in 3.32 it compares remaining capacity with a relative 1e-5
//     (maxmin/precision) and times with an absolute 1e-9 s (surf/precision); flowsim's are
//     relative and tighter (tightTolerance, rateTolerance, completionTolerance). On the
//     cross-check's cases the two agree to about 1e-16.
//
// # Speed
//
// SimGrid's lazy update re-solves the connected component of whatever changed. In a cluster
// every flow crosses a rack uplink, so that component is every active flow; flowsim instead
// re-solves only the flows reachable through saturated links, checks the result, and widens
// when the check fails (solve.go says why this is exact). BenchmarkLargeLoss and
// BenchmarkLargeJoin time a 1,000-node cluster's node loss and 10-node join.
package flowsim
