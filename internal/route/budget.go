package route

import "sync/atomic"

// RetryBudget bounds the reads a coordinator retries on a spare replica because the
// replicas it asked are late (--read-fallback-after, coord.Read.OnSlow). It holds up to
// RetryBudgetBurst retries, full at first; every read earns back a tenth of one and a
// retry spends one, so that over time about one read in ten may be retried. Where a few
// reads are late (a B+tree read waiting on its disk while the other replicas answer from
// memory) a retry saves their wait; where every read is late because every disk is
// saturated, retrying each would add half as many reads again to the same disks and make
// every read later still (the retry storm a fixed threshold makes), and the budget stops
// that at a tenth. The zero value is a full budget; the bounds are kept loosely under
// contention.
type RetryBudget struct {
	// spent is how far below full the budget is, in tenths of a retry: 0 is full (the
	// zero value), 10*RetryBudgetBurst empty.
	spent atomic.Int64
}

// RetryBudgetBurst is how many retries a coordinator may hold in hand.
const RetryBudgetBurst = 100

// Earn credits one read. A full budget, the usual case, is only read, so that reads on
// every core do not contend for the counter.
func (b *RetryBudget) Earn() {
	if b.spent.Load() > 0 && b.spent.Add(-1) < 0 {
		b.spent.Add(1)
	}
}

// Spend takes one retry from the budget, reporting whether there was one.
func (b *RetryBudget) Spend() bool {
	if b.spent.Add(10) <= 10*RetryBudgetBurst {
		return true
	}
	b.spent.Add(-10)
	return false
}
