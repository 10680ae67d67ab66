package metalog

import (
	"errors"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/wire"
)

// Errors of the Log. A proposal the state machine refuses returns the state machine's
// error (meta.ErrStaleEpoch and the others), from the leader or from afar alike.
var (
	// ErrUnavailable: no leader of the metadata log could be reached before the proposal's
	// context ended (the voters lost their quorum, or this node reaches too few of them).
	// Nothing was appended. The error's text says how many voters answered. Requests for
	// data never depend on the log: every node goes on with the last state it applied.
	ErrUnavailable = errors.New("metalog: metadata unavailable")
	// ErrTimeout: a leader took the proposal but it was not committed before the context
	// ended. It may still be applied: look at the state before proposing again.
	ErrTimeout = errors.New("metalog: proposal not committed in time; it may still apply")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("metalog: closed")

	// errNotLeader answers a proposal sent to a node that is not the leader; the answer
	// names the leader when the node knows it.
	errNotLeader = errors.New("metalog: not the metadata log's leader")
)

// errorCodes number the errors a proposal's answer can be, so that a proposer whose
// proposal was refused by a leader elsewhere gets an error that errors.Is the same
// sentinels as the leader's own. They cross the network between versions: never
// renumber, only add.
var errorCodes = []struct {
	code uint16
	err  error
}{
	{1, meta.ErrNotBootstrapped},
	{2, meta.ErrBootstrapped},
	{3, meta.ErrInvalid},
	{4, meta.ErrMember},
	{5, meta.ErrStaleEpoch},
	{6, meta.ErrChangeInFlight},
	{7, meta.ErrOverlap},
	{8, meta.ErrNoChange},
	{9, meta.ErrTooFewLive},
	{10, meta.ErrNoSource},
	{11, meta.ErrTransfers},
	{12, meta.ErrNotMoved},
	{13, meta.ErrVoters},
	{14, meta.ErrCorrupt},
	{15, meta.ErrACLChanged},
	{100, errNotLeader},
	{101, ErrClosed},
	{102, ErrTimeout},
	{103, ErrUnavailable},
}

// wireError returns err as a proposal's answer: the codes of every sentinel it is, and
// its text.
func wireError(err error) *wire.MetaError {
	e := &wire.MetaError{Message: err.Error()}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			e.Codes = append(e.Codes, c.code)
		}
	}
	return e
}

// remoteError is an error received in a proposal's answer: the sender's text, and the
// sentinels its codes name (codes this version does not know are left out).
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

func fromWire(e *wire.MetaError) error {
	r := &remoteError{msg: e.Message}
	for _, code := range e.Codes {
		for _, c := range errorCodes {
			if c.code == code {
				r.errs = append(r.errs, c.err)
			}
		}
	}
	return r
}
