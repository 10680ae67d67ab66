package metalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// Pauses between a proposal's rounds of asking for a leader: the first, doubled up to the
// last.
const (
	firstRetry = 20 * time.Millisecond
	maxRetry   = 500 * time.Millisecond
)

// Bootstrap starts a new cluster's metadata log on this node, the first voter: it seeds
// Raft's configuration with this node alone and proposes b, whose members must include
// this node (its Addr, if empty, is set to Config.Addr). It returns the first state. A
// node that already knows a cluster refuses with meta.ErrBootstrapped. Calling it again
// after a failure (its context ended) proposes b again, which the log refuses if the
// first proposal did commit.
func (l *Log) Bootstrap(ctx context.Context, b meta.Bootstrap) (*meta.State, error) {
	if l.closed() {
		return nil, ErrClosed
	}
	if ep := l.Epoch(); ep > 0 {
		return nil, fmt.Errorf("%w: this node knows the cluster at epoch %d", meta.ErrBootstrapped, ep)
	}
	i := slices.IndexFunc(b.Members, func(m meta.Member) bool { return m.ID == l.cfg.ID })
	if i < 0 {
		return nil, fmt.Errorf("%w: the bootstrapping node %s is not one of the first members", meta.ErrInvalid, l.cfg.ID)
	}
	b.Members = slices.Clone(b.Members)
	switch addr := b.Members[i].Addr; {
	case addr == "":
		b.Members[i].Addr = l.cfg.Addr
	case addr != l.cfg.Addr:
		return nil, fmt.Errorf("%w: the bootstrapping node's address is %s, not %s", meta.ErrInvalid, l.cfg.Addr, addr)
	}
	err := l.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: raft.ServerID(l.cfg.ID), Address: raft.ServerAddress(l.cfg.Addr)}}}).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return nil, fmt.Errorf("metalog: bootstrap raft: %w", err)
	}
	// ErrCantBootstrap: Raft has a configuration already, from an earlier Bootstrap whose
	// entry did not commit in time (or from another log): the entry decides.
	return l.Propose(ctx, b)
}

// Propose appends e to the metadata log and returns the state it led to, once committed
// and applied. On the leader it goes to Raft; elsewhere it is sent to the leader (found
// through Raft, through the voters the state records, and through their answers) and the
// answer's state is installed here if newer. It retries until ctx ends.
//
// Errors: the state machine's refusal (errors.Is meta.ErrStaleEpoch and the others), the
// same whether the leader is this node or another; ErrUnavailable when no leader could be
// reached, nothing appended, its text "metadata unavailable: N of M voters reachable";
// ErrTimeout when a leader took e but did not commit it before ctx ended (it may still
// apply); ErrClosed. A node that knows no voter (it never pulled, and is not one) has
// nobody to ask: ErrUnavailable, "0 of 0"; it pulls from a seed first.
//
// A proposal whose answer is lost may be appended twice if it is retried; meta's entries
// are built so that a repeat is refused or changes nothing (a StartChange names its
// epoch and ID, a Register the same member).
func (l *Log) Propose(ctx context.Context, e meta.Entry) (*meta.State, error) {
	data := meta.Encode(e)
	reached := map[ring.NodeID]bool{}
	pause := firstRetry
	for {
		if l.closed() {
			return nil, ErrClosed
		}
		if l.raft.State() == raft.Leader {
			if res, ok := l.applyLocal(ctx, data); ok {
				return res.state, res.err
			}
		}
		if ctx.Err() == nil {
			if st, err, ok := l.forward(ctx, data, reached); ok {
				return st, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, l.unavailable(reached)
		case <-l.closing:
			return nil, ErrClosed
		case <-time.After(pause):
		}
		pause = min(2*pause, maxRetry)
	}
}

// applyLocal appends data through this node's Raft, if it is the leader. It reports
// false when nothing was appended because this node is not the leader (or ctx ended
// before it could tell), so the proposer looks elsewhere. Leadership is verified with a
// quorum first, so that a leader cut off from the others does not append an entry it
// cannot commit (which would make the outcome ambiguous, not unavailable).
func (l *Log) applyLocal(ctx context.Context, data []byte) (applied, bool) {
	if err := l.wait(ctx, l.raft.VerifyLeader()); err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, raft.ErrRaftShutdown) {
			return applied{err: ErrClosed}, true
		}
		return applied{}, false
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	f := l.raft.Apply(data, timeout)
	err := l.wait(ctx, f)
	switch {
	case err == nil:
		return f.Response().(applied), true
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
		return applied{}, false // never appended
	case errors.Is(err, raft.ErrLeadershipLost):
		return applied{err: fmt.Errorf("%w: leadership was lost before it committed", ErrTimeout)}, true
	case errors.Is(err, ErrClosed), errors.Is(err, raft.ErrRaftShutdown):
		return applied{err: ErrClosed}, true
	case ctx.Err() != nil:
		return applied{err: fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())}, true
	}
	return applied{err: fmt.Errorf("metalog: %w", err)}, true
}

