// Package randv1 draws from math/rand's global source.
package randv1

import "math/rand"

func pick(n int) int {
	return rand.Intn(n) // want "calls math/rand.Intn"
}

func mix(xs []int) {
	rand.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] }) // want "calls math/rand.Shuffle"
}
