package ring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkingCache makes the drafts of a test check every cache hit against a fresh
// evaluation (verifyCache).
func checkingCache(t *testing.T) {
	verifyCache = true
	t.Cleanup(func() { verifyCache = false })
}

// otherStrategy is a strategy the draft cannot walk itself; it asks it on a Ring.
type otherStrategy struct{ Strategy }

func (o otherStrategy) Name() string { return "other(" + o.Strategy.Name() + ")" }

// checkDraft compares what the draft keeps with the same computed from scratch on the Ring
// of its nodes: the vnodes in token order, every range's replica set (Strategy.Replicas),
// every node's token space held at each level (summed exactly), the globals, the widest
// ranges (Ring.widestMidpoints and widestQuarters of old) and the extents' bookkeeping.
func checkDraft(d *draft) error {
	r, err := New(d.nodes)
	if err != nil {
		return err
	}
	if d.live != len(r.vnodes) {
		return fmt.Errorf("%d vnodes linked, ring has %d", d.live, len(r.vnodes))
	}
	ids := map[Token]int32{}
	for v, k := d.head, 0; k < d.live; v, k = d.nxt[v], k+1 {
		ids[d.tok[v]] = v
	}
	rf := d.rf
	held, total := make([]u128, len(d.nodes)*rf), make([]u128, rf)
	extCount, maxExt, open := map[int32]int32{}, int32(0), 0
	scratch := make([]int32, rf)
	for i, vn := range r.vnodes {
		x, ok := ids[vn.token]
		if !ok || d.own[x] != int32(vn.node) {
			return fmt.Errorf("token %d: not in the draft or owned by another node", vn.token)
		}
		if next := r.vnodes[(i+1)%len(r.vnodes)].token; d.tok[d.nxt[x]] != next {
			return fmt.Errorf("token %d: next is %d, ring says %d", vn.token, d.tok[d.nxt[x]], next)
		}
		var want []int32
		for _, id := range d.strategy.Replicas(r, vn.token, rf) {
			want = append(want, d.index[id])
		}
		if got := d.repsOf(x); !slices.Equal(got, want) {
			return fmt.Errorf("range ending %d: replicas %v, Replicas says %v", vn.token, got, want)
		}
		w := u128{lo: uint64(vn.token) - uint64(r.RangeStart(i))}
		if len(r.vnodes) == 1 {
			w = u128{hi: 1}
		}
		for p, n := range want {
			for l := p; l < rf; l++ {
				held[int(n)*rf+l], total[l] = held[int(n)*rf+l].add(w), total[l].add(w)
			}
		}
		if n, ext, o := d.walkFrom(x, scratch); n != len(want) || ext != d.ext[x] || o != d.open[x] {
			return fmt.Errorf("range ending %d: extent %d open %v kept, a walk now gives %d %v", vn.token, d.ext[x], d.open[x], ext, o)
		}
		extCount[d.ext[x]]++
		maxExt = max(maxExt, d.ext[x])
		if d.open[x] {
			open++
			if d.openPos[x] < 0 || d.openList[d.openPos[x]] != x {
				return fmt.Errorf("range ending %d: open but not listed", vn.token)
			}
		}
	}
	if !slices.Equal(held, d.held) || !slices.Equal(total, d.total) {
		return fmt.Errorf("held token space differs from the ring's")
	}
	if maxExt != d.maxExt || open != len(d.openList) {
		return fmt.Errorf("max extent %d, %d open; kept %d, %d", maxExt, open, d.maxExt, len(d.openList))
	}
	for e, c := range extCount {
		if d.extCount[e] != c {
			return fmt.Errorf("%d ranges of extent %d, counted %d", c, e, d.extCount[e])
		}
	}
	return checkGlobalsAndWidest(d, r)
}

// checkGlobalsAndWidest compares the draft's globals and widest ranges with ring r's
// (equally wide ranges in the order the draft keeps: the caller checks it, see peakOrder).
func checkGlobalsAndWidest(d *draft, r *Ring) error {
	if g := d.globals(-1, 0); g != d.g || d.kind == diversePlacement && g.coverable != r.coverable {
		return fmt.Errorf("globals %+v, kept %+v", g, d.g)
	}
	var got []Token
	for _, c := range d.midpoints(allocCandidates, nil) {
		got = append(got, c.tok)
	}
	if want := r.widestMidpoints(allocCandidates, d.widest.hashed); !slices.Equal(got, want) {
		return fmt.Errorf("widest midpoints %v, ring says %v", got, want)
	}
	got = got[:0]
	for _, c := range d.quarters(refineCandidates, nil) {
		got = append(got, c.tok)
	}
	if want := r.widestQuarters(refineCandidates, d.widest.hashed); !slices.Equal(got, want) {
		return fmt.Errorf("widest quarters %v, ring says %v", got, want)
	}
	return nil
}

