package flowsim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestSharingTranscripts runs the hand-worked cases of testdata/sharing.txt:
//
//	run [timeline]
//	link <name> <capacity bytes/s>
//	flow <name> <size bytes> <link>... [at=<seconds>]
//
// Flows start at their at= time (default 0) in the order given; the output lists every
// instant at which flows started or completed and the active flows' rates after it, then
// each flow's start and end, each link's bytes carried, and with timeline the CSV timeline.
func TestSharingTranscripts(t *testing.T) {
	datadriven.RunTest(t, "testdata/sharing.txt", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "run" {
			td.Fatalf(t, "unknown command %q", td.Cmd)
		}
		links, flows := parseCase(t, td)
		return runCase(t, links, flows, td.HasArg("timeline"))
	})
}

type caseFlow struct {
	name  string
	flow  Flow
	atSec float64
}

func parseCase(t *testing.T, td *datadriven.TestData) ([]Link, []caseFlow) {
	var links []Link
	var flows []caseFlow
	linkID := map[string]LinkID{}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		return v
	}
	for _, line := range strings.Split(td.Input, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "link":
			linkID[f[1]] = LinkID(len(links))
			links = append(links, Link{Name: f[1], CapacityBytesPerSecond: num(f[2])})
		case len(f) >= 4 && f[0] == "flow":
			cf := caseFlow{name: f[1], flow: Flow{SizeBytes: num(f[2])}}
			for _, w := range f[3:] {
				if at, ok := strings.CutPrefix(w, "at="); ok {
					cf.atSec = num(at)
					continue
				}
				id, ok := linkID[w]
				if !ok {
					td.Fatalf(t, "unknown link %q", w)
				}
				cf.flow.Route = append(cf.flow.Route, id)
			}
			flows = append(flows, cf)
		default:
			td.Fatalf(t, "bad line %q", line)
		}
	}
	return links, flows
}

func runCase(t *testing.T, links []Link, flows []caseFlow, timeline bool) string {
	s, err := New(Config{Links: links, Timeline: timeline})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	names := map[FlowID]string{}
	var done []FlowID
	next := 0
	for {
		var started []string
		for next < len(flows) && flows[next].atSec <= s.Now() {
			id, err := s.Start(flows[next].flow)
			if err != nil {
				t.Fatal(err)
			}
			names[id] = flows[next].name
			started = append(started, flows[next].name)
			next++
		}
		if len(done) > 0 || len(started) > 0 {
			fmt.Fprintf(&out, "t=%.6g", s.Now())
			if len(done) > 0 {
				out.WriteString(" done")
				for _, id := range done {
					out.WriteString(" " + names[id])
				}
			}
			if len(started) > 0 {
				out.WriteString(" start " + strings.Join(started, " "))
			}
			out.WriteString("\n")
			var rates []string
			for id := range FlowID(len(names)) {
				if r := s.Rate(id); r > 0 {
					rates = append(rates, fmt.Sprintf("%s=%.6g", names[id], r))
				}
			}
			if len(rates) > 0 {
				out.WriteString("  " + strings.Join(rates, " ") + "\n")
			}
		}
		if s.Active() == 0 && next == len(flows) {
			break
		}
		until := math.Inf(1)
		if next < len(flows) {
			until = flows[next].atSec
		}
		_, done = s.Step(until)
	}
	for id := range FlowID(len(names)) {
		start, end := s.Times(id)
		fmt.Fprintf(&out, "flow %s %.6g..%.6g\n", names[id], start, end)
	}
	for i, l := range links {
		fmt.Fprintf(&out, "link %s %.6g\n", l.Name, s.LinkBytes(LinkID(i)))
	}
	if timeline {
		if err := s.WriteTimelineCSV(&out); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

func TestNewRejectsLinksWithoutCapacity(t *testing.T) {
	for _, c := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := New(Config{Links: []Link{{Name: "x", CapacityBytesPerSecond: c}}}); !errors.Is(err, ErrBadLink) {
			t.Errorf("capacity %v: got %v, want ErrBadLink", c, err)
		}
	}
}

func TestStartRejectsBadFlows(t *testing.T) {
	s, err := New(Config{Links: []Link{{CapacityBytesPerSecond: 1}, {CapacityBytesPerSecond: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Flow{
		{SizeBytes: -1, Route: []LinkID{0}},
		{SizeBytes: math.NaN(), Route: []LinkID{0}},
		{SizeBytes: math.Inf(1), Route: []LinkID{0}},
		{SizeBytes: 1},
		{SizeBytes: 1, Route: []LinkID{2}},
		{SizeBytes: 1, Route: []LinkID{-1}},
		{SizeBytes: 1, Route: []LinkID{1, 0, 1}},
	} {
		if _, err := s.Start(f); !errors.Is(err, ErrBadFlow) {
			t.Errorf("%+v: got %v, want ErrBadFlow", f, err)
		}
	}
	if s.Active() != 0 {
		t.Fatalf("%d flows active after only bad starts", s.Active())
	}
}

// TestStepStopsAtItsLimit: Step(until) before the next completion moves the clock to until
// and completes nothing, and the flows keep their progress across it.
func TestStepStopsAtItsLimit(t *testing.T) {
	s, err := New(Config{Links: []Link{{CapacityBytesPerSecond: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Start(Flow{SizeBytes: 100, Route: []LinkID{0}})
	if now, done := s.Step(4); now != 4 || done != nil {
		t.Fatalf("Step(4) = %v, %v; want 4, none", now, done)
	}
	if got := s.LinkBytes(0); got != 40 {
		t.Fatalf("after 4 s at 10 B/s the link carried %v B, want 40", got)
	}
	if now, done := s.Step(3); now != 4 || done != nil {
		t.Fatalf("Step(3) at 4 = %v, %v; want the clock to stay at 4", now, done)
	}
	if now, done := s.Next(); now != 10 || !slices.Equal(done, []FlowID{id}) {
		t.Fatalf("Next() = %v, %v; want 10, [%d]", now, done, id)
	}
	if now, done := s.Next(); now != 10 || done != nil {
		t.Fatalf("Next() with nothing active = %v, %v; want 10, none", now, done)
	}
}
