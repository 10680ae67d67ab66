package meta

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// seededRand returns a generator seeded from KURA_SEED, or at random, and logs the seed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// TestRandomEntriesKeepInvariants applies random sequences of valid and invalid entries
// (each through the codec) and checks after every one: the state survives its encoding; a refused entry changed nothing;
// an accepted one moved the epoch by one exactly when it changes placement; after a
// FinishChange the ring is the change's target; and the placement agrees with a
// reference computed from the rings alone (a range not yet moved is written to its old
// and its new set and read from the old one; a moved range is read and written in its
// new set; any other token is placed by the current ring, which agrees with the target).
// Randomized; KURA_SEED repeats a run.
func TestRandomEntriesKeepInvariants(t *testing.T) {
	rng := seededRand(t)
	runs, steps := 40, 80
	if testing.Short() {
		runs = 10
	}
	accepted := map[string]int{}
	for run := range runs {
		s := &State{}
		g := &gen{rng: rng, next: 1}
		for step := 0; step < steps; step++ {
			var en Entry
			if s.Epoch == 0 {
				en = g.bootstrap()
			} else {
				en = g.entry(s)
			}
			dec := roundTrip(t, en)
			before := s.Clone()
			err := s.Apply(dec)
			where := fmt.Sprintf("run %d step %d %T", run, step, en)
			if err != nil {
				if !reflect.DeepEqual(before, s) {
					t.Fatalf("%s: refused (%v) but the state changed", where, err)
				}
				continue
			}
			accepted[fmt.Sprintf("%T", en)]++
			if _, ok := en.(CancelChange); ok && s.Change != nil {
				accepted["reverting"]++
			}
			want := before.Epoch
			if changesPlacement(en) {
				want++
			}
			if s.Epoch != want {
				t.Fatalf("%s: epoch %d -> %d, want %d", where, before.Epoch, s.Epoch, want)
			}
			if _, ok := en.(FinishChange); ok && !slices.EqualFunc(s.currentTokens(), before.Change.Target, sameNodeTokens) {
				t.Fatalf("%s: the ring after finishing is %v, the target was %v", where, s.currentTokens(), before.Change.Target)
			}
			if err := checkState(s, rng); err != nil {
				t.Fatalf("%s: %v\n%s", where, err, describe(s))
			}
			if again, err := DecodeState(EncodeState(s)); err != nil || !bytes.Equal(EncodeState(again), EncodeState(s)) || describe(again) != describe(s) {
				t.Fatalf("%s: the state does not survive its encoding (%v)", where, err)
			}
			if err := checkRangeOf(s.Change); err != nil {
				t.Fatalf("%s: %v\n%s", where, err, describe(s))
			}
			if err := checkReadsMove(before, s, en, rng); err != nil {
				t.Fatalf("%s: %v\nbefore:\n%s\nafter:\n%s", where, err, describe(before), describe(s))
			}
		}
	}
	t.Logf("accepted entries: %v", accepted)
	for _, k := range []string{"meta.StartChange", "meta.RangesMoved", "meta.FinishChange", "meta.CancelChange", "meta.SetVoters", "meta.Register", "meta.TransfersDone", "reverting"} {
		if accepted[k] == 0 && !testing.Short() {
			t.Errorf("no %s was accepted: the generator does not reach it", k)
		}
	}
}

// checkRangeOf checks Change.RangeOf, which a proposer uses to tell when every transfer
// into a range is done: each transfer lies in the range it names, whose new set holds its
// destination, and a range that straddles two ranges of the change lies in neither.
func checkRangeOf(c *Change) error {
	if c == nil {
		return nil
	}
	for _, tr := range c.Transfers {
		i := c.RangeOf(tr.Range)
		if i < 0 {
			return fmt.Errorf("transfer %s -> %s %s: RangeOf found no range", tr.Source, tr.Destination, tr.Range)
		}
		if !slices.Contains(c.Ranges[i].New, tr.Destination) || !contains(c.Ranges[i].Range, tr.Range.End) {
			return fmt.Errorf("transfer %s -> %s %s: RangeOf gave %s, new set %v", tr.Source, tr.Destination, tr.Range, c.Ranges[i].Range, c.Ranges[i].New)
		}
	}
	for i := 1; i < len(c.Ranges); i++ {
		a, b := c.Ranges[i-1].Range, c.Ranges[i].Range
		if a.End != b.Start { // not adjacent: nothing straddles them
			continue
		}
		straddle := move.Range{Start: a.End - 1, End: b.Start + 1}
		if j := c.RangeOf(straddle); j >= 0 {
			return fmt.Errorf("%s straddles %s and %s but RangeOf gave %s", straddle, a, b, c.Ranges[j].Range)
		}
	}
	return nil
}

