package meta

import (
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/ring"
)

// MaxVoters is the most voters the metadata log has: five tolerate two failures, and
// more would slow every commit for no gain (non-voters learn entries by pulling).
const MaxVoters = 5

// ChooseVoters returns the voter set s calls for, sorted by ID: among normal members only,
// all of them below 3, 3 below 5, else 5; chosen one at a time, each time the member whose
// rack, then host, holds the fewest voters chosen so far, then the lowest ID. Every node
// computes the same set from the same state.
func ChooseVoters(s *State) []ring.NodeID {
	var cands []Member
	for _, m := range s.Members {
		if m.State == Normal {
			cands = append(cands, m)
		}
	}
	want := len(cands)
	switch {
	case want >= MaxVoters:
		want = MaxVoters
	case want >= 3:
		want = 3
	}
	racks, hosts := map[string]int{}, map[string]int{}
	var out []ring.NodeID
	for range want {
		best := -1
		for i, m := range cands {
			if m.ID == "" {
				continue // chosen
			}
			if best < 0 || better(m, cands[best], racks, hosts) {
				best = i
			}
		}
		m := cands[best]
		racks[m.Rack]++
		hosts[m.Host]++
		out = append(out, m.ID)
		cands[best].ID = ""
	}
	slices.SortFunc(out, func(a, b ring.NodeID) int { return strings.Compare(string(a), string(b)) })
	return out
}

// better reports whether a is a better next voter than b. Candidates come in ID order,
// so the lowest ID wins a tie by being met first.
func better(a, b Member, racks, hosts map[string]int) bool {
	if racks[a.Rack] != racks[b.Rack] {
		return racks[a.Rack] < racks[b.Rack]
	}
	return hosts[a.Host] < hosts[b.Host]
}

// VoterStep is one membership change of the metadata log's Raft group.
type VoterStep struct {
	Add bool // add ID as a voter; otherwise remove it
	ID  ring.NodeID
}

// VoterSteps returns the one-at-a-time steps from the voter set from to the set to: each
// removal comes after an addition while there are additions left, so the group never
// shrinks below its size before a voter is replaced and keeps its majority (with at most
// one voter more than the larger of the two sets). Additions and removals go in ID order.
// After each step the Raft driver proposes SetVoters with the set it reached.
func VoterSteps(from, to []ring.NodeID) []VoterStep {
	adds := diff(from, to)
	removes := diff(to, from)
	slices.SortFunc(adds, func(a, b ring.NodeID) int { return strings.Compare(string(a), string(b)) })
	slices.SortFunc(removes, func(a, b ring.NodeID) int { return strings.Compare(string(a), string(b)) })
	var out []VoterStep
	for len(adds) > 0 || len(removes) > 0 {
		if len(adds) > 0 {
			out = append(out, VoterStep{Add: true, ID: adds[0]})
			adds = adds[1:]
		}
		if len(removes) > 0 {
			out = append(out, VoterStep{ID: removes[0]})
			removes = removes[1:]
		}
	}
	return out
}
