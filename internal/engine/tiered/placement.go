package tiered

import (
	"cmp"
	"fmt"
	"slices"
)

// Policy says which rows belong on the fast tier. The decision (Decide) is pure: the
// Migrator gathers its input from the access tracker and the engine and carries out the
// moves it returns.
type Policy struct {
	// BudgetBytes is how much row data the fast tier may hold.
	BudgetBytes int64
	// MinReads is K: a row read fewer than K times in the last window is cold and leaves
	// the fast tier. At least 1.
	MinReads int
	// Displace is the hysteresis when the budget is full: a hot row takes the place of a
	// row on the fast tier only if it was read more than Displace times as often, so that
	// rows at the boundary do not bounce. At least 1.
	Displace int
	// MaxMoveBytes bounds the bytes one decision moves; 0 means no bound.
	MaxMoveBytes int64
}

// Candidate is a row with its reads in the last window and its size.
type Candidate struct {
	Key   string
	Reads int
	// Bytes is the row's size; for a row not yet on the fast tier, an estimate.
	Bytes int64
}

// Input is what a decision looks at.
type Input struct {
	// Fast are the rows on the fast tier, in any order.
	Fast []Candidate
	// Hot are rows read at least MinReads times in the last window, most-read first; rows
	// already on the fast tier may be among them.
	Hot []Candidate
}

// Move is one row to move, and why.
type Move struct {
	Key    string
	To     Tier
	Reason string
}

// Decide returns the moves that bring the fast tier closest to holding the most-read rows
// within the budget: cold rows out first, then hot rows in, hottest first, while they fit,
// displacing the least-read rows on the fast tier when one was read Displace times more.
// Demotions come before promotions in the result, in the order they should run.
func (p Policy) Decide(in Input) []Move {
	p.MinReads, p.Displace = max(p.MinReads, 1), max(p.Displace, 1)
	var moves []Move
	var movedBytes, used int64
	fits := func(b int64) bool { return p.MaxMoveBytes == 0 || movedBytes+b <= p.MaxMoveBytes }

	// Coldest first, so that the move bound cuts the least useful moves.
	fast := slices.Clone(in.Fast)
	slices.SortFunc(fast, func(a, b Candidate) int { return cmp.Or(cmp.Compare(a.Reads, b.Reads), cmp.Compare(a.Key, b.Key)) })
	onFast := make(map[string]bool, len(fast))
	var kept []Candidate // staying on the fast tier, coldest first
	for _, c := range fast {
		used += c.Bytes
		onFast[c.Key] = true
		if c.Reads < p.MinReads && fits(c.Bytes) {
			moves = append(moves, Move{c.Key, Slow, fmt.Sprintf("cold: %d reads < %d", c.Reads, p.MinReads)})
			movedBytes += c.Bytes
			used -= c.Bytes
			continue
		}
		kept = append(kept, c)
	}
	// Over the budget (rows grew on the fast tier): the coldest make room.
	for len(kept) > 0 && used > p.BudgetBytes && fits(kept[0].Bytes) {
		c := kept[0]
		kept = kept[1:]
		moves = append(moves, Move{c.Key, Slow, fmt.Sprintf("over budget: %d reads, coldest", c.Reads)})
		movedBytes += c.Bytes
		used -= c.Bytes
	}
	for _, c := range in.Hot {
		if onFast[c.Key] || c.Reads < p.MinReads {
			continue
		}
		if !fits(c.Bytes) {
			continue // a smaller row may still fit
		}
		// Make room by displacing rows read Displace times less, coldest first.
		var displaced []Candidate
		free := p.BudgetBytes - used
		for i := 0; free < c.Bytes && i < len(kept) && kept[i].Reads*p.Displace < c.Reads; i++ {
			displaced = append(displaced, kept[i])
			free += kept[i].Bytes
		}
		if free < c.Bytes {
			continue
		}
		var cost int64 = c.Bytes
		for _, d := range displaced {
			cost += d.Bytes
		}
		if !fits(cost) {
			continue
		}
		for _, d := range displaced {
			moves = append(moves, Move{d.Key, Slow, fmt.Sprintf("displaced by %s: %d reads against %d", c.Key, d.Reads, c.Reads)})
			used -= d.Bytes
		}
		kept = kept[len(displaced):]
		moves = append(moves, Move{c.Key, Fast, fmt.Sprintf("hot: %d reads", c.Reads)})
		used += c.Bytes
		movedBytes += cost
		onFast[c.Key] = true
	}
	// Demotions first: they free the room promotions take.
	slices.SortStableFunc(moves, func(a, b Move) int { return cmp.Compare(a.To, b.To) })
	return moves
}
