// Package metalog runs the cluster-metadata log on hashicorp/raft: it orders package meta's
// entries, applies them to a meta.State on every voter, keeps every node's newest state on
// its disk, and lets nodes outside the Raft group learn it. It is a driver: the decisions
// (whether an entry is valid, what it does, which nodes should vote and in which steps)
// are package meta's, and nextVoterAction, the one decision made here, is a pure function.
// docs/design/membership.md, section 1, is the design.
//
// # Voters and the others
//
// Every node opens a Log, which runs a Raft instance, but only the voters (at most
// meta.MaxVoters, chosen by meta.ChooseVoters) are in Raft's configuration. A node outside
// it has no configuration and Raft never lets it campaign; it stays idle until a leader
// adds it. The first node of a new cluster calls Bootstrap, which makes it the only voter
// and appends the Bootstrap entry. The leader then brings the configuration to the chosen
// voters one meta.VoterSteps step at a time (Raft AddVoter or RemoveServer, an addition
// before each removal, only for members that answer a request), recording each step
// with a SetVoters entry, after each newer state, when it becomes leader and every
// VoterInterval. A leader that is to leave the voters hands leadership over first (Raft's
// LeadershipTransfer) and the new leader removes it. A removed voter keeps running
// (ShutdownOnRemove is off) as a non-voter.
//
// # Learning the state
//
// States are ordered by their position: the epoch, then the Raft log index of the last
// entry the state machine accepted (Register and SetVoters change the state but not the
// epoch; every node applies the same log, so an index names the same state everywhere).
// A node keeps the newest state it learned, from Raft's state machine, from a pull or from
// a proposal's answer, and saves it in StateFile (meta.state, written atomically with its
// index) before handing it to Config.OnState, so a restarted node has its state as soon as
// Open returns. Raft's replay after a restart applies older states, which are not
// published again.
//
// Nodes outside the configuration learn by pulling whole states, not entries: Pull asks a
// node for its state if newer than a position, and the Log pulls from the voters every
// PullInterval and when poked (Poke). A state is small (members and their tokens), pulls
// are rare, and a whole state needs no log retained for laggards.
//
// # Proposals
//
// Propose appends an entry: through Raft on the leader (after verifying its leadership
// with a quorum, so that a leader cut off appends nothing); elsewhere it sends the entry
// to the leader (wire.MethodMeta) and installs the answer. A refusal is the state
// machine's error on every node (it travels as error codes, errorCodes). With no leader
// reachable a proposal fails with ErrUnavailable ("metadata unavailable: N of M voters
// reachable") and nothing is appended; a leader that took the entry but did not commit
// it in time gives ErrTimeout (it may still apply). Requests for data never wait on the
// log: every node goes on with its last state.
//
// # What it leaves to the node
//
// The node opens the internode listener, splits it with a listener.Mux (Config.Listener
// is the Mux's Raft side), routes wire.MethodMeta to Handle, and implements Config.Call
// with its transport pool. It decides when to Bootstrap and proposes its own Register,
// after pulling from a seed (a node that knows no voter has nobody to send a proposal
// to). It pulls from a node that gossip or a replica names as newer, or pokes the Log. It
// builds placements from the states OnState hands it. Recovering from the permanent loss
// of a majority of voters (`kura admin meta recover`) is not done here yet.
//
// # Files
//
// In the directory given to Open: raft.db (raft-boltdb: Raft's log and stable store),
// snapshots/ (Raft's snapshots, the last two kept; each an encoded state with its index)
// and meta.state.
package metalog
