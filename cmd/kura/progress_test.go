package main

import (
	"testing"

	"github.com/kuradb/kura/internal/admin"
)

// TestStreamProgressSumsEveryNodesStreams: bytes, estimates (never below what arrived),
// the rate of the streams still running and the time left at it.
func TestStreamProgressSumsEveryNodesStreams(t *testing.T) {
	ss := []admin.StreamStatus{
		{Bytes: 1 << 20, Estimate: 4 << 20, RateBPS: 1 << 20},
		{Bytes: 3 << 20, Estimate: 2 << 20, Done: true, RateBPS: 5 << 20}, // more than estimated; done
		{Bytes: 0, Estimate: 2 << 20, RateBPS: 1 << 20},
	}
	got := streamProgress(ss)
	want := "Progress: 4.0 MiB of ~9.0 MiB received (44%) by 3 streams, 2 running at 2.0 MiB/s; ETA 2s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := streamProgress([]admin.StreamStatus{{Estimate: 1 << 20}}); got != "Progress: 0 B of ~1.0 MiB received (0%) by 1 streams, 1 running at 0 B/s; ETA unknown" {
		t.Errorf("no rate yet: %q", got)
	}
}
