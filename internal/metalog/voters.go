package metalog

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// voterAction is what the leader does next to bring Raft's configuration to the voters
// the state calls for (meta.ChooseVoters), one step at a time (meta.VoterSteps).
type voterAction struct {
	kind voterKind
	id   ring.NodeID   // add, remove
	addr string        // add: the member's internode address
	set  []ring.NodeID // record: the configuration to record with SetVoters
}

type voterKind int

func (k voterKind) String() string {
	return [...]string{"none", "record", "add", "remove", "transfer"}[k]
}

const (
	voterNone     voterKind = iota // the configuration is what the state calls for, and recorded
	voterRecord                    // propose SetVoters{set}: the state does not record the configuration yet
	voterAdd                       // add id as a Raft voter
	voterRemove                    // remove id from Raft's configuration
	voterTransfer                  // the leader itself is to be removed: hand leadership over first
)

// nextVoterAction decides the leader's next step from the state st, the voters of Raft's
// configuration (config) and the leader's own ID. Recording comes first, so that the log
// says which voters it has before it changes them again; a record the state machine would
// refuse (the configuration differs from the record by more than one step, or holds a
// member that is not normal) is skipped. It is pure: every leader in every test decides
// the same from the same inputs.
func nextVoterAction(st *meta.State, config []ring.NodeID, self ring.NodeID) voterAction {
	if st.Epoch == 0 || len(config) == 0 {
		return voterAction{} // nothing to decide before the bootstrap entry
	}
	config = slices.Sorted(slices.Values(config))
	if !slices.Equal(st.Voters, config) && st.Clone().Apply(meta.SetVoters{Voters: config}) == nil {
		return voterAction{kind: voterRecord, set: config}
	}
	target := meta.ChooseVoters(st)
	if len(target) == 0 {
		return voterAction{}
	}
	steps := meta.VoterSteps(config, target)
	if len(steps) == 0 {
		return voterAction{}
	}
	// VoterSteps alternates additions and removals from the set it starts at. Asked again
	// after each step, it would put every addition first (from five voters to five others,
	// up to ten at once, more than SetVoters records); taking a removal first whenever the
	// configuration is larger than the target keeps the sequence it would have given: at
	// most one voter more than the larger of the two sets.
	s := steps[0]
	if i := slices.IndexFunc(steps, func(s meta.VoterStep) bool { return !s.Add }); i > 0 && len(config) > len(target) {
		s = steps[i]
	}
	switch {
	case !s.Add && s.ID == self:
		return voterAction{kind: voterTransfer, id: s.ID}
	case !s.Add:
		return voterAction{kind: voterRemove, id: s.ID}
	}
	m, _ := st.Member(s.ID) // ChooseVoters picks members
	return voterAction{kind: voterAdd, id: s.ID, addr: m.Addr}
}

// maxVoterActions bounds one round of voter changes: from any set to any other is at most
// MaxVoters additions and MaxVoters+1 removals, each recorded.
const maxVoterActions = 4*meta.MaxVoters + 4

// voterLoop brings the voters to what the state calls for whenever this node is the
// leader: when it becomes leader, after each newer state, and every VoterInterval.
func (l *Log) voterLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.VoterInterval)
	defer t.Stop()
	leader := l.raft.LeaderCh()
	var synced uint64 // the term whose barrier was applied
	for {
		select {
		case <-l.closing:
			return
		case <-t.C:
		case <-l.kick:
		case <-leader:
		}
		if l.raft.State() != raft.Leader {
			continue
		}
		// A new leader's state machine must have applied every entry of earlier terms
		// before its state decides anything. A barrier is an entry of the log, so it is
		// issued once per term, not per check.
		if term := l.raft.CurrentTerm(); term != synced {
			if err := l.wait(l.ctx, l.raft.Barrier(0)); err != nil {
				continue
			}
			synced = term
		}
		l.reconcileVoters(l.ctx)
	}
}

// reconcileVoters carries out nextVoterAction until there is none, an action fails (it
// is tried again later) or leadership moves.
func (l *Log) reconcileVoters(ctx context.Context) {
	for range maxVoterActions {
		cfg, ok := l.configuration()
		if !ok || l.raft.State() != raft.Leader {
			return
		}
		ids := make([]ring.NodeID, len(cfg))
		for i, p := range cfg {
			ids[i] = p.ID
		}
		st, _ := l.fsm.current()
		a := nextVoterAction(st, ids, l.cfg.ID)
		if a.kind == voterNone || !l.doVoterAction(ctx, a) {
			return
		}
	}
}

// doVoterAction carries out a and reports whether it succeeded and there may be more.
func (l *Log) doVoterAction(ctx context.Context, a voterAction) bool {
	// A step waits for a commit, or for a new voter to answer, which a CallTimeout bounds;
	// a few of them is plenty.
	opCtx, cancel := context.WithTimeout(ctx, 5*l.cfg.CallTimeout)
	defer cancel()
	var err error
	switch a.kind {
	case voterRecord:
		_, err = l.Propose(opCtx, meta.SetVoters{Voters: a.set})
	case voterTransfer:
		l.log.Info("metalog: handing leadership over before leaving the voters")
		err = l.wait(opCtx, l.raft.LeadershipTransfer())
		if err == nil {
			return false // the new leader goes on
		}
	case voterAdd:
		// Only a node that answers: adding a dead one would make every commit wait for it.
		if _, err = l.call(opCtx, a.addr, &wire.MetaRequest{Op: wire.MetaFetch, SinceEpoch: l.position().Epoch,
			SinceIndex: l.position().Index}); err == nil {
			l.log.Info("metalog: adding a voter", "voter", a.id, "addr", a.addr)
			err = l.wait(opCtx, l.raft.AddVoter(raft.ServerID(a.id), raft.ServerAddress(a.addr), 0, 0))
		}
	case voterRemove:
		l.log.Info("metalog: removing a voter", "voter", a.id)
		err = l.wait(opCtx, l.raft.RemoveServer(raft.ServerID(a.id), 0, 0))
	}
	if err != nil {
		if l.ctx.Err() == nil {
			l.log.Warn("metalog: a voter change failed; it is tried again later", "action", a.kind, "voter", a.id, "err", err)
		}
		return false
	}
	return true
}
