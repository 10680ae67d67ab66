package tiered

import (
	"cmp"
	"fmt"
	"slices"
)

// Policy says which rows belong on the fast tier. The decision (Decide) is pure: the
// Migrator gathers its input from the access tracker and the engine and carries out the
// moves it returns.
//
// The paper moves a row to the fast device when it was read at least K times in the last
// window and back when it was not. Rows are ranked here by a score with a longer memory
// (access.Tracker.Score: reads of past windows, aged), and a row on the fast tier stays
// until a row with a clearly higher score needs its room: when most rows are read less
// than once a window (YCSB's zipfian over a million rows at a few thousand reads a
// second), the paper's rule empties the fast tier of rows that are hot in the long run
// but were not read in the last ten seconds, and moves them back soon after, paying
// slow-device reads both times (docs/design/tiered.md).
type Policy struct {
	// BudgetBytes is how much row data the fast tier may hold.
	BudgetBytes int64
	// MinReads is K: a row must have been read at least K times in the last window to
	// move to the fast tier. At least 1.
	MinReads int
	// Displace is the hysteresis when the budget is full: a row takes the place of one on
	// the fast tier only if its score is more than Displace times higher, so that rows at
	// the boundary do not bounce. At least 1.
	Displace float64
	// MaxMoveBytes bounds the bytes one decision moves; 0 means no bound.
	MaxMoveBytes int64
}

// Candidate is a row with its reads and its size.
type Candidate struct {
	Key string
	// Reads is its reads in the last window, Score its aged reads over past windows.
	Reads int
	Score float64
	// Bytes is the row's size; for a row not yet on the fast tier, an estimate.
	Bytes int64
}

// Input is what a decision looks at.
type Input struct {
	// Fast are the rows on the fast tier, in any order.
	Fast []Candidate
	// Hot are rows read in the last window, in any order; rows already on the fast tier
	// may be among them, unless FastUnlistedBytes is set.
	Hot []Candidate
	// FastUnlistedBytes is the row data on the fast tier beyond the rows in Fast: it
	// counts against the budget, but only rows in Fast can leave. A caller may list only
	// the lowest-scored fast rows, as many as a decision can demote (Migrator.Step does),
	// if it leaves out of Hot the rows already on the fast tier, which Decide could not
	// tell from rows to promote.
	FastUnlistedBytes int64
}

// Move is one row to move, and why.
type Move struct {
	Key    string
	To     Tier
	Reason string
}

// byScore orders candidates by score, highest first; lowestFirst the other way. Ties go
// by key, so that decisions are the same on every run.
func byScore(a, b Candidate) int {
	return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Key, b.Key))
}

func lowestFirst(a, b Candidate) int {
	return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Key, b.Key))
}

// Decide returns the moves that bring the fast tier closest to holding the highest-scored
// rows within the budget: rows over the budget out, lowest score first; then rows read at
// least MinReads times in the last window in, highest score first, while they fit,
// displacing the lowest-scored rows on the fast tier when they score Displace times
// higher. Demotions come before promotions in the result, in the order they should run.
func (p Policy) Decide(in Input) []Move {
	p.MinReads, p.Displace = max(p.MinReads, 1), max(p.Displace, 1)
	var moves []Move
	var movedBytes int64
	used := in.FastUnlistedBytes
	fits := func(b int64) bool { return p.MaxMoveBytes == 0 || movedBytes+b <= p.MaxMoveBytes }

	kept := slices.Clone(in.Fast) // staying on the fast tier, lowest score first
	slices.SortFunc(kept, lowestFirst)
	onFast := make(map[string]bool, len(kept))
	for _, c := range kept {
		used += c.Bytes
		onFast[c.Key] = true
	}
	// Over the budget (rows grew on the fast tier, or the budget shrank).
	for len(kept) > 0 && used > p.BudgetBytes && fits(kept[0].Bytes) {
		c := kept[0]
		kept = kept[1:]
		moves = append(moves, Move{c.Key, Slow, fmt.Sprintf("over budget: score %.2f, lowest", c.Score)})
		movedBytes += c.Bytes
		used -= c.Bytes
	}
	hot := slices.Clone(in.Hot)
	slices.SortFunc(hot, byScore)
	for _, c := range hot {
		if onFast[c.Key] || c.Reads < p.MinReads || !fits(c.Bytes) {
			continue // a smaller row may still fit the move bound
		}
		// Make room by displacing rows scored Displace times lower, lowest first.
		n, free := 0, p.BudgetBytes-used
		for ; free < c.Bytes && n < len(kept) && kept[n].Score*p.Displace < c.Score; n++ {
			free += kept[n].Bytes
		}
		if free < c.Bytes {
			continue
		}
		cost := c.Bytes
		for _, d := range kept[:n] {
			cost += d.Bytes
		}
		if !fits(cost) {
			continue
		}
		for _, d := range kept[:n] {
			moves = append(moves, Move{d.Key, Slow, fmt.Sprintf("displaced by %s: score %.2f against %.2f", c.Key, d.Score, c.Score)})
			used -= d.Bytes
		}
		kept = kept[n:]
		moves = append(moves, Move{c.Key, Fast, fmt.Sprintf("hot: %d reads, score %.2f", c.Reads, c.Score)})
		used += c.Bytes
		movedBytes += cost
		onFast[c.Key] = true
	}
	// Demotions first: they free the room promotions take.
	slices.SortStableFunc(moves, func(a, b Move) int { return cmp.Compare(a.To, b.To) })
	return moves
}
