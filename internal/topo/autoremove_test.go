package topo

import (
	"testing"
	"time"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// TestDeadToRemove: a normal member is removed once it has been down for the configured
// time, not before, not when the time is 0 (off), not when it is up again, and never when
// its whole rack is down.
func TestDeadToRemove(t *testing.T) {
	s := &meta.State{Members: []meta.Member{
		{ID: "a1", Rack: "a", State: meta.Normal}, {ID: "a2", Rack: "a", State: meta.Normal},
		{ID: "b1", Rack: "b", State: meta.Normal}, {ID: "b2", Rack: "b", State: meta.Normal},
		{ID: "c1", Rack: "c", State: meta.Normal},
		{ID: "j1", Rack: "a", State: meta.Joining}, {ID: "r1", Rack: "a", State: meta.Removed},
	}}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	after := 10 * time.Minute
	since := map[ring.NodeID]time.Time{"a1": t0, "b1": t0.Add(time.Minute), "c1": t0, "j1": t0, "r1": t0}
	down := map[ring.NodeID]bool{"a1": true, "b1": true, "c1": true, "j1": true, "r1": true}
	cases := []struct {
		what  string
		now   time.Time
		after time.Duration
		down  map[ring.NodeID]bool
		want  []ring.NodeID
	}{
		{"before the time", t0.Add(after - time.Second), after, down, nil},
		{"a1 at the time; c1's rack has no other node; j1, r1 are not normal", t0.Add(after), after, down, []ring.NodeID{"a1"}},
		{"b1 a minute later", t0.Add(after + time.Minute), after, down, []ring.NodeID{"a1", "b1"}},
		{"off", t0.Add(time.Hour), 0, down, nil},
		{"a1 up again", t0.Add(time.Hour), after, map[ring.NodeID]bool{"b1": true}, []ring.NodeID{"b1"}},
		{"rack a wholly down", t0.Add(time.Hour), after, map[ring.NodeID]bool{"a1": true, "a2": true}, nil},
	}
	for _, c := range cases {
		got := DeadToRemove(s, since, c.down, c.now, c.after)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.what, got, c.want)
			}
		}
	}
}
