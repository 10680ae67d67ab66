package metalog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/meta"
)

// position orders metadata states. The epoch alone does not, since Register and SetVoters
// change a state but not its epoch; the log index of the last entry the state machine
// accepted does, and is the same on every node, since every node applies the same log.
// Comparing the epoch first keeps a state with a newer placement ahead of anything else
// (it is also ahead in the log).
type position struct {
	Epoch, Index uint64
}

// after reports whether p is newer than q.
func (p position) after(q position) bool {
	if p.Epoch != q.Epoch {
		return p.Epoch > q.Epoch
	}
	return p.Index > q.Index
}

func (p position) String() string { return fmt.Sprintf("epoch %d index %d", p.Epoch, p.Index) }

// savedVersion is the first byte of a saved state: the state file and the Raft
// snapshots both hold a state with its log index, encoded by encodeSaved.
const savedVersion = 1

var errSaved = errors.New("metalog: damaged saved state")

// encodeSaved returns savedVersion, the index as a uvarint, then meta.EncodeState(st).
func encodeSaved(st *meta.State, index uint64) []byte {
	return savedBytes(meta.EncodeState(st), index)
}

// savedBytes is encodeSaved of a state already encoded (enc).
func savedBytes(enc []byte, index uint64) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 1+binary.MaxVarintLen64+len(enc)), index)
	return append(append([]byte{savedVersion}, b...), enc...)
}

// decodeSaved parses encodeSaved's bytes.
func decodeSaved(b []byte) (*meta.State, uint64, error) {
	if len(b) == 0 || b[0] != savedVersion {
		return nil, 0, fmt.Errorf("%w: not a version %d saved state", errSaved, savedVersion)
	}
	index, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return nil, 0, fmt.Errorf("%w: bad index", errSaved)
	}
	st, err := meta.DecodeState(b[1+n:])
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errSaved, err)
	}
	return st, index, nil
}
