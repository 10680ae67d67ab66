package move

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kuradb/kura/internal/ring"
)

// simplex minimizes c.x subject to aub.x <= bub (bub >= 0), aeq.x = beq (beq >= 0) and
// x >= 0, by the two-phase tableau method with Bland's rule (the bound's LPs are
// degenerate: most right-hand sides are 0). It is the reference the max-flow bound is
// checked against; dense, for a few hundred variables.
func simplex(c []float64, aub [][]float64, bub []float64, aeq [][]float64, beq []float64) (float64, bool) {
	n, mu, me := len(c), len(aub), len(aeq)
	m, cols := mu+me, n+mu+me // variables, slacks, artificials
	t := make([][]float64, m)
	basis := make([]int, m)
	for i := range m {
		t[i] = make([]float64, cols+1)
		if i < mu {
			copy(t[i], aub[i])
			t[i][n+i], t[i][cols] = 1, bub[i]
		} else {
			copy(t[i], aeq[i-mu])
			t[i][n+i], t[i][cols] = 1, beq[i-mu]
		}
		basis[i] = n + i
	}
	const eps = 1e-9
	pivot := func(r, k int) {
		p := t[r][k]
		for j := range t[r] {
			t[r][j] /= p
		}
		for i := range m {
			if i != r && t[i][k] != 0 {
				f := t[i][k]
				for j := range t[i] {
					t[i][j] -= f * t[r][j]
				}
			}
		}
		basis[r] = k
	}
	// run minimizes cost over the columns below limit; false when unbounded.
	run := func(cost []float64, limit int) bool {
		for {
			enter := -1
			for j := range limit {
				red := cost[j]
				for i := range m {
					red -= cost[basis[i]] * t[i][j]
				}
				if red < -eps {
					enter = j
					break
				}
			}
			if enter < 0 {
				return true
			}
			leave := -1
			for i := range m {
				if t[i][enter] > eps {
					if leave < 0 {
						leave = i
						continue
					}
					a, b := t[i][cols]/t[i][enter], t[leave][cols]/t[leave][enter]
					if a < b-eps || (math.Abs(a-b) <= eps && basis[i] < basis[leave]) {
						leave = i
					}
				}
			}
			if leave < 0 {
				return false
			}
			pivot(leave, enter)
		}
	}
	phase1 := make([]float64, cols)
	for j := n + mu; j < cols; j++ {
		phase1[j] = 1
	}
	run(phase1, cols)
	for i := range m {
		if basis[i] >= n+mu && t[i][cols] > 1e-7 {
			return 0, false // infeasible
		}
	}
	for i := range m { // drive artificials at zero out of the basis
		if basis[i] >= n+mu {
			for j := range n + mu {
				if math.Abs(t[i][j]) > eps {
					pivot(i, j)
					break
				}
			}
		}
	}
	cost := make([]float64, cols)
	copy(cost, c)
	if !run(cost, n+mu) {
		return math.Inf(-1), true
	}
	var obj float64
	for i := range m {
		obj += cost[basis[i]] * t[i][cols]
	}
	return obj, true
}

