package listener_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/accept"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBound is how long a test waits for something that should happen at once; it is far
// below PeekTimeout, so a connection stuck behind a silent one would miss it.
const waitBound = 3 * time.Second

func newMux(t *testing.T) *listener.Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := listener.NewMux(ln)
	t.Cleanup(func() { m.Close() })
	return m
}

type accepted struct {
	c   net.Conn
	err error
}

// acceptAsync runs one Accept in the background.
func acceptAsync(ln net.Listener) <-chan accepted {
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan accepted, what string) accepted {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitBound):
		t.Fatalf("%s: nothing accepted within %v", what, waitBound)
		return accepted{}
	}
}

func dial(t *testing.T, addr string, first []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if len(first) > 0 {
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestMuxRoutesRaftConnectionsWithTheirByteConsumed(t *testing.T) {
	m := newMux(t)
	got := acceptAsync(m.Raft())
	c, err := listener.DialRaft(m.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("append entries"))
	a := wait(t, got, "raft listener")
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.c.Close()
	buf := make([]byte, len("append entries"))
	if _, err := io.ReadFull(a.c, buf); err != nil || string(buf) != "append entries" {
		t.Fatalf("raft side read %q, %v; want the bytes after RaftByte", buf, err)
	}
}

func TestMuxReplaysTheFirstByteOfOtherConnections(t *testing.T) {
	m := newMux(t)
	got := acceptAsync(m.Default())
	c := dial(t, m.Addr().String(), []byte{transport.Version, 7, 8, 9})
	a := wait(t, got, "default listener")
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.c.Close()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(a.c, buf); err != nil || !bytes.Equal(buf, []byte{transport.Version, 7, 8, 9}) {
		t.Fatalf("default side read %v, %v; want the frame from its version byte", buf, err)
	}
	c.Write([]byte{10})
	if _, err := io.ReadFull(a.c, buf[:1]); err != nil || buf[0] != 10 {
		t.Fatalf("then read %v, %v", buf[:1], err)
	}
}

// The transport's server and client work unchanged behind the Mux, next to Raft
// connections on the same port.
func TestTransportServesThroughTheMuxDefaultListener(t *testing.T) {
	m := newMux(t)
	srv, err := transport.NewServer(transport.HandlerFunc(func(_ context.Context, method uint16, p []byte) ([]byte, error) {
		return append([]byte{byte(method)}, p...), nil
	}), transport.ServerConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(m.Default()) }()
	defer func() {
		srv.Close()
		<-served
	}()
	raftSide := acceptAsync(m.Raft())
	rc, err := listener.DialRaft(m.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cl, err := transport.NewClient(m.Addr().String(), transport.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		resp, err := cl.Call(context.Background(), 9, []byte{byte(i)})
		if err != nil || !bytes.Equal(resp, []byte{9, byte(i)}) {
			t.Fatalf("call %d: %v, %v", i, resp, err)
		}
	}
	if a := wait(t, raftSide, "raft listener"); a.err != nil {
		t.Fatal(a.err)
	} else {
		a.c.Close()
	}
}

func TestMuxSilentConnectionDelaysNoOther(t *testing.T) {
	m := newMux(t)
	for range 3 {
		dial(t, m.Addr().String(), nil) // connect and say nothing
	}
	raftSide, defSide := acceptAsync(m.Raft()), acceptAsync(m.Default())
	rc, err := listener.DialRaft(m.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dial(t, m.Addr().String(), []byte{transport.Version1})
	for _, ch := range []<-chan accepted{raftSide, defSide} {
		a := wait(t, ch, "behind silent connections")
		if a.err != nil {
			t.Fatal(a.err)
		}
		a.c.Close()
	}
}

func TestClosingOneSubListenerLeavesTheOther(t *testing.T) {
	m := newMux(t)
	pending := acceptAsync(m.Raft())
	m.Raft().Close()
	if a := wait(t, pending, "a closed raft listener"); !errors.Is(a.err, net.ErrClosed) {
		t.Fatalf("Accept on the closed raft listener: %v, want net.ErrClosed", a.err)
	}
	if _, err := m.Raft().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept again: %v", err)
	}
	// A Raft connection now is dropped by the Mux.
	rc, err := listener.DialRaft(m.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetReadDeadline(time.Now().Add(waitBound))
	if _, err := rc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a raft connection to a closed raft listener read %v, want EOF", err)
	}
	// The default side still accepts.
	defSide := acceptAsync(m.Default())
	dial(t, m.Addr().String(), []byte{transport.Version})
	if a := wait(t, defSide, "default listener"); a.err != nil {
		t.Fatal(a.err)
	} else {
		a.c.Close()
	}
}

func TestClosingTheMuxEndsBothAcceptLoops(t *testing.T) {
	m := newMux(t)
	dial(t, m.Addr().String(), nil) // a connection still waiting for its first byte
	loops := make(chan error, 2)
	for _, ln := range []net.Listener{m.Raft(), m.Default()} {
		go func() {
			loops <- accept.Loop(ln, func() bool { return false }, nil, func(c net.Conn) { c.Close() })
		}()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-loops:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("accept.Loop on a sub-listener returned %v, want net.ErrClosed", err)
			}
		case <-time.After(waitBound):
			t.Fatal("accept.Loop on a sub-listener still running after the Mux closed")
		}
	}
	if c, err := net.Dial("tcp", m.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the underlying listener still accepts after Close")
	}
}

// broken is a listener whose Accept fails for good.
type broken struct {
	net.Listener
	err error
}

func (b broken) Accept() (net.Conn, error) { return nil, b.err }

func TestUnderlyingAcceptFailureReachesBothSubListeners(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fail := errors.New("accept: invalid argument")
	m := listener.NewMux(broken{Listener: ln, err: fail})
	defer m.Close()
	for _, sub := range []net.Listener{m.Raft(), m.Default()} {
		if _, err := sub.Accept(); !errors.Is(err, fail) {
			t.Fatalf("Accept returned %v, want the underlying listener's error", err)
		}
	}
}
