//go:build race

package movesim

// raceEnabled: under the race detector the flow simulations run about ten times slower, so
// the largest platforms are left to the ordinary run of the tests.
const raceEnabled = true
