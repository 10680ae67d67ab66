package repair

// NextDue is the background scheduler's choice: of n ranges whose last complete repairs
// were at last[i] (Unix microseconds; 0 for never), the one to repair next and when it is
// due, for every range to be repaired at least once per period. A range is due a period
// after its last repair. A range never repaired is due as if repaired when the scheduler
// started (start), staggered over the period by its index, so that a node's ranges do
// not all come due at once: range i at start + period × (i+1) / n. Ties go to the lower
// index. It returns -1 when n is 0.
func NextDue(last []int64, start, period int64) (pick int, dueAt int64) {
	pick = -1
	n := int64(len(last))
	for i, l := range last {
		due := l + period
		if l == 0 {
			due = start + period*int64(i+1)/n
		}
		if pick < 0 || due < dueAt {
			pick, dueAt = i, due
		}
	}
	return pick, dueAt
}
