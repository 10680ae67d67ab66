package tiered

import (
	"testing"
	"time"
)

// Writes count only after a window whose requests were at least a tenth reads: not in the
// first window, not during a bulk load (writes alone), not after a pause.
func TestWriteGateCountsWritesOnlyBesideReads(t *testing.T) {
	const w = 10 * time.Second
	sec := int64(time.Second / time.Microsecond)
	var g writeGate
	t0 := 1_700_000_000 * sec
	if g.write(1, t0, w) {
		t.Fatal("a write counted in the first window")
	}
	// A bulk load: 10 s of writes alone.
	for i := range int64(100) {
		if g.write(100, t0+i*sec/10, w) {
			t.Fatal("a write counted in the first window")
		}
	}
	if g.write(1, t0+11*sec, w) {
		t.Fatal("a write counted after a window of writes alone")
	}
	// A 50/50 mix for a window: from the next one on, writes count.
	for i := range int64(100) {
		g.read(t0+11*sec+i*sec/10, w)
		g.write(1, t0+11*sec+i*sec/10, w)
	}
	if !g.write(1, t0+22*sec, w) {
		t.Fatal("a write did not count after a window of half reads")
	}
	// One read in twenty requests is under a tenth.
	for i := range int64(20) {
		if i == 0 {
			g.read(t0+22*sec, w)
		}
		g.write(1, t0+22*sec+i*sec/4, w)
	}
	if g.write(1, t0+33*sec, w) {
		t.Fatal("a write counted after a window with reads under a tenth of the requests")
	}
	// A window of half reads, then a pause of two windows: nothing says reads go on.
	for i := range int64(10) {
		g.read(t0+33*sec+i*sec, w)
		g.write(1, t0+33*sec+i*sec, w)
	}
	if g.write(1, t0+70*sec, w) {
		t.Fatal("a write counted after a pause longer than a window")
	}
}
