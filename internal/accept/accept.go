// Package accept runs a listener's accept loop the way kura's servers (the RESP front end
// and the internode transport) need it: after a temporary error, such as running out of
// file descriptors, it pauses for a growing time instead of spinning or giving up.
package accept

import (
	"errors"
	"net"
	"time"
)

// Pauses after temporary accept errors: the first is FirstBackoff, each next one twice
// the last, at most MaxBackoff.
const (
	FirstBackoff = 5 * time.Millisecond
	MaxBackoff   = time.Second
)

// Loop accepts connections from ln and hands each to handle, until Accept fails for good.
// It returns nil when closing reports true at that point (the server closed ln on
// purpose), and the error otherwise. After a temporary error (a timeout, EMFILE, ENFILE,
// EINTR) it pauses, or waits until done is closed, and accepts again.
func Loop(ln net.Listener, closing func() bool, done <-chan struct{}, handle func(net.Conn)) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closing() {
				return nil
			}
			if !Temporary(err) {
				return err
			}
			backoff = min(max(2*backoff, FirstBackoff), MaxBackoff)
			select {
			case <-time.After(backoff):
			case <-done:
			}
			continue
		}
		backoff = 0
		handle(nc)
	}
}

// Temporary reports whether an accept error is worth retrying: a timeout, or one that net
// marks with its deprecated Temporary method (EMFILE, ENFILE, EINTR; net retries
// ECONNABORTED itself).
func Temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}