// peakOrder checks the order widest keeps equally wide ranges in: midHash order once the
// draft has committed more than exactTies vnodes (peak, the most it has held), and lowest
// midpoint first before.
func peakOrder(d *draft, peak int) error {
	if want := peak > d.exactTies; d.widest.hashed != want {
		return fmt.Errorf("equally wide ranges hashed %v after at most %d vnodes (exactTies %d), want %v", d.widest.hashed, peak, d.exactTies, want)
	}
	return nil
}

// refScore is the score the draft keeps, computed from scratch on a Ring by the old
// allocator's functions: joinScore, or the spread of ReplicatedOwnership.
func refScore(nodes []Node, s Strategy, rf int, join bool) float64 {
	r, err := New(nodes)
	if err != nil {
		panic(err)
	}
	if join {
		return joinScore(r, s, rf)
	}
	return spread(ReplicatedOwnership(r, s, rf))
}

// randomPoint returns a token strictly inside the range ending at vnode at, or false when
// the range is one token wide.
func randomPoint(d *draft, at int32, rng *rand.Rand) (Token, bool) {
	w := uint64(d.tok[at]) - uint64(d.tok[d.prv[at]])
	if d.live == 1 {
		w = math.MaxUint64
	}
	if w < 2 {
		return 0, false
	}
	return Token(uint64(d.tok[d.prv[at]]) + 1 + rng.Uint64N(w-1)), true
}

// The draft's incremental bookkeeping equals a computation from scratch: on random
// clusters (hosts, racks and engine roles at random, some nodes sharing hosts, a few with
// no tokens yet) under every strategy (and one the draft does not know) and RF 1 to 4,
// random tokens are tried (the change in score must equal the difference of the old
// allocator's scores of the two Rings, within floating-point noise, the score computed
// whole on the draft must equal them bit for bit, and the draft must be left as it was),
// inserted and taken out again, and after each change every range's
// replica set, every node's held token space, the widest ranges and the extents are
// checked against the Ring built from the draft's nodes. Tokens tried before are tried
// again, and every answer from the cache is compared with a fresh evaluation. Drafts order
// equally wide ranges by midpoint throughout, by midHash throughout, or switch on crossing
// exactTies during the steps, and never switch back. Randomized; KURA_SEED repeats a run.
func TestDraftMatchesRingsBuiltFromScratch(t *testing.T) {
	checkingCache(t)
	rng := testRNG(t)
	strategies := []Strategy{Simple{}, HostAware{}, RackAware{}, EngineDiverse{}, otherStrategy{RackAware{}}}
	trials := 200
	if testing.Short() {
		trials = 40
	}
	counts := map[string]int{}
	for trial := range trials {
		s := strategies[trial%len(strategies)]
		rf, join := 1+rng.IntN(4), rng.IntN(2) == 0
		d := randomDraft(rng, s, rf, join)
		label := fmt.Sprintf("trial %d (%s, RF %d, join score %v)", trial, s.Name(), rf, join)
		if err := checkDraft(d); err != nil {
			t.Fatalf("%s: as built: %v", label, err)
		}
		var tried []evalEntry
		peak := d.live
		for step := range 25 {
			err := draftStep(d, rng, &tried, counts)
			if peak = max(peak, d.live); err == nil {
				err = peakOrder(d, peak)
			}
			if err != nil {
				t.Fatalf("%s, step %d, %d nodes, %d vnodes: %v", label, step, len(d.nodes), d.live, err)
			}
		}
		if d.widest.hashed {
			counts["hashed order"]++
		}
	}
	t.Logf("%v", counts)
}

// randomDraft is a draft of randomRoleCluster's ring and up to two nodes without tokens,
// whose exactTies is 0, exactTieVnodes, or a little more than its vnodes (crossed by a few
// insertions).
func randomDraft(rng *rand.Rand, s Strategy, rf int, join bool) *draft {
	r, err := New(randomRoleCluster(rng))
	if err != nil {
		panic(err)
	}
	var joiners []Node
	for j := range rng.IntN(3) {
		joiners = append(joiners, Node{ID: NodeID(fmt.Sprintf("j%d", j)), Host: fmt.Sprintf("host%d", rng.IntN(10)),
			Rack: fmt.Sprintf("rack%d", rng.IntN(5)), Role: allRoles[rng.IntN(len(allRoles))]})
	}
	exactTies := []int{0, exactTieVnodes, len(r.vnodes) + rng.IntN(4)}[rng.IntN(3)]
	d := newDraft(r, joiners, s, rf, exactTies)
	d.setWeights(join)
	return d
}

