package stream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/ring"
)

// The source choice after failures: waits double per failure in a row of one node up to
// the ceiling, a page resets them, and after failoverAfter failures in a row the next
// alternative is asked (then the planned source again), its first ask after the base.
func TestSourcesBackOffThenFailOver(t *testing.T) {
	for _, c := range []struct {
		name         string
		alternatives []ring.NodeID
		steps        string // f: a failed ask, o: a page
		want         string // after each step: the node asked next, and the wait after a failure
	}{
		{"no alternatives", nil, "fffffff o f",
			"a 100ms, a 200ms, a 400ms, a 800ms, a 1s, a 1s, a 1s, a, a 100ms"},
		{"alternatives", []ring.NodeID{"b", "a", "c"}, "ff f ff o f f f ff",
			"a 100ms, a 200ms, b 100ms, b 100ms, b 200ms, b, b 100ms, b 200ms, c 100ms, c 100ms, c 200ms"},
		{"cycle", []ring.NodeID{"b"}, "fff fff fff",
			"a 100ms, a 200ms, b 100ms, b 100ms, b 200ms, a 100ms, a 100ms, a 200ms, b 100ms"},
	} {
		s := newSources("a", c.alternatives, 100*time.Millisecond, time.Second, 3)
		var got []string
		for _, step := range strings.ReplaceAll(c.steps, " ", "") {
			if step == 'o' {
				s.ok()
				got = append(got, string(s.current()))
				continue
			}
			d := s.failed()
			got = append(got, fmt.Sprintf("%s %v", s.current(), d))
		}
		if g := strings.Join(got, ", "); g != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, g, c.want)
		}
	}
}
