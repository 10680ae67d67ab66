// Package timeuntil reads the wall clock through time.Until.
package timeuntil

import "time"

func elapsed(t time.Time) time.Duration {
	return time.Until(t) // want "calls time.Until"
}