// draftStep takes out a random token the draft gave, or tries a random token (or one tried
// before) for a random node and sometimes inserts it, checking the draft after.
func draftStep(d *draft, rng *rand.Rand, tried *[]evalEntry, counts map[string]int) error {
	before := refScore(d.nodes, d.strategy, d.rf, d.join)
	if rng.IntN(3) == 0 && d.live > 1 {
		var given []int32 // nodes with tokens the draft gave them
		for i := range d.nodes {
			if len(d.vids[i]) > 0 {
				given = append(given, int32(i))
			}
		}
		if len(given) > 0 {
			i := given[rng.IntN(len(given))]
			delta := d.remove(i, rng.IntN(len(d.vids[i])))
			if want := refScore(d.nodes, d.strategy, d.rf, d.join) - before; math.Abs(delta-want) > 1e-12 {
				return fmt.Errorf("taking out a token of %s changed the score by %g, from scratch %g", d.nodes[i].ID, delta, want)
			}
			counts["removed"]++
			return checkDraft(d)
		}
	}
	i, at := int32(rng.IntN(len(d.nodes))), d.head
	for range rng.IntN(d.live) {
		at = d.nxt[at]
	}
	tok, ok := randomPoint(d, at, rng)
	if len(*tried) > 0 && rng.IntN(3) == 0 { // again, perhaps from the cache
		c := (*tried)[rng.IntN(len(*tried))]
		i, tok, at, ok = c.s, c.tok, rangeOf(d, c.tok), true
		for v, n := d.head, 0; n < d.live; v, n = d.nxt[v], n+1 {
			ok = ok && d.tok[v] != c.tok
		}
	}
	if !ok {
		return nil
	}
	*tried = append(*tried, evalEntry{s: i, tok: tok})
	if err := checkTry(d, i, tok, at, before); err != nil {
		return err
	}
	counts["tried"]++
	if d.ntok[i] == 0 {
		counts["tried a first token"]++
	}
	if len(d.vids[i]) == len(d.nodes[i].Tokens) && rng.IntN(2) == 0 { // the draft gave it all its tokens
		d.insert(i, tok, at, rng.IntN(len(d.nodes[i].Tokens)+1))
		counts["inserted"]++
		return checkDraft(d)
	}
	return nil
}

// checkTry tries token tok for node i before vnode at: the change in score must be the
// difference of the Rings' scores, the score computed whole on the draft must equal them
// bit for bit, and the draft must be left as it was.
func checkTry(d *draft, i int32, tok Token, at int32, before float64) error {
	delta := d.try(i, tok, at)
	after := refScore(withToken(d.nodes, i, tok), d.strategy, d.rf, d.join)
	if want := after - before; math.Abs(delta-want) > 1e-12 {
		return fmt.Errorf("token %d for %s would change the score by %g, from scratch %g", tok, d.nodes[i].ID, delta, want)
	}
	if whole := d.wholeScore(i, tok, at); whole != after {
		return fmt.Errorf("token %d for %s: score computed whole on the draft %v, on the Ring %v (must round the same)", tok, d.nodes[i].ID, whole, after)
	}
	if whole := d.wholeScore(-1, 0, -1); whole != before {
		return fmt.Errorf("score computed whole on the draft %v, on the Ring %v (must round the same)", whole, before)
	}
	if err := checkDraft(d); err != nil {
		return fmt.Errorf("after trying token %d for %s: %w", tok, d.nodes[i].ID, err)
	}
	return nil
}

// rangeOf returns the vnode ending the range of the draft that holds token t.
func rangeOf(d *draft, t Token) int32 {
	for v, n := d.head, 0; n < d.live; v, n = d.nxt[v], n+1 {
		if within(t, d.tok[d.prv[v]], d.tok[v]) || d.live == 1 {
			return v
		}
	}
	panic("no range holds the token")
}

// withToken returns nodes with t added to node i's tokens.
func withToken(nodes []Node, i int32, t Token) []Node {
	out := slices.Clone(nodes)
	out[i].Tokens = append(slices.Clone(out[i].Tokens), t)
	return out
}
