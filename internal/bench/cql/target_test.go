package cql

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestOpenReportsAnUnreachableClusterAndLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tg, err := New(Config{Hosts: []string{closedPort(t)}, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	c, err := tg.Open(context.Background(), 0, 1)
	if err == nil {
		c.Close()
		t.Fatal("Open succeeded against a closed port")
	}
	t.Logf("Open: %v", err)
}

func TestOpenAfterCloseFails(t *testing.T) {
	tg, err := New(Config{Hosts: []string{closedPort(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Open(context.Background(), 0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: error = %v, want ErrClosed", err)
	}
	if err := tg.EnsureSchema(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("EnsureSchema after Close: error = %v, want ErrClosed", err)
	}
}

func TestOpenHonoursACancelledContextBeforeConnecting(t *testing.T) {
	tg, err := New(Config{Hosts: []string{closedPort(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tg.Open(ctx, 0, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context: error = %v, want context.Canceled", err)
	}
}
