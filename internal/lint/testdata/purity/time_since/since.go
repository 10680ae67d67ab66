// Package timesince reads the wall clock through time.Since.
package timesince

import "time"

func elapsed(t time.Time) time.Duration {
	return time.Since(t) // want "calls time.Since"
}