// exactBound solves the bound's relaxation as an LP over every copy, source and candidate:
// minimize T with each copy's bytes split over (source, destination) pairs, each node's
// send and receive at most T times its rate, its receive at most its free bytes, each
// limited rack link at most T times its rate. Bytes in GB, rates in GB/s.
func exactBound(r *Recovery) (float64, bool) {
	type v struct{ c, s, d int }
	var vars []v
	for i := range r.Copies {
		for _, s := range r.sources[i] {
			for _, d := range r.candidates[i] {
				vars = append(vars, v{i, s, int(d)})
			}
		}
	}
	n := len(vars) + 1 // T last
	cost := make([]float64, n)
	cost[n-1] = 1
	var aub, aeq [][]float64
	var bub, beq []float64
	row := func() []float64 { return make([]float64, n) }
	for i, c := range r.Copies {
		a := row()
		for k, x := range vars {
			if x.c == i {
				a[k] = 1
			}
		}
		aeq, beq = append(aeq, a), append(beq, float64(c.Bytes)/1e9)
	}
	for node := range r.Fabric.Nodes {
		send, recv, free := row(), row(), row()
		for k, x := range vars {
			if x.s == node {
				send[k] = 1
			}
			if x.d == node {
				recv[k], free[k] = 1, 1
			}
		}
		send[n-1], recv[n-1] = -r.sendBps[node]/1e9, -r.recvBps[node]/1e9
		aub, bub = append(aub, send, recv, free), append(bub, 0, 0, float64(min(r.Fabric.Nodes[node].FreeBytes, 1<<50))/1e9)
	}
	for rk := range r.racks {
		for _, up := range []bool{true, false} {
			bps := r.downBps[rk]
			if up {
				bps = r.upBps[rk]
			}
			if bps == 0 {
				continue
			}
			a := row()
			for k, x := range vars {
				rs, rd := r.rack[x.s], r.rack[x.d]
				if rs != rd && ((up && rs == rk) || (!up && rd == rk)) {
					a[k] = 1
				}
			}
			a[n-1] = -bps / 1e9
			aub, bub = append(aub, a), append(bub, 0)
		}
	}
	return simplex(cost, aub, bub, aeq, beq)
}

// On small random recoveries the bound is never above the LP's optimum of the same
// relaxation, and equals it whenever it says it is exact; the largest gap of the inexact
// ones is logged.
func TestRecoveryBoundMatchesTheLinearProgram(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 34))
	trials := 150
	if testing.Short() {
		trials = 40
	}
	var exact, inexact int
	worst, sum := 1.0, 0.0
	for trial := 0; trial < trials; {
		c, f := randomRecovery(t, rng)
		r, err := RecoveryFromChange(c, f)
		if err != nil {
			t.Fatal(err)
		}
		vars := 0
		for i := range r.Copies {
			vars += len(r.sources[i]) * len(r.candidates[i])
		}
		if len(r.Copies) == 0 || vars > 300 {
			continue
		}
		trial++
		b, err := BoundRecovery(r)
		lp, feasible := exactBound(r)
		if errors.Is(err, ErrInvalidRecovery) != !feasible {
			t.Fatalf("trial %d: the bound says %v, the LP feasible=%v", trial, err, feasible)
		}
		if !feasible {
			continue
		}
		switch {
		case b.Seconds > lp*(1+1e-6):
			t.Fatalf("trial %d: bound %.9f s above the LP's %.9f s", trial, b.Seconds, lp)
		case b.Exact && b.Seconds < lp*(1-1e-6):
			t.Fatalf("trial %d: exact bound %.9f s below the LP's %.9f s", trial, b.Seconds, lp)
		case b.Exact:
			exact++
		default:
			inexact++
			worst, sum = min(worst, b.Seconds/lp), sum+b.Seconds/lp
		}
		if b.WholeSeconds < b.Seconds {
			t.Fatalf("trial %d: whole-range bound %.3f below the bound %.3f", trial, b.WholeSeconds, b.Seconds)
		}
	}
	t.Logf("%d exact, %d lower bounds (%.4f of the LP's optimum on average, %.4f at worst)", exact, inexact, sum/float64(max(inexact, 1)), worst)
}

