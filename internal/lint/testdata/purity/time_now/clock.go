// Package timenow reads the wall clock, by calling time.Now and by keeping it as a value.
package timenow

import "time"

type clock struct{ now func() time.Time }

func stamp() time.Time {
	return time.Now() // want "calls time.Now"
}

var wall = clock{now: time.Now} // want "uses time.Now"
