// Package randv2 draws from math/rand/v2's global source: by a call, through explicit type
// arguments, and by keeping a function as a value.
package randv2

import (
	"math/rand/v2"
	"time"
)

func pick(n int) int {
	return rand.IntN(n) // want "calls math/rand/v2.IntN"
}

func jitter(d time.Duration) time.Duration {
	return rand.N[time.Duration](d) // want "calls math/rand/v2.N"
}

var draw = rand.Uint64 // want "uses math/rand/v2.Uint64"