// Small recoveries worked out by hand.
func TestRecoveryBoundByHand(t *testing.T) {
	node := func(id, rack string, sendMBps, recvMBps float64, free int64) Hardware {
		return Hardware{ID: ring.NodeID(id), Host: id, Rack: rack, Role: ring.WriteOptimized, FreeBytes: free,
			DiskReadBps: sendMBps * 1e6, NICSendBps: 1e12, DiskWriteBps: recvMBps * 1e6, NICRecvBps: 1e12}
	}
	const big = int64(1) << 50
	need := func(bytes int64, peers ...ring.NodeID) Need {
		return Need{Range: Range{Start: ring.Token(bytes), End: ring.Token(bytes + 1)}, Bytes: bytes, Peers: peers, Missing: 1}
	}
	for _, tc := range []struct {
		name         string
		fabric       Fabric
		rules        Rules
		needs        []Need
		bound, whole float64
		exact        bool
	}{{
		// One 100 MB copy from a (10 MB/s) to b or c: a's disk takes 10 s.
		name:   "one source",
		fabric: Fabric{Nodes: []Hardware{node("a", "r", 10, 10, big), node("b", "r", 10, 10, big), node("c", "r", 10, 10, big)}},
		rules:  Rules{RF: 2}, needs: []Need{need(100e6, "a")},
		bound: 10, whole: 10, exact: true,
	}, {
		// Two sources and two destinations at 10 MB/s: split four ways the copy takes 5 s,
		// whole 10 s.
		name: "split",
		fabric: Fabric{Nodes: []Hardware{node("a", "r", 10, 10, big), node("b", "r", 10, 10, big),
			node("c", "r", 10, 10, big), node("d", "r", 10, 10, big)}},
		rules: Rules{RF: 3}, needs: []Need{need(100e6, "a", "b")},
		bound: 5, whole: 10, exact: true,
	}, {
		// c has room for one 100 MB copy only, so d (2 MB/s) must take the other: 50 s.
		name: "full",
		fabric: Fabric{Nodes: []Hardware{node("a", "r", 100, 100, big), node("b", "r", 100, 100, big),
			node("c", "r", 100, 100, 100e6), node("d", "r", 100, 2, big)}},
		rules: Rules{RF: 3}, needs: []Need{need(100e6, "a", "b"), need(100e6, "a", "b")},
		bound: 50, whole: 1, exact: true,
	}, {
		// Rack-aware, two racks: the copy held on rack r2 alone must reach r1 through a
		// 5 MB/s uplink: 20 s.
		name: "uplink",
		fabric: Fabric{Nodes: []Hardware{node("a", "r1", 100, 100, big), node("b", "r2", 100, 100, big), node("c", "r2", 100, 100, big)},
			Uplinks: []Uplink{{Rack: "r2", UpBps: 5e6}}},
		rules: Rules{RF: 3, RackAware: true}, needs: []Need{need(100e6, "b", "c")},
		bound: 20, whole: 20, exact: true,
	}, {
		// The same with a second copy that may stay on r2: it needs no uplink, and the
		// bound (a lower bound on the relaxation here) is still the first copy's 20 s.
		name: "uplink and a copy that may stay",
		fabric: Fabric{Nodes: []Hardware{node("a", "r1", 100, 100, big), node("b", "r2", 100, 100, big),
			node("c", "r2", 100, 100, big), node("d", "r2", 100, 100, big)},
			Uplinks: []Uplink{{Rack: "r2", UpBps: 5e6}}},
		rules: Rules{RF: 3, RackAware: true}, needs: []Need{need(100e6, "b", "c"), need(50e6, "a", "b")},
		bound: 20, whole: 20, exact: false,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRecovery(tc.fabric, tc.rules, nil, tc.needs)
			if err != nil {
				t.Fatal(err)
			}
			b, err := BoundRecovery(r)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(b.Seconds-tc.bound) > 1e-6*tc.bound || math.Abs(b.WholeSeconds-max(tc.whole, tc.bound)) > 1e-6*tc.whole || b.Exact != tc.exact {
				t.Fatalf("bound %.6f s (whole %.6f s, exact %v), want %.6f s (whole %.6f s, exact %v); limits %v",
					b.Seconds, b.WholeSeconds, b.Exact, tc.bound, max(tc.whole, tc.bound), tc.exact, b.Limits)
			}
		})
	}
}