// checkReadsMove checks the safety argument of the design (membership.md, section 2): a
// token's read set changes only in a RangesMoved entry (every transfer into the range
// completed), and then only to nodes that were taking its writes. Any other entry that
// changed a read set would read from nodes that may miss acknowledged writes.
func checkReadsMove(before, after *State, e Entry, rng *rand.Rand) error {
	if before.Epoch == 0 {
		return nil
	}
	p0, err0 := NewPlacement(before)
	p1, err1 := NewPlacement(after)
	if err0 != nil || err1 != nil {
		return fmt.Errorf("placements: %v, %v", err0, err1)
	}
	var tokens []ring.Token
	for _, st := range []*State{before, after} {
		for _, rs := range rangesOf(st) {
			tokens = append(tokens, rs.Range.End, rs.Range.Start+1)
		}
	}
	for _, r := range []*ring.Ring{p0.Ring, p1.Ring} {
		for i := range r.RangeCount() {
			tokens = append(tokens, r.RangeEnd(i), r.RangeEnd(i)+1)
		}
	}
	for range 20 {
		tokens = append(tokens, ring.Token(rng.Uint64()))
	}
	_, moved := e.(RangesMoved)
	for _, tok := range tokens {
		r0, r1 := p0.ReadSet(tok), p1.ReadSet(tok)
		if sameNodes(r0, r1) {
			continue
		}
		if !moved {
			return fmt.Errorf("token %d: the read set changed from %v to %v", tok, r0, r1)
		}
		var wrote []ring.NodeID
		for _, g := range p0.WriteGroups(tok) {
			wrote = append(wrote, g...)
		}
		for _, id := range r1 {
			if !slices.Contains(wrote, id) {
				return fmt.Errorf("token %d: reads moved to %v, but %s took no writes (groups %v)", tok, r1, id, p0.WriteGroups(tok))
			}
		}
	}
	return nil
}

func rangesOf(s *State) []RangeState {
	if s.Change == nil {
		return nil
	}
	return s.Change.Ranges
}

func changesPlacement(e Entry) bool {
	switch e.(type) {
	case Register, SetVoters, TransfersDone:
		return false
	}
	return true
}

func sameNodeTokens(a, b NodeTokens) bool { return a.ID == b.ID && slices.Equal(a.Tokens, b.Tokens) }

// roundTrip checks that decoding e's encoding gives e back, and returns the decoded entry.
func roundTrip(t *testing.T, e Entry) Entry {
	t.Helper()
	b := Encode(e)
	dec, err := Decode(b)
	if err != nil {
		t.Fatalf("decoding %+v: %v", e, err)
	}
	if !bytes.Equal(Encode(dec), b) || fmt.Sprintf("%+v", dec) != fmt.Sprintf("%+v", e) {
		t.Fatalf("decoded %+v, encoded %+v", dec, e)
	}
	return dec
}

// checkState checks s's structure and its placement against the reference.
func checkState(s *State, rng *rand.Rand) error {
	for i, m := range s.Members {
		if i > 0 && s.Members[i-1].ID >= m.ID {
			return fmt.Errorf("members out of order at %s", m.ID)
		}
		inRing := len(m.Tokens) > 0
		if inRing != (m.State == Normal || m.State == Leaving) {
			return fmt.Errorf("%s is %s with %d tokens", m.ID, m.State, len(m.Tokens))
		}
	}
	for _, id := range s.Voters {
		if _, ok := s.Member(id); !ok {
			return fmt.Errorf("voter %s is no member", id)
		}
	}
	p, err := NewPlacement(s)
	if err != nil {
		return err
	}
	target, err := s.TargetRing()
	if err != nil {
		return err
	}
	var ranges []RangeState
	reverting := false
	if s.Change != nil {
		ranges, reverting = s.Change.Ranges, s.Change.Reverting
		for i := 1; i < len(ranges); i++ {
			if ranges[i-1].Range.End >= ranges[i].Range.End || overlaps(ranges[i-1].Range, ranges[i].Range) {
				return fmt.Errorf("ranges %s and %s out of order or overlapping", ranges[i-1].Range, ranges[i].Range)
			}
		}
	}
	var tokens []ring.Token
	for _, r := range []*ring.Ring{p.Ring, target} {
		for i := range r.RangeCount() {
			tokens = append(tokens, r.RangeEnd(i), r.RangeEnd(i)+1)
		}
	}
	for range 20 {
		tokens = append(tokens, ring.Token(rng.Uint64()))
	}
	for _, tok := range tokens {
		if err := checkToken(p, target, ranges, reverting, tok); err != nil {
			return err
		}
	}
	return nil
}

