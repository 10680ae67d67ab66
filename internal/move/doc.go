// Package move plans the movement of data between nodes: which token ranges each node
// must receive, from whom, and which tokens joining nodes take. Its planners are
// functions of rings and return plans; nothing here sends a byte, reads a clock or uses
// global randomness (a *rand.Rand is passed in), so that the real node's streaming and
// a simulator's flow model carry out the same plans.
//
// # Membership changes
//
// Plan takes a Change: the current ring, the target ring (any number of joins, leaves,
// removals of dead nodes, replacements and token moves at once), the placement strategy
// and replication factor the nodes use, the bytes of each range (Sizes) and which nodes
// are down. It cuts the ring wherever either ring has a token, so that every piece has
// one replica set before and one after, and plans a copy to each node of the new set
// that is not in the old one. Bytes moved are therefore Σ over ranges of
// |new \ old| × range bytes: no node receives a range it already holds, and a node that
// joins the set must receive all of it, so no plan moves less. Several joins planned
// together move no more than the same joins planned one after another, and less than
// joins each planned against the old ring (seed 004's over-fetch).
//
// A copy's candidate sources are the live replicas of the old set; a range with none
// is reported as a Shortfall (its data is at risk), never given an invented source. The
// preferred source is the old replica whose place the destination takes, which leaves
// the range (Transfer.Leaving): its copy keeps every write on as many replicas as
// before. Sources are then balanced against MinMaxLoad's bound: the least, over every
// choice of live sources, of the largest per-node load, computed by max-flow apart from
// the plan. The planner pushes load off nodes above the bound along augmenting paths,
// splitting a copy among sources when that is what the bound needs, so its largest load
// equals the bound (with Change.Strict the leaving replica always sends its copies, and
// the plan may be slower). A node's load is what it sends or receives under separate
// limits, or both together under a shared one (Change.SharedLimit); the bound divided by
// the per-node rate bounds the movement's duration from below.
//
// The new replica sets of ranges that a departing node held come from the target ring's
// placement (RingSuccessors), or from a Rehome: a re-replication Schedule's (below).
//
// JoinTokens chooses several joiners' tokens together (ring.BalancedJoinTokens), Tokens
// one joiner's.
//
// # Re-replication
//
// After a node is lost, every range it held needs a new replica. RecoveryFromChange (or
// NewRecovery, for a problem that does not come from a ring) states the problem: the copies
// to make, each with its live sources and the destinations the placement rules and free
// space allow, on a Fabric of disks, NICs and rack uplinks. BoundRecovery computes how fast
// any schedule could possibly restore the replicas (the fluid relaxation, by max-flow and
// bisection on time), apart from any schedule. A Scheduler assigns every copy a source and
// a destination and says in what order and how many at once they run: Kura, kura's, which
// balances the seconds every disk, NIC and rack link is busy; HDFSDefault and RingScheme,
// seed 002's baselines. A Schedule's Rehome hands its destinations to Plan; internal/movesim
// runs a schedule in a flow model. docs/design/rereplication.md explains the choices.
//
// # Refills
//
// Refill plans a refill: an in-memory node that restarted, or a replica rebuilt with
// kura admin rebuild, pulls every range it replicates from each of the range's other
// replicas.
//
// docs/design/movement.md explains the choices and what is left to the streaming and
// cluster-metadata parts of the elasticity issue.
package move
