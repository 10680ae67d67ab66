package accept

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// script is a listener that returns a fixed sequence of results from Accept.
type script struct {
	net.Listener
	steps []func() (net.Conn, error)
	times []time.Time
}

func (s *script) Accept() (net.Conn, error) {
	s.times = append(s.times, time.Now())
	step := s.steps[0]
	s.steps = s.steps[1:]
	return step()
}

type tempErr struct{}

func (tempErr) Error() string   { return "too many open files" }
func (tempErr) Temporary() bool { return true }
func (tempErr) Timeout() bool   { return false }

func TestLoopRetriesTemporaryErrorsWithGrowingPausesAndStopsOnOthers(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	fail := errors.New("listener broken")
	ln := &script{steps: []func() (net.Conn, error){
		func() (net.Conn, error) { return nil, &net.OpError{Op: "accept", Err: tempErr{}} },
		func() (net.Conn, error) { return nil, tempErr{} },
		func() (net.Conn, error) { return c1, nil },
		func() (net.Conn, error) { return nil, fail },
	}}
	var handled []net.Conn
	err := Loop(ln, func() bool { return false }, nil, func(nc net.Conn) { handled = append(handled, nc) })
	if !errors.Is(err, fail) {
		t.Fatalf("Loop returned %v, want the permanent error", err)
	}
	if len(handled) != 1 || handled[0] != c1 {
		t.Fatalf("handled %v, want the one connection", handled)
	}
	if p1, p2 := ln.times[1].Sub(ln.times[0]), ln.times[2].Sub(ln.times[1]); p1 < FirstBackoff || p2 < 2*FirstBackoff {
		t.Fatalf("pauses %v then %v, want at least %v then %v", p1, p2, FirstBackoff, 2*FirstBackoff)
	}
}

func TestLoopEndsQuietlyWhenClosingAndDoneCutsThePauses(t *testing.T) {
	// Nine temporary errors in a row would pause 5+10+...+1000 ms, about 2.5 s; with done
	// closed the loop must not sleep through them.
	done := make(chan struct{})
	close(done)
	closing := false
	var steps []func() (net.Conn, error)
	for range 9 {
		steps = append(steps, func() (net.Conn, error) { return nil, tempErr{} })
	}
	steps = append(steps, func() (net.Conn, error) { closing = true; return nil, net.ErrClosed })
	start := time.Now()
	if err := Loop(&script{steps: steps}, func() bool { return closing }, done, func(net.Conn) {}); err != nil {
		t.Fatalf("Loop returned %v after the server closed its listener", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Loop slept %v with done closed", d)
	}
}

func TestTemporary(t *testing.T) {
	for err, want := range map[error]bool{
		tempErr{}:                    true,
		&net.OpError{Err: tempErr{}}: true,
		syscall.EMFILE:               true,
		net.ErrClosed:                false,
		errors.New("other"):          false,
	} {
		if got := Temporary(err); got != want {
			t.Errorf("Temporary(%v) = %v, want %v", err, got, want)
		}
	}
}
