// Package timesleep sleeps through a renamed import of time.
package timesleep

import tm "time"

func pause(d tm.Duration) {
	tm.Sleep(d) // want "calls time.Sleep"
}
