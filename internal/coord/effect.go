package coord

import (
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Effect is something the driver must do for a request.
type Effect interface{ effect() }

// SendWrite asks replica To to apply Mutation. Repair marks the writes read repair sends.
type SendWrite struct {
	To       ring.NodeID
	Mutation row.Mutation
	Repair   bool
}

// SendRead asks replica To for Key's row, or only for its digest.
type SendRead struct {
	To     ring.NodeID
	Key    []byte
	Digest bool
}

// StoreHint keeps Mutation on the coordinator for replica For, to replay when it is back.
type StoreHint struct {
	For      ring.NodeID
	Mutation row.Mutation
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