func checkToken(p *Placement, target *ring.Ring, ranges []RangeState, reverting bool, tok ring.Token) error {
	groups, read := p.WriteGroups(tok), p.ReadSet(tok)
	var union []ring.NodeID
	for _, g := range groups {
		union = append(union, g...)
	}
	for _, id := range read {
		if !slices.Contains(union, id) {
			return fmt.Errorf("token %d: read set %v is not in the write groups %v", tok, read, groups)
		}
	}
	cur := p.Strategy.Replicas(p.Ring, tok, p.RF)
	next := p.Strategy.Replicas(target, tok, p.RF)
	var in *RangeState
	for i := range ranges {
		if contains(ranges[i].Range, tok) {
			in = &ranges[i]
		}
	}
	switch {
	case in == nil:
		if !sameNodes(cur, next) || len(groups) != 1 || !sameNodes(groups[0], cur) {
			return fmt.Errorf("token %d outside the change: groups %v, current %v, target %v", tok, groups, cur, next)
		}
	case in.Moved:
		if len(groups) != 1 || !slices.Equal(groups[0], in.New) {
			return fmt.Errorf("token %d in moved %s: groups %v, want %v", tok, in.Range, groups, in.New)
		}
	default:
		if len(groups) != 2 || !slices.Equal(groups[0], in.Old) || !slices.Equal(groups[1], in.New) || !slices.Equal(read, in.Old) {
			return fmt.Errorf("token %d in pending %s: groups %v read %v, want %v + %v", tok, in.Range, groups, read, in.Old, in.New)
		}
		// The recorded sets are the rings' own: a forward change moves from the current
		// ring's set to the target's; a reverting one from the cancelled target's back to
		// the current ring's, which is also its target.
		if !reverting && (!sameNodes(in.Old, cur) || !sameNodes(in.New, next)) {
			return fmt.Errorf("token %d in %s: recorded %v -> %v, rings give %v -> %v", tok, in.Range, in.Old, in.New, cur, next)
		}
		if reverting && !sameNodes(in.New, cur) {
			return fmt.Errorf("token %d in reverting %s: moving back to %v, the ring gives %v", tok, in.Range, in.New, cur)
		}
	}
	return nil
}

// gen makes random entries, valid and not, for a state.
type gen struct {
	rng  *rand.Rand
	next int // the next new node's number
}

func (g *gen) newID() ring.NodeID {
	g.next++
	return ring.NodeID(fmt.Sprintf("n%02d", g.next-1))
}

func (g *gen) bootstrap() Bootstrap {
	b := Bootstrap{Strategy: []string{"simple", "host-aware", "rack-aware"}[g.rng.IntN(3)], RF: 1 + g.rng.IntN(3)}
	taken := map[ring.Token]bool{}
	for range 3 + g.rng.IntN(3) {
		b.Members = append(b.Members, g.member(taken))
	}
	return b
}

func (g *gen) member(taken map[ring.Token]bool) Member {
	id := g.newID()
	m := Member{ID: id, Host: "h" + strconv.Itoa(g.rng.IntN(5)), Rack: "r" + strconv.Itoa(g.rng.IntN(3)), Role: ring.WriteOptimized, Addr: string(id) + ":7000"}
	if taken != nil {
		m.Tokens = ring.RandomTokens(g.rng, 1+g.rng.IntN(2), taken)
		for _, t := range m.Tokens {
			taken[t] = true
		}
	}
	return m
}

func (g *gen) entry(s *State) Entry {
	switch n := g.rng.IntN(100); {
	case n < 12:
		m := g.member(nil)
		if g.rng.IntN(4) == 0 && len(s.Members) > 0 {
			old := s.Members[g.rng.IntN(len(s.Members))]
			m.ID, m.Host, m.Rack = old.ID, old.Host, old.Rack
			if g.rng.IntN(2) == 0 {
				m.Rack += "x"
			}
		}
		return Register{ID: m.ID, Host: m.Host, Rack: m.Rack, Role: m.Role, Addr: m.Addr}
	case n < 35:
		return g.start(s)
	case n < 65:
		return g.moved(s)
	case n < 80:
		return FinishChange{Change: g.changeID(s)}
	case n < 84:
		td := TransfersDone{Change: g.changeID(s)}
		if s.Change != nil {
			for i := range s.Change.Transfers {
				if g.rng.IntN(3) == 0 {
					td.Transfers = append(td.Transfers, i)
				}
			}
			if g.rng.IntN(10) == 0 {
				td.Transfers = append(td.Transfers, len(s.Change.Transfers))
			}
		}
		return td
	case n < 88:
		cc := CancelChange{Change: g.changeID(s)}
		if s.Change != nil {
			cc.Transfers = planCancel(s, nil)
		}
		return cc
	default:
		return g.voters(s)
	}
}

