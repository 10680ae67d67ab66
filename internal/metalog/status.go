package metalog

import (
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/ring"
)

// Status is what a node knows of the metadata log, for `kura admin status`.
type Status struct {
	ID ring.NodeID
	// Epoch and Index are the newest state's position: its epoch and the log index of the
	// last entry in it.
	Epoch, Index uint64
	// Voters are the voters the newest state records.
	Voters []ring.NodeID
	// Configuration is the Raft configuration's voters as this node knows it: empty on a
	// node that was never in it.
	Configuration []ring.NodeID
	// Voter says this node is a voter in its Raft configuration.
	Voter bool
	// RaftState is Raft's state on this node: Leader, Follower, Candidate or Shutdown (a
	// node outside the configuration is an idle Follower).
	RaftState string
	// Leader and LeaderAddr are the leader as this node knows it (Leader), empty if none.
	Leader     ring.NodeID
	LeaderAddr string
	// Quorum says this node sees a leader with a quorum behind it: it is the leader (which
	// steps down after LeaderLeaseTimeout without a quorum), or a voter that heard from
	// the leader within HeartbeatTimeout. False on a node outside the configuration: see
	// LastPull.
	Quorum bool
	// AppliedIndex is the last log index Raft applied on this node.
	AppliedIndex uint64
	// LastPull is when a pull last got an answer; zero if never.
	LastPull time.Time
}

// Status reports what this node knows of the log.
func (l *Log) Status() Status {
	l.mu.RLock()
	s := Status{ID: l.cfg.ID, Epoch: l.pos.Epoch, Index: l.pos.Index, Voters: slices.Clone(l.cur.Voters), LastPull: l.lastPull}
	l.mu.RUnlock()
	s.Leader, s.LeaderAddr = l.Leader()
	s.RaftState = l.raft.State().String()
	s.AppliedIndex = l.raft.AppliedIndex()
	if cfg, ok := l.configuration(); ok {
		for _, srv := range cfg {
			s.Configuration = append(s.Configuration, srv.ID)
			s.Voter = s.Voter || srv.ID == l.cfg.ID
		}
	}
	switch l.raft.State() {
	case raft.Leader:
		s.Quorum = true
	case raft.Follower:
		_, id := l.raft.LeaderWithID()
		s.Quorum = s.Voter && id != "" && time.Since(l.raft.LastContact()) < l.cfg.HeartbeatTimeout
	}
	return s
}

// configuration returns the voters of this node's latest Raft configuration, sorted by
// ID, and whether Raft answered (it does not once shut down).
func (l *Log) configuration() ([]peer, bool) {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return nil, false
	}
	var out []peer
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			out = append(out, peer{ID: ring.NodeID(srv.ID), Addr: string(srv.Address)})
		}
	}
	slices.SortFunc(out, func(a, b peer) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out, true
}

// isVoter reports whether this node is a voter of its latest Raft configuration.
func (l *Log) isVoter() bool {
	cfg, _ := l.configuration()
	return slices.ContainsFunc(cfg, func(p peer) bool { return p.ID == l.cfg.ID })
}
