package lazyctx

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNotWaitedOnItStartsNothingAndReportsTheDeadline(t *testing.T) {
	dl := time.Now().Add(time.Hour)
	c := WithDeadline(context.Background(), dl)
	defer c.Release()
	if got, ok := c.Deadline(); !ok || !got.Equal(dl) {
		t.Fatalf("Deadline() = %v %v", got, ok)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Err() = %v before the deadline", err)
	}
	if c.started.Load() {
		t.Fatal("Deadline and Err started a timer")
	}
}

func TestDoneClosesAtTheDeadline(t *testing.T) {
	c := WithDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
	defer c.Release()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done was not closed after the deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v", c.Err())
	}
}

// Err after the deadline is DeadlineExceeded even if nobody waited, and Done agrees.
func TestErrAfterTheDeadlineWithoutWaiting(t *testing.T) {
	c := WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer c.Release()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Err reported the deadline but Done is open")
	}
}

func TestParentCancellationAndValuesPassThrough(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	c := WithDeadline(parent, time.Now().Add(time.Hour))
	defer c.Release()
	if c.Value(key{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
	cancel()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err() = %v after the parent was canceled", c.Err())
	}
	<-c.Done()
}

func TestTheParentsEarlierDeadlineWins(t *testing.T) {
	parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancel()
	c := WithDeadline(parent, time.Now().Add(time.Hour))
	defer c.Release()
	pd, _ := parent.Deadline()
	if d, _ := c.Deadline(); !d.Equal(pd) {
		t.Fatalf("Deadline() = %v, want the parent's %v", d, pd)
	}
}