// wait waits for f, for ctx or for Close, whichever comes first.
func (l *Log) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // Raft answers every future, at the latest on shutdown
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.closing:
		return ErrClosed
	}
}

// forward sends the proposal to the nodes that may be the leader, the likeliest first,
// until one applies it or refuses it. It reports false when none did (nothing was
// appended), after recording in reached the voters that answered.
func (l *Log) forward(ctx context.Context, data []byte, reached map[ring.NodeID]bool) (*meta.State, error, bool) {
	targets := l.leaderCandidates()
	req := &wire.MetaRequest{Op: wire.MetaPropose, Entry: data}
	for i := 0; i < len(targets); i++ {
		t := targets[i]
		resp, err := l.call(ctx, t.Addr, req)
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, transport.ErrUnreachable) {
				// The request may have reached a leader that is still applying it.
				return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err()), true
			}
			continue
		}
		reached[t.ID] = true
		if resp.Err == nil {
			st, err := meta.DecodeState(resp.State)
			if err != nil {
				return nil, fmt.Errorf("metalog: the leader's answer: %w", err), true
			}
			l.install(st.Clone(), resp.Index)
			return st, nil, true
		}
		rerr := fromWire(resp.Err)
		switch {
		case errors.Is(rerr, errNotLeader), errors.Is(rerr, ErrClosed):
			if hint := (peer{ID: ring.NodeID(resp.LeaderID), Addr: resp.LeaderAddr}); hint.Addr != "" &&
				hint.ID != l.cfg.ID && !slices.Contains(targets[i+1:], hint) {
				targets = slices.Insert(targets, i+1, hint)
			}
			continue
		}
		return nil, rerr, true
	}
	return nil, nil, false
}

// leaderCandidates lists the nodes a proposal may be sent to, likeliest leader first:
// the leader as Raft or the last answer names it, then the voters of Raft's
// configuration, then those the state records. This node is left out.
func (l *Log) leaderCandidates() []peer {
	var out []peer
	add := func(p peer) {
		if p.Addr != "" && p.ID != l.cfg.ID && p.Addr != l.cfg.Addr && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	id, addr := l.Leader()
	add(peer{ID: id, Addr: addr})
	cfg, _ := l.configuration()
	for _, p := range cfg {
		add(p)
	}
	for _, p := range l.recordedVoters() {
		add(p)
	}
	return out
}

// recordedVoters returns the voters the newest state records, with their addresses.
func (l *Log) recordedVoters() []peer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []peer
	for _, id := range l.cur.Voters {
		if m, ok := l.cur.Member(id); ok {
			out = append(out, peer{ID: id, Addr: m.Addr})
		}
	}
	return out
}

// unavailable is a proposal's error when no leader answered: how many voters did (this
// node among them if it is one) of how many there are, by Raft's configuration if this
// node has one, else by the state's record.
func (l *Log) unavailable(reached map[ring.NodeID]bool) error {
	var voters []ring.NodeID
	cfg, _ := l.configuration()
	for _, p := range cfg {
		voters = append(voters, p.ID)
	}
	if len(voters) == 0 {
		voters = l.Voters()
	}
	n := 0
	for _, id := range voters {
		if reached[id] || id == l.cfg.ID {
			n++
		}
	}
	return fmt.Errorf("%w: %d of %d voters reachable", ErrUnavailable, n, len(voters))
}
