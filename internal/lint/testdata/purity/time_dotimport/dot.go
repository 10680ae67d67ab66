// Package timedotimport dot-imports time, so an unqualified Now() could be the wall clock.
package timedotimport

import . "time" // want "dot-imports time, which hides its banned functions from this check"

func stamp() Time {
	return Now()
}
