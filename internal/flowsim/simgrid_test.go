package flowsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// simgridPython is the only interpreter that can import Debian's python3-simgrid.
const simgridPython = "/usr/bin/python3"

// requireSimGrid skips the test when SimGrid cannot be imported, unless CI is set: CI installs
// python3-simgrid (.ci/run), so there its absence is a failure, not a reason to skip.
func requireSimGrid(t *testing.T) {
	t.Helper()
	out, err := exec.Command(simgridPython, "-c", "import simgrid").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "" {
		t.Skipf("%s cannot import simgrid (apt-get install python3-simgrid): %v\n%s", simgridPython, err, out)
	}
	t.Fatalf("CI is set and %s cannot import simgrid: %v\n%s", simgridPython, err, out)
}

// simgridCompletions runs scripts/simgrid/flows.py on the case and returns each flow's
// completion time as SimGrid computes it.
func simgridCompletions(t *testing.T, c randomCase) []float64 {
	t.Helper()
	type jsonLink struct {
		Name      string  `json:"name"`
		Bandwidth float64 `json:"bandwidth"`
	}
	type jsonFlow struct {
		Size  float64  `json:"size"`
		Route []string `json:"route"`
		Start float64  `json:"start"`
	}
	var in struct {
		Links []jsonLink `json:"links"`
		Flows []jsonFlow `json:"flows"`
	}
	for _, l := range c.links {
		in.Links = append(in.Links, jsonLink{Name: l.Name, Bandwidth: l.CapacityBytesPerSecond})
	}
	for _, f := range c.flows {
		if f.after >= 0 || f.flow.SizeBytes != math.Trunc(f.flow.SizeBytes) {
			t.Fatalf("flows.py takes start times and whole bytes only: %+v", f)
		}
		jf := jsonFlow{Size: f.flow.SizeBytes, Start: f.atSec}
		for _, l := range f.flow.Route {
			jf.Route = append(jf.Route, c.links[l].Name)
		}
		in.Flows = append(in.Flows, jf)
	}
	input, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, simgridPython, filepath.Join("..", "..", "scripts", "simgrid", "flows.py"))
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flows.py: %v\n%s", err, stderr.String())
	}
	var out struct {
		Completions []float64 `json:"completions"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("flows.py printed %q: %v", stdout.String(), err)
	}
	if len(out.Completions) != len(c.flows) {
		t.Fatalf("flows.py gave %d completions for %d flows", len(out.Completions), len(c.flows))
	}
	return out.Completions
}

// flowsimCompletions runs the case in flowsim and returns each flow's completion time.
func flowsimCompletions(t *testing.T, c randomCase) []float64 {
	t.Helper()
	s, err := New(Config{Links: c.links})
	if err != nil {
		t.Fatal(err)
	}
	d := newRandomDriver(c)
	for {
		d.startDue(t, s)
		if s.Active() == 0 && d.started == len(c.flows) {
			break
		}
		s.Step(d.until())
	}
	ends := make([]float64, len(c.flows))
	for i, id := range d.ids {
		_, ends[i] = s.Times(id)
	}
	return ends
}

// copies builds a case of range copies on a small cluster: each {src, dst, MB, start}.
func copies(spec clusterSpec, cs [][4]float64) randomCase {
	cl := newCluster(spec)
	c := randomCase{links: cl.links}
	for _, x := range cs {
		c.flows = append(c.flows, randomFlow{
			flow:  Flow{SizeBytes: x[2] * 1e6, Route: cl.route(int(x[0]), int(x[1]))},
			atSec: x[3], after: -1,
		})
	}
	return c
}

type namedCase struct {
	name string
	c    randomCase
}

// simgridCases are small topologies in the shape of seed 002's platforms (one and two racks,
// 125 MB/s NICs, 65 and 105 MB/s disks, 125 MB/s and 1.25 GB/s between racks, 67 MB blocks),
// with the disks slower than the NICs and the reverse, flows starting at different times;
// and a few random topologies.
func simgridCases() []namedCase {
	cases := []namedCase{
		{"one rack, disks slower than NICs", copies(
			clusterSpec{nodes: 5, racks: 1, diskReadBps: 65e6, diskWriteBps: 65e6, nicBps: 125e6, rackUplinkBps: 1e9},
			[][4]float64{{1, 2, 67, 0}, {1, 3, 67, 0}, {2, 3, 134, 0}, {4, 2, 67, 0.5}, {3, 4, 201, 1}, {1, 4, 67, 2.5}})},
		{"one rack, NICs slower than disks", copies(
			clusterSpec{nodes: 4, racks: 1, diskReadBps: 400e6, diskWriteBps: 300e6, nicBps: 125e6, rackUplinkBps: 1e9},
			[][4]float64{{0, 1, 67, 0}, {0, 2, 67, 0}, {0, 3, 67, 0}, {1, 3, 134, 0}, {2, 3, 67, 0.3}, {3, 0, 268, 0.7}})},
		{"two racks, 125 MB/s between them", copies(
			clusterSpec{nodes: 6, racks: 2, diskReadBps: 105e6, diskWriteBps: 105e6, nicBps: 125e6, rackUplinkBps: 125e6},
			[][4]float64{{0, 1, 67, 0}, {2, 3, 67, 0}, {4, 5, 134, 0}, {0, 2, 67, 0}, {1, 0, 67, 0.2}, {3, 4, 201, 0.4}, {5, 2, 67, 1}})},
		{"two racks, 1.25 GB/s between them", copies(
			clusterSpec{nodes: 8, racks: 2, diskReadBps: 65e6, diskWriteBps: 65e6, nicBps: 125e6, rackUplinkBps: 1.25e9},
			[][4]float64{{0, 1, 67, 0}, {2, 1, 67, 0}, {4, 1, 67, 0}, {6, 3, 134, 0}, {5, 7, 67, 0.1}, {7, 6, 134, 0.6}, {3, 0, 67, 1.5}})},
	}
	rng := rand.New(rand.NewPCG(33, 5))
	for i := range 4 {
		c := newRandomCase(rng)
		for len(c.flows) < 5 {
			c = newRandomCase(rng)
		}
		for j := range c.flows {
			f := &c.flows[j]
			f.after = -1
			f.flow.SizeBytes = math.Max(1, math.Round(f.flow.SizeBytes))
		}
		cases = append(cases, namedCase{fmt.Sprintf("random %d", i), c})
	}
	return cases
}

// TestAgreesWithSimGrid runs the same flows in flowsim and in SimGrid 3.32
// (scripts/simgrid/flows.py, CM02 with latency 0 and no cross-traffic) and requires every
// flow's completion time to agree within 5%.
func TestAgreesWithSimGrid(t *testing.T) {
	requireSimGrid(t)
	worst, worstAt := 0.0, ""
	for _, nc := range simgridCases() {
		name, c := nc.name, nc.c
		ours, theirs := flowsimCompletions(t, c), simgridCompletions(t, c)
		for i := range c.flows {
			diff := math.Abs(ours[i]-theirs[i]) / theirs[i]
			if diff > worst {
				worst, worstAt = diff, fmt.Sprintf("%s, flow %d (flowsim %v s, SimGrid %v s)", name, i, ours[i], theirs[i])
			}
			if diff > 0.05 {
				t.Errorf("%s: flow %d completes at %v s in flowsim and %v s in SimGrid", name, i, ours[i], theirs[i])
			}
		}
	}
	t.Logf("largest relative difference from SimGrid: %.3g at %s", worst, worstAt)
}
