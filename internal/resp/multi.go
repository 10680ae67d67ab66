package resp

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/kuradb/kura/internal/row"
)

// Transactions: MULTI queues commands, EXEC runs them at once, DISCARD drops them, WATCH
// makes EXEC abort when a key changed since. See doc.go, "Transactions".

const (
	errNestedMulti  = "ERR MULTI calls can not be nested"
	errExecNoMulti  = "ERR EXEC without MULTI"
	errDiscardNo    = "ERR DISCARD without MULTI"
	errWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	errExecAbort    = "EXECABORT Transaction discarded because of previous errors."
)

// txControl lists the commands that run at once inside MULTI instead of being queued.
func txControl(name string) bool {
	switch name {
	case "exec", "discard", "multi", "watch", "quit":
		return true
	}
	return false
}

// queue handles a command sent inside MULTI: an error for one that could not run (EXEC
// will then abort, as in Redis), QUEUED otherwise. c is nil for an unknown command.
func (h *Handler) queue(dst []byte, c *command, args [][]byte, s *Session) []byte {
	switch {
	case c == nil:
		s.multiErr = true
		return appendUnknownCommand(dst, args)
	case !arityOK(c.arity, len(args)):
		s.multiErr = true
		return appendArityErr(dst, c.name)
	case len(args) > h.cfg.MaxArgs:
		s.multiErr = true
		return appendErrf(dst, "ERR too many arguments: %d, max-args is %d", len(args), h.cfg.MaxArgs)
	}
	if dst, ok := h.permit(dst, c, args, s, "multi"); !ok {
		s.multiErr = true
		return dst
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = bytes.Clone(a)
		if cp[i] == nil {
			cp[i] = []byte{}
		}
	}
	s.queued = append(s.queued, cp)
	return appendStatus(dst, "QUEUED")
}

// MULTI
func cmdMulti(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if s.multi {
		return appendErr(dst, errNestedMulti)
	}
	s.multi, s.multiErr, s.queued = true, false, nil
	return appendOK(dst)
}

// DISCARD
func cmdDiscard(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if !s.multi {
		return appendErr(dst, errDiscardNo)
	}
	s.endMulti()
	return appendOK(dst)
}

// endMulti closes the transaction and forgets the watches, as EXEC and DISCARD do.
func (s *Session) endMulti() {
	s.multi, s.multiErr, s.queued, s.watches = false, false, nil, nil
}

// WATCH key [key ...]: remembers each key's digest as its leader sees it.
func cmdWatch(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if s.multi {
		return appendErr(dst, errWatchInMulti)
	}
	for _, k := range args[1:] {
		var ok bool
		if dst, ok = h.checkReadKey(dst, k); !ok {
			return dst
		}
	}
	for _, k := range args[1:] {
		d, err := h.watchDigestOf(s, k)
		if err != nil {
			return h.appendStoreErr(dst, err)
		}
		s.watches = append(s.watches, watch{key: bytes.Clone(k), digest: d})
	}
	return appendOK(dst)
}

// watchDigestOf reads key's digest where EXEC will compare it: at the key's leader in a
// cluster, from the store on a single node.
func (h *Handler) watchDigestOf(s *Session, key []byte) ([]byte, error) {
	if len(key) == 0 {
		return watchDigest(&row.Row{}), nil // no row has the empty key
	}
	if l, ok := h.store.(Leader); ok {
		reply, err := l.AtLeader(&LeaderRequest{Key: key, Level: s.consistency, Proto: 2, WatchOnly: true})
		if err != nil {
			return nil, err
		}
		return parseWatchReply(reply)
	}
	r, err := directStore{h.store}.Get(s.consistency, key)
	if err != nil {
		return nil, err
	}
	return watchDigest(&r), nil
}

// UNWATCH
func cmdUnwatch(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	s.watches = nil
	return appendOK(dst)
}

// EXEC runs the queued commands. In a cluster they must touch one key (the WATCHed keys
// included) and run at its leader; on a single node they may touch several, all locked.
func cmdExec(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if !s.multi {
		return appendErr(dst, errExecNoMulti)
	}
	cmds, watches, failed := s.queued, s.watches, s.multiErr
	s.endMulti()
	if failed {
		return appendErr(dst, errExecAbort)
	}
	if dst, ok := h.permitQueued(dst, cmds, s); !ok {
		return dst
	}
	var keys [][]byte
	for _, w := range watches {
		keys = append(keys, w.key)
	}
	for _, args := range cmds {
		keys = append(keys, h.keysOf(args)...)
	}
	// The empty key names no row (commands on it read nothing and write nothing): it
	// needs no leader.
	keys = slices.DeleteFunc(distinct(keys), func(k []byte) bool { return len(k) == 0 })
	req := LeaderRequest{Level: s.consistency, Proto: int(s.proto), Multi: true, Cmds: cmds}
	if _, ok := h.store.(Leader); ok {
		switch {
		case len(keys) > 1:
			return appendErrf(dst, "CROSSSLOT a transaction in a kura cluster must touch one key, WATCHed keys included; this one touches %d", len(keys))
		case len(keys) == 0:
			return h.execHere(dst, cmds, s)
		}
		req.Key = keys[0]
		if len(watches) > 0 {
			req.Watched = watches[0].digest
			for _, w := range watches[1:] {
				if !bytes.Equal(w.digest, req.Watched) {
					return s.proto.appendNullArray(dst) // one key watched twice, changed between
				}
			}
		}
		return h.sendToLeader(dst, &req, keys, nil)
	}
	return h.sendToLeader(dst, &req, keys, watches)
}

// execHere runs a transaction without keys (PING, ECHO...) in the session itself.
func (h *Handler) execHere(dst []byte, cmds [][][]byte, s *Session) []byte {
	dst = appendArray(dst, len(cmds))
	for _, args := range cmds {
		c := h.lookup(args[0])
		dst = c.fn(h, dst, args, s)
		s.release()
	}
	return dst
}

// keysOf returns the key arguments of a command, by its table entry.
func (h *Handler) keysOf(args [][]byte) [][]byte {
	c := h.lookup(args[0])
	if c == nil || c.firstKey == 0 {
		return nil
	}
	last := c.lastKey
	if last < 0 {
		last += len(args)
	}
	var keys [][]byte
	for i := c.firstKey; i <= last && i < len(args); i += max(c.step, 1) {
		keys = append(keys, args[i])
	}
	return keys
}

// parseWatchReply reads the bulk string reply a leader gave to a WatchOnly request.
func parseWatchReply(b []byte) ([]byte, error) {
	if len(b) > 0 && b[0] == '-' {
		return nil, leaderError(string(bytes.TrimRight(b[1:], "\r\n")))
	}
	i := bytes.Index(b, []byte("\r\n"))
	if len(b) == 0 || b[0] != '$' || i < 0 {
		return nil, leaderError("malformed watch reply")
	}
	n, err := strconv.Atoi(string(b[1:i]))
	if err != nil || n < 0 || len(b) < i+2+n {
		return nil, leaderError("malformed watch reply")
	}
	return b[i+2 : i+2+n], nil
}

// leaderError is an error reply that came back from a key's leader.
type leaderError string

func (e leaderError) Error() string { return "resp: leader: " + string(e) }
