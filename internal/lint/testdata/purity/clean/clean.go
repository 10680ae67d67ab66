// Package clean uses only what a pure package may: the look-alikes of every banned
// construct. The checker must report nothing here.
package clean

import (
	"math/rand/v2"
	"time"

	"example.com/fixture/clean/inner"
	"github.com/cespare/xxhash/v2"
)

// Durations, instants passed in, and their methods are arithmetic, not the wall clock.
type Config struct {
	Window time.Duration
	Epoch  time.Time
}

func expired(now, deadline time.Time) bool {
	return now.After(deadline) || now.Sub(deadline) > time.Second
}

var afterMethod = time.Time.After

func epoch() time.Time {
	return time.Unix(0, 0).Add(10 * time.Millisecond)
}

// A local named time is a time.Time, not the package.
func shadowed(now time.Time) bool {
	time := now
	return time.After(now)
}

// Randomness from an explicit seed is reproducible.
func seeded(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 2))
}

func chacha(seed [32]byte) rand.Source {
	return rand.NewChaCha8(seed)
}

func zipf(r *rand.Rand) *rand.Zipf {
	return rand.NewZipf(r, 1.1, 1, 100)
}

func pick(r *rand.Rand) int {
	return r.IntN(3)
}

// A parameter named rand is the *rand.Rand passed in, not the package.
func pickShadowed(rand *rand.Rand) int {
	return rand.IntN(3)
}

// An allowlisted third-party package and a pure package of the module.
func digest(b []byte) uint64 {
	return xxhash.Sum64(b) ^ inner.Salt
}
