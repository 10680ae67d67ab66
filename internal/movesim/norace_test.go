//go:build !race

package movesim

const raceEnabled = false
