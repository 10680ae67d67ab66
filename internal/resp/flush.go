package resp

import "errors"

// Flusher is the optional Store capability behind FLUSHDB and FLUSHALL: deleting every
// key. A single node's store deletes its engine's rows; a cluster's deletes every node's,
// and needs every node up (Cassandra's TRUNCATE does the same).
type Flusher interface {
	// FlushAll deletes every key as a DEL at timestamp ts would: a row tombstone at ts on
	// every row stored, so that writes with later timestamps (made while it runs)
	// survive, and the space returns as deletes' does, once compaction purges the
	// tombstones. It blocks until done. An error may leave some rows (some nodes) flushed
	// and others not; running it again is safe. In a cluster it refuses with an error
	// wrapping coord.ErrUnavailable, and writes nothing, while any node is down.
	FlushAll(ts int64) error
}

// ErrNoFlush is FLUSHDB's and FLUSHALL's error on a store that is not a Flusher.
var ErrNoFlush = errors.New("resp: this store cannot flush")

// FLUSHDB [ASYNC|SYNC] and FLUSHALL [ASYNC|SYNC]: kura has one database, so both delete
// every key, and both are synchronous: they reply once the store has flushed.
func cmdFlush(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	if len(args) > 2 || (len(args) == 2 && !equalFold(args[1], "async") && !equalFold(args[1], "sync")) {
		return appendSyntaxErr(dst)
	}
	f, ok := h.store.(Flusher)
	if !ok {
		return appendErr(dst, "ERR "+ErrNoFlush.Error())
	}
	if err := f.FlushAll(h.cfg.Clock.Now()); err != nil {
		return h.appendStoreErr(dst, err)
	}
	return appendOK(dst)
}
