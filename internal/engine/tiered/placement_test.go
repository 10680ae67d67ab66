package tiered

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPolicyDecide runs testdata/placement.txt. Command:
//
//	decide budget=B [min-reads=K] [displace=D] [max-move=M] [unlisted=U]
//	fast key:reads:bytes[:score] ...
//	hot key:reads:bytes[:score] ...
//
// (score defaults to reads; unlisted, Input.FastUnlistedBytes, the bytes of fast rows not
// listed)
//
// prints the moves in order and the fast tier they leave.
func TestPolicyDecide(t *testing.T) {
	datadriven.RunTest(t, "testdata/placement.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "decide" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var p Policy
		d.ScanArgs(t, "budget", &p.BudgetBytes)
		d.MaybeScanArgs(t, "min-reads", &p.MinReads)
		var displace string
		d.MaybeScanArgs(t, "displace", &displace)
		if displace != "" {
			var err error
			if p.Displace, err = strconv.ParseFloat(displace, 64); err != nil {
				t.Fatalf("displace=%s: %v", displace, err)
			}
		}
		d.MaybeScanArgs(t, "max-move", &p.MaxMoveBytes)
		var in Input
		d.MaybeScanArgs(t, "unlisted", &in.FastUnlistedBytes)
		for _, line := range strings.Split(d.Input, "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			cands := parseCandidates(t, fields[1:])
			switch fields[0] {
			case "fast":
				in.Fast = cands
			case "hot":
				in.Hot = cands
			default:
				t.Fatalf("unknown input line %q", line)
			}
		}
		moves := p.Decide(in)
		var b strings.Builder
		size := make(map[string]int64)
		fast := make(map[string]bool)
		for _, c := range append(slices.Clone(in.Fast), in.Hot...) {
			size[c.Key] = c.Bytes
		}
		for _, c := range in.Fast {
			fast[c.Key] = true
		}
		for _, m := range moves {
			fmt.Fprintf(&b, "to %s %s (%s)\n", m.To, m.Key, m.Reason)
			fast[m.Key] = m.To == Fast
		}
		var keys []string
		var used int64
		for k, on := range fast {
			if on {
				keys = append(keys, k)
				used += size[k]
			}
		}
		slices.Sort(keys)
		if in.FastUnlistedBytes > 0 {
			keys = append(keys, "and the unlisted")
			used += in.FastUnlistedBytes
		}
		fmt.Fprintf(&b, "fast: %s (%d bytes)\n", strings.Join(keys, " "), used)
		return b.String()
	})
}

func parseCandidates(t *testing.T, fields []string) []Candidate {
	var out []Candidate
	for _, f := range fields {
		parts := strings.Split(f, ":")
		if len(parts) != 3 && len(parts) != 4 {
			t.Fatalf("candidate %q: want key:reads:bytes[:score]", f)
		}
		reads, err1 := strconv.Atoi(parts[1])
		bytes, err2 := strconv.ParseInt(parts[2], 10, 64)
		score, err3 := float64(reads), error(nil)
		if len(parts) == 4 {
			score, err3 = strconv.ParseFloat(parts[3], 64)
		}
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("candidate %q: want key:reads:bytes[:score]", f)
		}
		out = append(out, Candidate{Key: parts[0], Reads: reads, Score: score, Bytes: bytes})
	}
	return out
}
