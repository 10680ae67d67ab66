// Package timenewticker arms a wall-clock ticker.
package timenewticker

import "time"

func arm(d time.Duration) *time.Ticker {
	return time.NewTicker(d) // want "calls time.NewTicker"
}
