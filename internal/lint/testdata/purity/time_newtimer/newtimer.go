// Package timenewtimer arms a wall-clock timer.
package timenewtimer

import "time"

func arm(d time.Duration) *time.Timer {
	return time.NewTimer(d) // want "calls time.NewTimer"
}
