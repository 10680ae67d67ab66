package metalog

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// Handle answers a wire.MethodMeta request from another node; the node's transport
// handler routes the method here. A fetch is answered with the newest state this node
// knows, if newer than the asker's; a proposal is applied if this node is the leader, and
// otherwise answered with an error naming the leader. A refusal travels in the answer, not
// as an error: the returned error is for a request that cannot be read.
func (l *Log) Handle(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := wire.DecodeMetaRequest(payload)
	if err != nil {
		return nil, err
	}
	var resp wire.MetaResponse
	switch req.Op {
	case wire.MetaFetch:
		resp = l.fetch(position{Epoch: req.SinceEpoch, Index: req.SinceIndex})
	case wire.MetaPropose:
		resp = l.proposed(ctx, req.Entry)
	}
	return wire.AppendMetaResponse(nil, &resp), nil
}

func (l *Log) fetch(since position) wire.MetaResponse {
	addr, id := l.raft.LeaderWithID()
	l.mu.RLock()
	defer l.mu.RUnlock()
	resp := wire.MetaResponse{Epoch: l.pos.Epoch, Index: l.pos.Index, LeaderID: string(id), LeaderAddr: string(addr)}
	if l.pos.after(since) {
		resp.State = l.enc
	}
	return resp
}

func (l *Log) proposed(ctx context.Context, data []byte) wire.MetaResponse {
	if _, err := meta.Decode(data); err != nil {
		return wire.MetaResponse{Err: wireError(err)}
	}
	if l.closed() {
		return wire.MetaResponse{Err: wireError(ErrClosed)}
	}
	if l.raft.State() == raft.Leader {
		if res, ok := l.applyLocal(ctx, data); ok {
			if res.err != nil {
				return wire.MetaResponse{Err: wireError(res.err)}
			}
			return wire.MetaResponse{State: meta.EncodeState(res.state), Epoch: res.state.Epoch, Index: res.index,
				LeaderID: string(l.cfg.ID), LeaderAddr: l.cfg.Addr}
		}
	}
	addr, id := l.raft.LeaderWithID()
	return wire.MetaResponse{Err: wireError(errNotLeader), LeaderID: string(id), LeaderAddr: string(addr)}
}

// call sends req to the node at addr, within CallTimeout, and remembers the leader its
// answer names.
func (l *Log) call(ctx context.Context, addr string, req *wire.MetaRequest) (wire.MetaResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.CallTimeout)
	defer cancel()
	b, err := l.cfg.Call(ctx, addr, wire.MethodMeta, wire.AppendMetaRequest(nil, req))
	if err != nil {
		return wire.MetaResponse{}, err
	}
	resp, err := wire.DecodeMetaResponse(b)
	if err != nil {
		return wire.MetaResponse{}, err
	}
	if resp.LeaderAddr != "" && ring.NodeID(resp.LeaderID) != l.cfg.ID {
		l.mu.Lock()
		l.hint = peer{ID: ring.NodeID(resp.LeaderID), Addr: resp.LeaderAddr}
		l.mu.Unlock()
	}
	return resp, nil
}

// Pull asks the node at addr for its state and installs it if it is newer than this
// node's (a larger epoch, or the same epoch further along the log). Gossip or a replica
// that names a newer epoch tells the node whom to ask; Poke asks the voters.
func (l *Log) Pull(ctx context.Context, addr string) error {
	if l.closed() {
		return ErrClosed
	}
	resp, err := l.call(ctx, addr, &wire.MetaRequest{Op: wire.MetaFetch, SinceEpoch: l.position().Epoch, SinceIndex: l.position().Index})
	if err != nil {
		return fmt.Errorf("metalog: pull from %s: %w", addr, err)
	}
	l.mu.Lock()
	l.lastPull = time.Now()
	l.mu.Unlock()
	if resp.State == nil {
		return nil
	}
	st, err := meta.DecodeState(resp.State)
	if err != nil {
		return fmt.Errorf("metalog: pull from %s: %w", addr, err)
	}
	if st.Epoch != resp.Epoch {
		return fmt.Errorf("metalog: pull from %s: a state of epoch %d sent as epoch %d", addr, st.Epoch, resp.Epoch)
	}
	l.install(st, resp.Index)
	return nil
}

// Poke asks the Log to pull from the voters now, because something (gossip, a replica's
// answer) says a newer epoch exists. It does not block.
func (l *Log) Poke() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// pullLoop pulls every PullInterval unless this node is a voter that sees a leader (it
// learns through Raft), and whenever poked. A voter without a leader pulls too: it may be
// a removed voter that missed its removal, or one cut off from the leader but not from
// every node, and its State should not lag for that.
func (l *Log) pullLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.PullInterval)
	defer t.Stop()
	next := 0 // rotates the first voter asked
	for {
		select {
		case <-l.closing:
			return
		case <-t.C:
			if _, leader := l.raft.LeaderWithID(); leader != "" && l.isVoter() {
				continue // Raft brings this node the entries
			}
		case <-l.poke:
		}
		targets := l.leaderCandidates()
		for i := range targets {
			p := targets[(next+i)%len(targets)]
			if err := l.Pull(l.ctx, p.Addr); err == nil {
				break
			} else {
				l.log.Debug("metalog: pull failed", "from", p.ID, "err", err)
			}
		}
		next++
	}
}
