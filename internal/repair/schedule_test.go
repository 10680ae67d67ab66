package repair_test

import (
	"testing"

	"github.com/kuradb/kura/internal/repair"
)

func TestNextDueRepairsTheOldestRangeAndStaggersTheNeverRepaired(t *testing.T) {
	const start, period = 1_000, 400
	for _, c := range []struct {
		name string
		last []int64
		pick int
		due  int64
	}{
		{"none", nil, -1, 0},
		{"never repaired: staggered over the period", []int64{0, 0, 0, 0}, 0, 1_100},
		{"the oldest repair first", []int64{900, 500, 700}, 1, 900},
		{"a never repaired range after an old repair", []int64{1_000, 0}, 0, 1_400},
		{"a never repaired range before a recent repair", []int64{1_350, 0, 1_390}, 1, 1_266},
		{"ties go to the lower index", []int64{800, 800}, 0, 1_200},
	} {
		pick, due := repair.NextDue(c.last, start, period)
		if pick != c.pick || due != c.due {
			t.Errorf("%s: NextDue(%v) = %d due %d, want %d due %d", c.name, c.last, pick, due, c.pick, c.due)
		}
	}
}