func (g *gen) changeID(s *State) uint64 {
	if s.Change != nil && g.rng.IntN(8) > 0 {
		return s.Change.ID
	}
	return uint64(g.rng.IntN(4))
}

// start proposes a change mostly as a proposer would (members in the right states,
// transfers from move.Plan), and sometimes not.
func (g *gen) start(s *State) StartChange {
	sc := StartChange{ID: s.NextChange + uint64(g.rng.IntN(2)), Epoch: s.Epoch, Level: coord.Level(1 + g.rng.IntN(4))}
	if g.rng.IntN(10) == 0 {
		sc.ID, sc.Epoch = uint64(g.rng.IntN(3)), s.Epoch-uint64(g.rng.IntN(2))
	}
	taken := map[ring.Token]bool{}
	for _, m := range s.Members {
		for _, t := range m.Tokens {
			taken[t] = true
		}
	}
	for _, m := range s.Members {
		r := g.rng.IntN(10)
		switch {
		case m.State == Joining && r < 4:
			tokens := ring.RandomTokens(g.rng, 1+g.rng.IntN(2), taken)
			sc.Joins = append(sc.Joins, Join{ID: m.ID, Tokens: tokens})
		case m.State == Normal && r == 0:
			sc.Leaves = append(sc.Leaves, m.ID)
		case m.State == Normal && r == 1:
			sc.Removes = append(sc.Removes, m.ID)
			sc.Down = append(sc.Down, m.ID)
		case m.State == Normal && r == 2:
			sc.Down = append(sc.Down, m.ID)
		}
	}
	for _, id := range sc.Removes {
		if g.rng.IntN(2) == 0 {
			continue
		}
		for k, j := range sc.Joins {
			if g.rng.IntN(2) == 0 {
				sc.Replaces = append(sc.Replaces, Replacement{Old: id, New: j.ID})
				sc.Removes = slices.DeleteFunc(sc.Removes, func(x ring.NodeID) bool { return x == id })
				sc.Joins = slices.Delete(sc.Joins, k, k+1)
				break
			}
		}
	}
	sc.Transfers = planStart(s, sc)
	if len(sc.Transfers) > 0 && g.rng.IntN(8) == 0 {
		i := g.rng.IntN(len(sc.Transfers))
		if g.rng.IntN(2) == 0 {
			sc.Transfers = slices.Delete(sc.Transfers, i, i+1)
		} else {
			sc.Transfers[i].Source = sc.Transfers[i].Destination
		}
	}
	return sc
}

func (g *gen) moved(s *State) RangesMoved {
	rm := RangesMoved{Change: g.changeID(s)}
	if s.Change != nil {
		for _, r := range s.Change.Ranges {
			if (!r.Moved && g.rng.IntN(2) == 0) || g.rng.IntN(30) == 0 {
				rm.Ranges = append(rm.Ranges, r.Range)
			}
		}
	}
	if g.rng.IntN(20) == 0 {
		rm.Ranges = append(rm.Ranges, move.Range{Start: ring.Token(g.rng.Uint64()), End: ring.Token(g.rng.Uint64())})
	}
	return rm
}

// voters takes one step toward the chosen set, or proposes a random set.
func (g *gen) voters(s *State) SetVoters {
	if g.rng.IntN(4) == 0 && len(s.Members) > 0 {
		var out []ring.NodeID
		for _, m := range s.Members {
			if g.rng.IntN(2) == 0 {
				out = append(out, m.ID)
			}
		}
		return SetVoters{Voters: out}
	}
	steps := VoterSteps(s.Voters, ChooseVoters(s))
	next := slices.Clone(s.Voters)
	if len(steps) > 0 {
		if st := steps[0]; st.Add {
			next = append(next, st.ID)
		} else {
			next = slices.DeleteFunc(next, func(id ring.NodeID) bool { return id == st.ID })
		}
	}
	return SetVoters{Voters: next}
}

// sameNodes reports whether a and b hold the same nodes.
func sameNodes(a, b []ring.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}
