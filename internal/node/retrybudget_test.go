package node

import "testing"

// The budget starts with retryBudgetBurst retries in hand, never holds more, and then
// allows one retry for every ten reads.
func TestRetryBudgetAllowsATenthOfReads(t *testing.T) {
	var b retryBudget
	for range 10 * retryBudgetBurst { // reads while it is full earn nothing
		b.earn()
	}
	n := 0
	for b.spend() {
		n++
	}
	if n != retryBudgetBurst {
		t.Fatalf("%d retries in hand at first, want the burst %d", n, retryBudgetBurst)
	}
	for range 9 {
		b.earn()
	}
	if b.spend() {
		t.Fatal("a retry allowed after 9 reads with the budget spent")
	}
	b.earn()
	if !b.spend() {
		t.Fatal("no retry allowed after 10 reads")
	}
	if b.spend() {
		t.Fatal("a second retry allowed after 10 reads")
	}
	// Steady state where every read is late: one in ten is retried.
	retried := 0
	for range 1000 {
		b.earn()
		if b.spend() {
			retried++
		}
	}
	if retried != 100 {
		t.Fatalf("%d of 1000 reads retried when every one was late, want 100", retried)
	}
}
