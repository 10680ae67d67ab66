package coord

import (
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Effect is something the driver must do for a request.
type Effect interface{ effect() }

// SendWrite asks replica To to apply Mutation. Repair marks the writes read repair sends;
// Async the writes the request does not wait for unless it falls back on them (the
// read-optimized replica's under EngineAware), which the node's machine paces per replica
// (route.Pace).
type SendWrite struct {
	To       ring.NodeID
	Mutation row.Mutation
	Repair   bool
	Async    bool
}

// SendRead asks replica To for Key's row, or only for its digest.
type SendRead struct {
	To     ring.NodeID
	Key    []byte
	Digest bool
}

// StoreHint keeps Mutation on the coordinator for replica For, to replay when it is back
// (down, failed or late) or when it has room (Deferred: it was up but backlogged).
type StoreHint struct {
	For      ring.NodeID
	Mutation row.Mutation
	Deferred bool
}

// Reply answers the client. For reads, Row and Found carry the result when Err is nil.
// A request replies exactly once.
type Reply struct {
	Err   error
	Row   row.Row
	Found bool
}

func (SendWrite) effect() {}
func (SendRead) effect()  {}
func (StoreHint) effect() {}
func (Reply) effect()     {}
