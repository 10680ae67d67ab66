// Package timeafter waits on the wall clock with time.After; t.After on a time.Time value
// is a comparison and must not be reported.
package timeafter

import "time"

func wait(d time.Duration) {
	<-time.After(d) // want "calls time.After"
}

func later(t, u time.Time) bool {
	return t.After(u)
}
