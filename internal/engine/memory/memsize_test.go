package memory

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

// maxBytesPerRow is the live heap a 1 KB row may cost: the target is a million such rows in
// 1.6 GB of RSS, and the process needs room for the rest of the node and for garbage.
const maxBytesPerRow = 1400

// TestBytesPerRow measures the live heap per stored 1 KB row (10 columns of 100 bytes,
// 23-byte keys). It loads 20,000 rows; KURA_MEMORY_ROWS=1000000 reproduces the full-size
// figure (and logs the process's peak RSS).
func TestBytesPerRow(t *testing.T) {
	n := 20_000
	if s := os.Getenv("KURA_MEMORY_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(42)
	t.Logf("seed %d, %d rows", seed, n)
	rng := rand.New(rand.NewPCG(seed, seed))

	d := openTest(t, t.TempDir(), testOptions(""))
	before := liveHeap()
	const batchRows = 100
	for i := 0; i < n; i += batchRows {
		batch := make([]row.Mutation, 0, batchRows)
		for j := i; j < min(i+batchRows, n); j++ {
			batch = append(batch, wideRow(rng, fmt.Sprintf("user%019d", rng.Uint64()%1e19), 1))
		}
		if err := d.Apply(batch); err != nil {
			t.Fatal(err)
		}
	}
	after := liveHeap()
	s := d.Stats()
	perRow := float64(after-before) / float64(s.RowsEstimate)
	dataPerRow := float64(d.dataBytes) / float64(s.RowsEstimate)
	t.Logf("live heap %.0f B/row (key+encoding %.0f B/row, Stats.MemoryBytes %.0f B/row); "+
		"1M rows: %.2f GB live; VmHWM %s",
		perRow, dataPerRow, float64(s.MemoryBytes)/float64(s.RowsEstimate), perRow*1e6/1e9, procStatus("VmHWM"))
	if perRow > maxBytesPerRow {
		t.Errorf("%.0f bytes per row, want at most %d", perRow, maxBytesPerRow)
	}
	if est := float64(s.MemoryBytes) / float64(s.RowsEstimate); est < 0.9*perRow || est > 1.1*perRow {
		t.Errorf("Stats.MemoryBytes says %.0f B/row, measured %.0f", est, perRow)
	}
	runtime.KeepAlive(d)
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// procStatus returns a field of /proc/self/status, or "?" where there is none.
func procStatus(field string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "?"
}
