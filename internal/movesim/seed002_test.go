package movesim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// seed002 is one of seed 002's platforms: racks of perRack DataNodes (one rack: 6, 8, 16
// or 32; two racks: 8, 16 or 32 each), disks of diskBps, 125 MB/s NICs and, with two
// racks, interRackBps between them.
type seed002 struct {
	racks, perRack int
	diskBps        float64
	interRackBps   float64
}

func (c seed002) String() string {
	if c.racks == 1 {
		return fmt.Sprintf("1x%d disk=%.0fMB/s", c.perRack, c.diskBps/1e6)
	}
	return fmt.Sprintf("%dx%d disk=%.0fMB/s inter=%gMB/s", c.racks, c.perRack, c.diskBps/1e6, c.interRackBps/1e6)
}

const seed002BlockBytes = 67e6

// recovery builds the paper's recovery: node d0 of rack 1 is lost, holding 80 x (nodes-1)
// blocks of 67 MB placed by HDFS's default policy (the first replica on a random node, the
// second on another rack, the third on the second's rack; with one rack, three random
// nodes), RF 3.
func (c seed002) recovery(t testing.TB, rng *rand.Rand) *move.Recovery {
	nodes := c.racks * c.perRack
	var f move.Fabric
	byRack := make([][]ring.NodeID, c.racks)
	for k := range nodes {
		rk := k / c.perRack
		id := ring.NodeID(fmt.Sprintf("d%d", k))
		byRack[rk] = append(byRack[rk], id)
		f.Nodes = append(f.Nodes, move.Hardware{ID: id, Host: string(id), Rack: fmt.Sprintf("r%d", rk+1), Role: ring.WriteOptimized,
			FreeBytes: 1 << 50, DiskReadBps: c.diskBps, DiskWriteBps: c.diskBps, NICSendBps: 125e6, NICRecvBps: 125e6})
	}
	if c.racks > 1 {
		for rk := range c.racks {
			f.Uplinks = append(f.Uplinks, move.Uplink{Rack: fmt.Sprintf("r%d", rk+1), UpBps: c.interRackBps, DownBps: c.interRackBps})
		}
	}
	lost := byRack[0][0]
	others := func(ids []ring.NodeID, k int, not ring.NodeID) []ring.NodeID { // k distinct random ids but not
		var out []ring.NodeID
		for len(out) < k {
			id := ids[rng.IntN(len(ids))]
			if id != not && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	var needs []move.Need
	for b := range 80 * (nodes - 1) {
		var peers []ring.NodeID
		switch {
		case c.racks == 1:
			peers = others(byRack[0], 2, lost)
		case rng.IntN(3) == 0: // the lost node is the replica alone on its rack
			peers = others(byRack[1+rng.IntN(c.racks-1)], 2, lost)
		default: // the lost node is one of the pair on its rack
			peers = append(others(byRack[1+rng.IntN(c.racks-1)], 1, lost), others(byRack[0], 1, lost)...)
		}
		needs = append(needs, move.Need{Range: move.Range{Start: ring.Token(b), End: ring.Token(b + 1)}, Bytes: seed002BlockBytes, Peers: peers, Missing: 1})
	}
	r, err := move.NewRecovery(f, move.Rules{RF: 3, RackAware: true}, map[ring.NodeID]bool{lost: true}, needs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// seed002Configs returns the paper's platforms: tables 1 and 2, both disk speeds; with
// small, only those of at most 8 nodes a rack (for -short and the race detector).
func seed002Configs(small bool) []seed002 {
	var out []seed002
	for _, disk := range []float64{65e6, 105e6} {
		for _, n := range []int{6, 8, 16, 32} {
			out = append(out, seed002{racks: 1, perRack: n, diskBps: disk})
		}
		for _, inter := range []float64{125e6, 1.25e9} {
			for _, n := range []int{8, 16, 32} {
				out = append(out, seed002{racks: 2, perRack: n, diskBps: disk, interRackBps: inter})
			}
		}
	}
	if small {
		out = slices.DeleteFunc(out, func(c seed002) bool { return c.perRack > 8 })
	}
	return out
}

func schedulers(seed uint64) []move.Scheduler {
	return []move.Scheduler{move.Kura{}, move.HDFSDefault{Rand: rand.New(rand.NewPCG(seed, 3))}, move.RingScheme{}, move.RingScheme{Priority: true}}
}

// TestSeed002 runs seed 002's platforms with each scheduler and prints the table: each
// scheduler's time as a fraction of the bound. Kura must reach 0.9 of it on every one
// (under -short and the race detector, on the platforms of up to 8 nodes a rack).
func TestSeed002(t *testing.T) {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "platform\tblocks\tbound s\tbound MB/s\texact\tkura\thdfs\tring\tring-priority\t\n")
	for _, c := range seed002Configs(testing.Short() || raceEnabled) {
		r := c.recovery(t, rand.New(rand.NewPCG(2, uint64(c.racks*100+c.perRack))))
		b, err := move.BoundRecovery(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.0f\t%v\t", c, len(r.Copies), b.Seconds, float64(r.CopyBytes())/b.Seconds/1e6, b.Exact)
		for _, s := range schedulers(1) {
			sch, err := s.Schedule(r)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(r, sch, Options{Bound: &b})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(w, "%.3f\t", res.Ratio)
			if res.Seconds < b.Seconds*(1-1e-9) {
				t.Errorf("%s %s: %.3f s, below the bound %.3f s", c, s.Name(), res.Seconds, b.Seconds)
			}
			if s.Name() == "kura" && res.Ratio < 0.9 { // issue 33's must-show
				t.Errorf("%s: kura reaches %.3f of the bound, want at least 0.9", c, res.Ratio)
			}
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	t.Logf("time as a fraction of the bound (bound / simulated):\n%s", sb.String())
}

// TestSeed002Streams separates what the assignment does from what the stream limits do:
// kura's assignment at 2 streams a node, and seed 002's schedulers' assignments without
// HDFS's limit of 2 (every copy starts at once).
func TestSeed002Streams(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a table for docs/design/rereplication.md, too slow for -short and the race detector")
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "platform\tkura\tkura 2 streams\tkura unlimited\thdfs unlimited\tring unlimited\tring-priority unlimited\t\n")
	for _, c := range seed002Configs(false) {
		if c.diskBps != 65e6 {
			continue
		}
		r := c.recovery(t, rand.New(rand.NewPCG(2, uint64(c.racks*100+c.perRack))))
		b, err := move.BoundRecovery(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "%s\t", c)
		run := func(s move.Scheduler, streams func(*move.Schedule)) {
			sch, err := s.Schedule(r)
			if err != nil {
				t.Fatal(err)
			}
			streams(sch)
			res, err := Run(r, sch, Options{Bound: &b})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(w, "%.3f\t", res.Ratio)
		}
		unlimited := func(s *move.Schedule) { s.Streams, s.RackStreams, s.Default = nil, nil, move.Streams{} }
		run(move.Kura{}, func(*move.Schedule) {})
		run(move.Kura{StreamsPerRate: 2}, func(*move.Schedule) {})
		run(move.Kura{}, unlimited)
		for _, s := range schedulers(1)[1:] {
			run(s, unlimited)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	t.Logf("65 MB/s disks, time as a fraction of the bound:\n%s", sb.String())
}
