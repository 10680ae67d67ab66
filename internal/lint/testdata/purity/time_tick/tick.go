// Package timetick takes a wall-clock tick channel.
package timetick

import "time"

func ticks(d time.Duration) <-chan time.Time {
	return time.Tick(d) // want "calls time.Tick"
}
