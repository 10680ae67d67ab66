package transport

import (
	"context"
	"errors"
	"fmt"
)

// Errors a Call returns besides a *RemoteError and its context's error. They tell apart
// what a coordinator must: whether the request may have reached the peer.
var (
	// ErrConnectionLost: the connection broke while the call was outstanding. The request
	// may or may not have been handled. The error also wraps the cause.
	ErrConnectionLost = errors.New("transport: connection lost")
	// ErrUnreachable: there is no connection to the peer (the last dial failed and the
	// client is backing off, or the dial failed now). Nothing was sent.
	ErrUnreachable = errors.New("transport: peer unreachable")
	// ErrOverloaded: the call waited ClientConfig.QueueWait for an in-flight slot or for
	// room in the send queue and got neither. Nothing was sent.
	ErrOverloaded = errors.New("transport: overloaded")
	// ErrClosed: the client or server was closed.
	ErrClosed = errors.New("transport: closed")
	// ErrConfig: a configuration value is out of range.
	ErrConfig = errors.New("transport: invalid config")
)

// Error codes carried by error frames. Codes below FirstApplicationCode belong to the
// transport; handlers choose theirs from FirstApplicationCode up by returning a
// *RemoteError.
const (
	// CodeHandlerError: the handler returned an error that is not a *RemoteError; the
	// message is its text.
	CodeHandlerError uint16 = 1
	// CodePanic: the handler panicked; the message is the panic value.
	CodePanic uint16 = 2
	// CodeTooLarge: the request or the handler's response exceeded the server's payload
	// limit.
	CodeTooLarge uint16 = 3
	// CodeDeadlineExceeded: the handler gave up because the caller's deadline passed (it
	// returned an error wrapping context.DeadlineExceeded). The RemoteError then wraps
	// context.DeadlineExceeded too, so a caller sees the same timeout whichever side noticed
	// it first.
	CodeDeadlineExceeded uint16 = 4
	// CodeStaleEpoch: the server refused the request, unhandled, because it was planned
	// at a ring epoch older than the server's (ServerConfig.RefuseStaleEpoch). The
	// frame's epoch stamp is the server's epoch; the message says it in words. Call
	// returns a *StaleEpochError, never a *RemoteError, for it.
	CodeStaleEpoch uint16 = 5
	// FirstApplicationCode is the first code free for handlers.
	FirstApplicationCode uint16 = 100
)

// RemoteError is a failure reported by the peer's handler: Call returns it when the
// response is an error frame. A Handler may also return one to choose the code the caller
// sees.
type RemoteError struct {
	Code    uint16
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("transport: remote error %d: %s", e.Code, e.Message)
}

// Unwrap returns context.DeadlineExceeded for CodeDeadlineExceeded, else nil.
func (e *RemoteError) Unwrap() error {
	if e.Code == CodeDeadlineExceeded {
		return context.DeadlineExceeded
	}
	return nil
}
