package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// leaderRunner runs a request this node leads: the resp handler's RunAtLeader, set once
// the front end exists (it is built after the cluster).
type leaderRunner func(dst []byte, req *resp.LeaderRequest, store resp.LeaderStore) []byte

// errNoLeader is AtLeader's error when no replica of the key is up.
var errNoLeader = fmt.Errorf("%w: no live replica to lead the key", coord.ErrUnavailable)

// errNotReady is a leader request's answer before the front end is built.
var errNotReady = errors.New("node: front end not started: cannot lead keys yet")

var _ resp.Leader = (*clusterStore)(nil)

// AtLeader implements resp.Leader: it sends req to the key's leader (machine.Leaders'
// first; the next when one is unreachable, which means nothing was sent) or runs it here
// when this node leads the key.
func (s *clusterStore) AtLeader(req *resp.LeaderRequest) ([]byte, error) {
	if _, err := s.levelOf(req.Level); err != nil {
		return nil, err
	}
	var last error = errNoLeader
	for _, id := range s.m.Leaders(req.Key) {
		if id == s.self && s.local != nil {
			if err := s.clock.writable(); err != nil {
				last = err // this node's clock must not timestamp the write: the next replica leads
				continue
			}
			return s.lead(req)
		}
		reply, err := s.askLeader(id, req)
		switch {
		case errors.Is(err, transport.ErrUnreachable) || errors.Is(err, transport.ErrOverloaded):
			last = err
			continue
		case outOfSync(err):
			last = fmt.Errorf("%w: leader %s refused: %w", errClockOutOfSync, id, err)
			continue
		case oldPeer(err) && s.local != nil:
			// A node of an older version (a rolling upgrade) cannot lead: this one
			// does, for this request. The counter stays exact; only the per-key
			// serialization is lost while the old node leads the key.
			return s.lead(req)
		}
		return reply, err
	}
	return nil, last
}

// oldPeer reports whether err is a peer's refusal of wire.MethodLeader because it does
// not know the method: a node that predates it (its replica answers "unknown method"), or
// one whose front end is not started yet.
func oldPeer(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && strings.Contains(re.Message, "unknown method")
}

// outOfSync reports whether err is a leader's refusal because its clock is out of sync;
// nothing was done.
func outOfSync(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && re.Code == codeOutOfSync
}

// askLeader sends req to leader id and returns its reply.
func (s *clusterStore) askLeader(id ring.NodeID, req *resp.LeaderRequest) ([]byte, error) {
	c, err := s.peer(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrUnreachable, err)
	}
	// The leader reads and then writes, each bounded by the request timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.m.Timeout())
	defer cancel()
	w := wire.LeaderRequest{Key: req.Key, Level: req.Level, Proto: byte(req.Proto), Multi: req.Multi,
		WatchOnly: req.WatchOnly, Watched: req.Watched, Cmds: req.Cmds}
	b, err := c.Call(ctx, wire.MethodLeader, wire.AppendLeaderRequest(nil, &w))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: leader %s: %w", coord.ErrTimeout, id, err)
		}
		return nil, fmt.Errorf("node: leader %s: %w", id, err)
	}
	resp, err := wire.DecodeLeaderResponse(b)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), resp.Reply...), nil
}

// lead runs req here, through this node's leader store.
func (s *clusterStore) lead(req *resp.LeaderRequest) ([]byte, error) {
	run := s.leader.Load()
	if run == nil {
		return nil, errNotReady
	}
	if err := s.writable(); err != nil {
		return nil, err
	}
	return (*run)(nil, req, leaderStore{s}), nil
}

// serveLeader answers a peer's wire.MethodLeader request.
func (s *clusterStore) serveLeader(payload []byte) ([]byte, error) {
	w, err := wire.DecodeLeaderRequest(payload)
	if err != nil {
		return nil, err
	}
	if w.Proto != 2 && w.Proto != 3 {
		return nil, fmt.Errorf("%w: protocol %d", wire.ErrCorrupt, w.Proto)
	}
	req := resp.LeaderRequest{Key: w.Key, Level: w.Level, Proto: int(w.Proto), Multi: w.Multi,
		WatchOnly: w.WatchOnly, Watched: w.Watched, Cmds: w.Cmds}
	if len(req.Key) == 0 || (len(req.Cmds) == 0 && !req.WatchOnly) {
		return nil, fmt.Errorf("%w: leader request without key or commands", wire.ErrCorrupt)
	}
	if _, err := s.levelOf(req.Level); err != nil {
		return nil, err
	}
	reply, err := s.lead(&req)
	if errors.Is(err, errClockOutOfSync) {
		return nil, &transport.RemoteError{Code: codeOutOfSync, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	return wire.AppendLeaderResponse(nil, &wire.LeaderResponse{Reply: reply}), nil
}

// levelOf parses a request's level; "" is the store's default.
func (s *clusterStore) levelOf(level string) (coord.Level, error) {
	if level == "" {
		return s.level, nil
	}
	return coord.ParseLevel(level)
}

// leaderStore is what a key's leader reads and writes through (resp.LeaderStore): its own
// copy of the row merged with a read at the request's level, so that the shards it wrote
// itself are exact whatever the level; and writes to its own copy first, then to the
// other replicas at the level (its own copy counting as written), so that its next read
// sees them even when its own engine is written asynchronously by coordinators (the
// read-optimized one) or a write meets its level before the local copy is applied.
type leaderStore struct{ s *clusterStore }

func (l leaderStore) Get(level string, key []byte) (row.Row, error) {
	lv, err := l.s.levelOf(level)
	if err != nil {
		return row.Row{}, err
	}
	r, _, err := l.s.getAt(lv, key)
	if err != nil {
		return row.Row{}, err
	}
	if own, err := l.s.local.Read(key, false); err == nil && own.Found {
		r = row.Merge(r, own.Row.Clone())
		l.s.clock.observe(r.Newest()) // the leader's own copy may hold writes the read did not return
	}
	return r, nil
}

func (l leaderStore) Apply(level string, batch []row.Mutation) error {
	lv, err := l.s.levelOf(level)
	if err != nil {
		return err
	}
	if err := l.s.writable(); err != nil { // before its own copy: then nothing is written
		return err
	}
	if err := l.s.local.Write(batch); err != nil {
		return err
	}
	return l.s.applyOwnAt(lv, batch, true)
}

// leaderHandler is the internode server's handler: leader requests go to the store, the
// rest to the replica.
type leaderHandler struct {
	replica interface {
		Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error)
	}
	store *atomic.Pointer[clusterStore]
}

func (h leaderHandler) Handle(ctx context.Context, method uint16, payload []byte) ([]byte, error) {
	if method != wire.MethodLeader {
		return h.replica.Handle(ctx, method, payload)
	}
	s := h.store.Load()
	if s == nil || s.leader.Load() == nil { // as a node without leaders answers
		return h.replica.Handle(ctx, method, payload)
	}
	return s.serveLeader(payload)
}
