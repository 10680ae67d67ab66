package metalog

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/wire"
)

// fsm is the Raft state machine: a meta.State built from the log alone (from the empty
// state, or from a Raft snapshot), whatever else the node learned by pulling. Raft calls
// Apply, Snapshot and Restore from one goroutine, never at once.
type fsm struct {
	// onState receives a copy of the state after every accepted entry and after a restore,
	// with its log index; it is called in log order from Raft's goroutine.
	onState func(st *meta.State, index uint64)

	mu    sync.Mutex // guards state and index against readers (the leader's voter checks)
	state *meta.State
	index uint64 // the log index of the last entry the state machine accepted
}

func newFSM(onState func(*meta.State, uint64)) *fsm {
	return &fsm{onState: onState, state: &meta.State{}}
}

// applied is Apply's response, which Raft hands to the proposer on the leader: the state
// the entry led to (the proposer's own copy) and its index, or why it was refused.
type applied struct {
	state *meta.State
	index uint64
	err   error
}

// Apply applies one entry. A refused entry changes nothing and its error is the response.
func (f *fsm) Apply(l *raft.Log) any {
	e, err := meta.Decode(l.Data)
	f.mu.Lock()
	if err == nil {
		err = f.state.Apply(e)
	}
	if err != nil {
		f.mu.Unlock()
		return applied{err: err}
	}
	f.index = l.Index
	st := f.state.Clone()
	f.mu.Unlock()
	f.onState(st.Clone(), l.Index)
	return applied{state: st, index: l.Index}
}

// current returns a copy of the state machine's state and its index.
func (f *fsm) current() (*meta.State, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Clone(), f.index
}

// Snapshot encodes the state now; Raft persists it later, concurrently with Apply.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return snapshot(encodeSaved(f.state, f.index)), nil
}

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("metalog: read snapshot: %w", err)
	}
	if len(b) > maxSnapshotBytes {
		return fmt.Errorf("%w: snapshot over %d bytes", errSaved, maxSnapshotBytes)
	}
	st, index, err := decodeSaved(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.state, f.index = st, index
	f.mu.Unlock()
	f.onState(st.Clone(), index)
	return nil
}

// maxSnapshotBytes bounds a snapshot Restore reads: a state must fit in a metadata
// message anyway, to be pulled.
const maxSnapshotBytes = wire.MaxMetaBytes + 64

// snapshot is an encoded state waiting to be written.
type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return fmt.Errorf("metalog: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshot) Release() {}
