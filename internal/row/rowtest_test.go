package row

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
)

// testSeed returns the seed for randomized tests: KURA_SEED when set, else a fresh one. The
// seed is logged so any failure can be replayed.
func testSeed(t testing.TB) int64 {
	seed := int64(rand.Uint64() >> 1)
	if s := os.Getenv("KURA_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with KURA_SEED=%d)", seed, seed)
	return seed
}

// randomRow builds a valid row over a small column and timestamp space so that merges hit
// every tie-break.
func randomRow(rng *rand.Rand) Row {
	var r Row
	if rng.Intn(5) == 0 {
		r.Deleted = int64(1 + rng.Intn(8))
	}
	for col := 0; col < 6; col++ {
		if rng.Intn(2) == 0 {
			continue
		}
		c := Cell{Name: []byte{'c', byte('0' + col)}, Timestamp: int64(1 + rng.Intn(10))}
		switch rng.Intn(4) {
		case 0:
			c.Tombstone = true
		case 1:
			c.ExpiresAt = int64(5 + rng.Intn(10))
			fallthrough
		default:
			c.Value = []byte{byte('a' + rng.Intn(3))}
		}
		r.Cells = append(r.Cells, c)
	}
	// A valid row never holds a cell its own tombstone shadows.
	return Merge(Row{}, r)
}

func rowString(r Row) string {
	s := fmt.Sprintf("del=%d", r.Deleted)
	for _, c := range r.Cells {
		s += fmt.Sprintf(" %s@%d", c.Name, c.Timestamp)
		switch {
		case c.Tombstone:
			s += "=X"
		default:
			s += "=" + string(c.Value)
		}
		if c.ExpiresAt != 0 {
			s += fmt.Sprintf("~%d", c.ExpiresAt)
		}
	}
	return s
}
